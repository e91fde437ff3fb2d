package e2e

import (
	"fmt"
	"maps"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/localcluster"
	"github.com/drover-dev/drover/internal/persistentpodstate"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
	"github.com/drover-dev/drover/internal/testutil"
)

var _ = Describe("PersistentPodState beyond StatefulSets", func() {
	It("records a TApp's instances, steers a recreated one back and keeps a killed one's entry", func() {
		ns := newNamespace("pps")
		app := newTApp(ns, "tapp", 3, "nginx:1.27")
		app.Annotations = map[string]string{
			kruisev1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
			kruisev1alpha1.AnnotationRequiredPersistentTopology:     hostname,
		}
		createTApp(app)
		before := expectRecorded(ns, "tapp", "tapp", 3, hostname)

		forceDeletePod(ns, "tapp-1")
		Eventually(func(g Gomega) {
			p := readyPods(g, ns, "tapp")["tapp-1"]
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.Annotations).To(HaveKeyWithValue(kruisev1alpha1.AnnotationInjectedPersistentPodState, "tapp"))
			g.Expect(p.Spec.NodeName).To(Equal(before["tapp-1"].NodeName))
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())

		updateTApp(ns, "tapp", func(t *tkestackv1.TApp) {
			t.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"2": tkestackv1.InstanceKilled}
		})
		Eventually(func(g Gomega) { g.Expect(readyPods(g, ns, "tapp")).NotTo(HaveKey("tapp-2")) }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
		Consistently(func(g Gomega) map[string]kruisev1alpha1.PodState { return getPPS(g, ns, "tapp").Status.PodStates }, "3s").
			Should(Equal(before), "a killed instance keeps its id and its entry")
	})

	It("serves a custom kind whitelisted while the manager runs, once its RBAC is granted", func() {
		ns := newNamespace("pps")
		root, err := localcluster.FindRepoRoot("")
		Expect(err).NotTo(HaveOccurred())
		crd, err := testutil.CustomKindCRD(root, "Shard", "shards")
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Create(suiteCtx, crd)).To(Succeed())
		DeferCleanup(func() { deleteIgnoringNotFound(crd) })
		Eventually(func() error {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("demo.drover.dev/v1alpha1")
			list.SetKind("ShardList")
			return k8sClient.List(suiteCtx, list)
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())

		shard := testutil.MakeCustomWorkload(ns, "Shard", "db", 2, hostname, "example.com/ip")
		Expect(k8sClient.Create(suiteCtx, shard)).To(Succeed())
		orphan := testutil.MakePPS("orphan", ns, "gone").Target("demo.drover.dev/v1alpha1", "Shard", "gone").Required(hostname).Obj()

		// Whitelisted, but the manager may not read Shards: a PPS for one says so.
		setE2EWhitelist(`{"workloads":[{"Group":"demo.drover.dev","Version":"v1alpha1","Kind":"Shard","replicasPath":"spec.size"}]}`)
		Eventually(func() error { return k8sClient.Create(suiteCtx, orphan.DeepCopy()) }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed(), "the validating webhook admits the whitelisted kind")
		Eventually(func(g Gomega) []metav1.Condition { return getPPS(g, ns, "orphan").Status.Conditions }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(ConsistOf(And(
			HaveField("Type", kruisev1alpha1.ConditionTargetUnavailable), HaveField("Reason", persistentpodstate.ReasonTargetNotReadable))))
		Expect(getPPS(Default, ns, "db")).To(BeNil(), "nothing is generated from a kind the manager cannot read")

		// The read permission arrives through the aggregated ClusterRole.
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-read-shards", Labels: map[string]string{kruisev1alpha1.LabelAggregateToManager: "true"}},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"demo.drover.dev"}, Resources: []string{"shards"}, Verbs: []string{"get", "list", "watch"}}},
		}
		Expect(k8sClient.Create(suiteCtx, role)).To(Succeed())
		DeferCleanup(func() { deleteIgnoringNotFound(role) })
		Eventually(func(g Gomega) *kruisev1alpha1.PersistentPodState { return getPPS(g, ns, "db") }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Not(BeNil()), "the PPS is generated once Shards can be read")
		Eventually(func(g Gomega) []metav1.Condition { return getPPS(g, ns, "orphan").Status.Conditions }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(BeEmpty(), "the problem condition clears")

		for i := range 2 {
			pod := testutil.MakePod(podName("db", i), ns).Label("app", "db").Annotation("example.com/ip", fmt.Sprintf("10.1.0.%d", i+1)).
				ControlledBy("demo.drover.dev/v1alpha1", "Shard", "db", shard.GetUID()).Obj()
			Expect(k8sClient.Create(suiteCtx, pod)).To(Succeed())
		}
		states := expectRecorded(ns, "db", "db", 2, hostname)
		Expect(states["db-0"].Annotations).To(Equal(map[string]string{"example.com/ip": "10.1.0.1"}))
		Expect(slices.Sorted(maps.Keys(states))).To(Equal([]string{"db-0", "db-1"}))

		// A recreated pod is steered back.
		forceDeletePod(ns, "db-0")
		again := testutil.MakePod("db-0", ns).Label("app", "db").ControlledBy("demo.drover.dev/v1alpha1", "Shard", "db", shard.GetUID()).Obj()
		Expect(k8sClient.Create(suiteCtx, again)).To(Succeed())
		Expect(again.Spec.NodeSelector).To(HaveKeyWithValue(hostname, states["db-0"].NodeName))
		Eventually(func(g Gomega) string {
			p := readyPods(g, ns, "db")["db-0"]
			g.Expect(p).NotTo(BeNil())
			return p.Spec.NodeName
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Equal(states["db-0"].NodeName), "the scheduler puts it back on its node")
	})
})

// setE2EWhitelist writes the whitelist ConfigMap of the manager's namespace and removes it after the spec.
func setE2EWhitelist(value string) {
	GinkgoHelper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: localcluster.ManagerNamespace, Name: whitelist.DefaultConfigMapName},
		Data: map[string]string{whitelist.DataKey: value}}
	existing := &corev1.ConfigMap{}
	if err := k8sClient.Get(suiteCtx, types.NamespacedName{Namespace: cm.Namespace, Name: cm.Name}, existing); err == nil {
		existing.Data = cm.Data
		Expect(k8sClient.Update(suiteCtx, existing)).To(Succeed())
	} else {
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(suiteCtx, cm))).To(Succeed())
	}
	DeferCleanup(func() { deleteIgnoringNotFound(cm) })
}
