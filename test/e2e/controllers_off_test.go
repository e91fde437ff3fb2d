package e2e

import (
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/testutil"
)

// A controller that is off leaves its kinds writable: the manager restarted with --controllers=tapp,nodepool and
// --manage-nodepools=false serves every installed webhook, those of the controllers that are off admitting each
// object unchanged, and says once per controller that it is off.
var _ = Describe("Controllers switched off", Ordered, func() {
	var logFrom int64

	BeforeAll(func() {
		info, err := os.Stat(cluster.ManagerLog())
		Expect(err).NotTo(HaveOccurred())
		logFrom = info.Size()
		Expect(cluster.RestartManager(suiteCtx, "--controllers=tapp,nodepool", "--manage-nodepools=false")).To(Succeed())
		DeferCleanup(func() { Expect(cluster.RestartManager(suiteCtx)).To(Succeed()) })
	})

	It("says once that each controller is off, and why", func() {
		Eventually(func(g Gomega) {
			data, err := os.ReadFile(cluster.ManagerLog())
			g.Expect(err).NotTo(HaveOccurred())
			log := string(data[logFrom:])
			for _, name := range []string{"nodepool", "yurtappdaemon", "uniteddaemonset", "persistentpodstate", "stagedbindingpolicy"} {
				g.Expect(strings.Count(log, `"controller":"`+name+`","reason"`)).To(Equal(1), name)
			}
			g.Expect(log).To(ContainSubstring(`"reason":"NodePools are managed elsewhere (--manage-nodepools=false)"`))
			g.Expect(strings.Count(log, `"controller":"tapp","reason"`)).To(BeZero())
		}, timeout, interval).Should(Succeed())
	})

	It("creates, updates and deletes NodePools unchanged by drover", func() {
		pool := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "e2e-off-pool"}}
		Expect(k8sClient.Create(suiteCtx, pool)).To(Succeed())
		Expect(pool.Labels).NotTo(HaveKey(openyurtv1beta1.LabelNodePoolType), "drover's defaulting webhook is off")
		pool.Spec.Labels = map[string]string{"example.com/x": "1"}
		Expect(k8sClient.Update(suiteCtx, pool)).To(Succeed())
		Expect(pool.Labels).NotTo(HaveKey(openyurtv1beta1.LabelNodePoolType))
		Expect(k8sClient.Delete(suiteCtx, pool)).To(Succeed())
	})

	It("creates, updates and deletes YurtAppDaemons, PersistentPodStates and StagedBindingPolicies", func() {
		yad := testutil.MakeYurtAppDaemon("e2e-off", "default").Deployment(testutil.DeploymentSpec(map[string]string{"app": "off"}, "nginx:1")).
			NodePoolSelectorLabels(map[string]string{"tier": "none"}).Obj()
		yad.Spec.RevisionHistoryLimit = nil
		pps := testutil.MakePPS("e2e-off", "default", "missing").Obj()
		pps.Generation = 0
		sbp := testutil.MakeSBP("e2e-off").Downsync(testutil.ObjectsLabelled("app", "off")).
			Stage("dev", metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}).Obj()
		sbp.Generation = 0
		for _, obj := range []client.Object{yad, pps, sbp} {
			Expect(k8sClient.Create(suiteCtx, obj)).To(Succeed(), "%T", obj)
		}
		Expect(yad.Spec.RevisionHistoryLimit).To(BeNil(), "drover's defaulting webhook is off")
		for _, obj := range []client.Object{yad, pps, sbp} {
			obj.SetAnnotations(map[string]string{"example.com/edited": "true"})
			Expect(k8sClient.Update(suiteCtx, obj)).To(Succeed(), "%T", obj)
			Expect(k8sClient.Delete(suiteCtx, obj)).To(Succeed(), "%T", obj)
		}
	})

	It("still runs the controller that is on, with its webhooks", func() {
		app := testutil.MakeTApp("e2e-off-tapp", "default").Replicas(1).Template(testutil.WebTemplate("nginx:1")).Obj()
		Expect(k8sClient.Create(suiteCtx, app)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, app))).To(Succeed()) })
		Expect(app.Spec.DefaultTemplateName).NotTo(BeEmpty(), "TApp's defaulting webhook runs")
		Eventually(func() ([]corev1.Pod, error) {
			var pods corev1.PodList
			err := k8sClient.List(suiteCtx, &pods, client.InNamespace("default"), client.MatchingLabels(app.Spec.Selector.MatchLabels))
			return pods.Items, err
		}, timeout, interval).Should(HaveLen(1))
	})
})
