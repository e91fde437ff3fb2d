package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
	"github.com/drover-dev/drover/internal/yurtappdaemon"
)

// The largest owner the CRD bounds allow: spec.workloadTweaks ≤ 32 and tweaks.patches ≤ 500. 32 tweaks of 500
// testutil.PoolPatches (94 bytes of JSON each on average) make 1,509,317 bytes, just under what etcd stores
// in one object: its default --max-request-bytes is 1.5 MiB (1,572,864 bytes), and against this suite's
// etcd an owner of 1,566,917 bytes was stored and one of 1,573,669 bytes refused ("request is too large").
const (
	largestTweaks  = 32
	largestPatches = 500
	// etcdLimit is the most bytes etcd accepts in one request.
	etcdLimit = 1536 * 1024
	// admissionBound is how long drover's two webhooks together may take to answer its create.
	admissionBound = 3 * time.Second
	// answerBound is how long the whole create may take: the API server's own handling of 1.5 MB varies
	// with the machine's load, and only drover's part is held to admissionBound; under the webhooks'
	// 10 s timeout either way.
	answerBound = 9 * time.Second
)

// webhookSeconds returns the time drover's webhook server spent so far on the requests to path.
func webhookSeconds(path string) float64 {
	return metricSum("controller_runtime_webhook_latency_seconds", "webhook", path,
		func(m *dto.Metric) float64 { return m.GetHistogram().GetSampleSum() })
}

var _ = Describe("Admission of the largest YurtAppDaemon", func() {
	const (
		mutatePath   = "/mutate-apps-openyurt-io-v1alpha1-yurtappdaemon"
		validatePath = "/validate-apps-openyurt-io-v1alpha1-yurtappdaemon"
	)
	var ctx context.Context
	BeforeEach(func() { ctx = context.Background() })

	// largest returns a valid YurtAppDaemon at that size, selecting no pool (the controller has nothing to
	// render). Every tweak sets an image and holds largestPatches patches, so each is dry-run.
	largest := func(ns, name string) *openyurtv1alpha1.YurtAppDaemon {
		tweaks := make([]openyurtv1alpha1.WorkloadTweak, largestTweaks)
		for i := range tweaks {
			tweaks[i] = openyurtv1alpha1.WorkloadTweak{
				Pools: []string{fmt.Sprintf("pool-%d", i)},
				Tweaks: openyurtv1alpha1.Tweaks{
					ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "main", TargetImage: fmt.Sprintf("registry.example/app:%d", i)}},
					Patches:         testutil.PoolPatches(largestPatches),
				},
			}
		}
		return testutil.MakeYurtAppDaemon(name, ns).
			Deployment(testutil.DeploymentSpec(map[string]string{"app": "largest"}, "registry.example/app:1")).
			NodePoolSelectorLabels(map[string]string{"selects": "nothing"}).
			Tweaks(tweaks...).Obj()
	}
	// timedCreate creates obj, returns the API server's answer and how long it took, and logs the time
	// drover's webhooks spent on it.
	timedCreate := func(what string, obj *openyurtv1alpha1.YurtAppDaemon) (took, webhooks time.Duration, err error) {
		mutate, validate := webhookSeconds(mutatePath), webhookSeconds(validatePath)
		start := time.Now()
		err = k8sClient.Create(ctx, obj)
		took = time.Since(start)
		mutate, validate = webhookSeconds(mutatePath)-mutate, webhookSeconds(validatePath)-validate
		GinkgoWriter.Printf("%s: answered in %v (defaulting webhook %.2fs, validating webhook %.2fs with the dry runs)\n",
			what, took.Round(time.Millisecond), mutate, validate)
		return took, time.Duration((mutate + validate) * float64(time.Second)), err
	}

	It("is admitted within the bound, after a dry run of every tweak", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "yad-largest-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())

		obj := largest(ns.Name, "largest")
		body, err := json.Marshal(obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(body)).To(BeNumerically("<", etcdLimit))
		start := time.Now()
		Expect(yurtappdaemon.ValidateOwner(obj, nil)).To(BeEmpty())
		GinkgoWriter.Printf("largest YurtAppDaemon: %d tweaks × %d patches, %d bytes of JSON; drover's structural rules take %v\n",
			largestTweaks, largestPatches, len(body), time.Since(start).Round(time.Millisecond))

		took, webhooks, err := timedCreate("create", obj)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed()) })
		Expect(webhooks).To(BeNumerically("<", admissionBound), "drover's webhooks")
		Expect(took).To(BeNumerically("<", answerBound), "the whole create")

		// The dry run of the last tweak ran: a child the API server refuses only with that tweak is reported.
		bad := largest(ns.Name, "largest-bad")
		last := &bad.Spec.WorkloadTweaks[largestTweaks-1].Tweaks.Patches
		(*last)[len(*last)-1] = openyurtv1alpha1.Patch{
			Operation: openyurtv1alpha1.PatchAdd, Path: "/spec/template/spec/containers/0/env/-",
			Value: &runtime.RawExtension{Raw: []byte(`{"name":"","value":"x"}`)},
		}
		// Not timed against the bound: the controller's status write of the first object competes with it.
		_, _, err = timedCreate("create refused by the last tweak's dry run", bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("with spec.workloadTweaks[%d] applied", largestTweaks-1)))
	})
})
