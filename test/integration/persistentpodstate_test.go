package integration

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
)

// The PersistentPodState CRD drover ships, on a real API server: an OpenKruise user's manifest applies
// unchanged, its status is written through the status subresource and read back as written, and the
// schema's bounds hold without any webhook.
var _ = Describe("PersistentPodState CRD", func() {
	var ctx context.Context
	BeforeEach(func() { ctx = context.Background() })

	load := func() *kruisev1alpha1.PersistentPodState {
		raw, err := os.ReadFile(filepath.Join(repoRoot(), "api", "kruise", "apps", "v1alpha1", "testdata", "openkruise-persistentpodstate.yaml"))
		Expect(err).NotTo(HaveOccurred())
		pps := &kruisev1alpha1.PersistentPodState{}
		Expect(yaml.UnmarshalStrict(raw, pps)).To(Succeed())
		return pps
	}

	// The manifest targets an Advanced StatefulSet, whose CRD this API server does not serve: the controller
	// leaves the records as written and only adds the TargetUnavailable condition.
	It("takes an OpenKruise manifest unchanged and keeps the records written through the subresource", func() {
		manifest := load()
		pps := manifest.DeepCopy()
		pps.Name, pps.Status = "openkruise-manifest", kruisev1alpha1.PersistentPodStateStatus{}
		Expect(k8sClient.Create(ctx, pps)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, pps))).To(Succeed()) })
		Expect(pps.Spec).To(Equal(manifest.Spec))

		Eventually(func() error {
			got := &kruisev1alpha1.PersistentPodState{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pps), got); err != nil {
				return err
			}
			got.Status.PodStates = manifest.Status.PodStates
			return k8sClient.Status().Update(ctx, got)
		}).Should(Succeed())
		Consistently(func() map[string]kruisev1alpha1.PodState {
			got := &kruisev1alpha1.PersistentPodState{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pps), got)).To(Succeed())
			return got.Status.PodStates
		}, "3s").Should(Equal(manifest.Status.PodStates))
		got := &kruisev1alpha1.PersistentPodState{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pps), got)).To(Succeed())
		Expect(got.Status.ObservedGeneration).To(Equal(manifest.Status.ObservedGeneration))
		Expect(got.Status.Conditions).To(ConsistOf(And(HaveField("Type", kruisev1alpha1.ConditionTargetUnavailable),
			HaveField("Reason", "KindNotServed"))))
	})

	It("refuses a weight outside 1-100 and an unknown retention policy by its schema", func() {
		pps := load()
		pps.Name, pps.Status = "out-of-bounds", kruisev1alpha1.PersistentPodStateStatus{}
		pps.Spec.PreferredPersistentTopology[0].Weight = 101
		pps.Spec.PersistentPodStateRetentionPolicy = "Forever"
		err := k8sClient.Create(ctx, pps)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ContainElements(
			"spec.preferredPersistentTopology[0].weight", "spec.persistentPodStateRetentionPolicy"))
	})
})
