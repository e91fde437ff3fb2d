package integration

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/persistentpodstate"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
	"github.com/drover-dev/drover/internal/testutil"
)

// installCRD creates the sample custom kind's CRD, renamed to kind when kind is not KVStore, and waits until
// its kind is served.
func installCRD(ctx context.Context, kind, plural string) {
	crd, err := testutil.CustomKindCRD(repoRoot(), kind, plural)
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient.Create(ctx, crd)).To(Succeed())
	Eventually(func() error {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("demo.drover.dev/v1alpha1")
		list.SetKind(kind + "List")
		return k8sClient.List(ctx, list)
	}).Should(Succeed())
}

// setWhitelist writes the whitelist ConfigMap of the manager's namespace.
func setWhitelist(ctx context.Context, value string) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: persistentpodstate.DefaultManagerNamespace, Name: whitelist.DefaultConfigMapName}}
	err := k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	if apierrors.IsNotFound(err) {
		cm.Data = map[string]string{whitelist.DataKey: value}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		return
	}
	Expect(err).NotTo(HaveOccurred())
	cm.Data = map[string]string{whitelist.DataKey: value}
	Expect(k8sClient.Update(ctx, cm)).To(Succeed())
}

func customObject(ns, kind, name string, size int64) *unstructured.Unstructured {
	return testutil.MakeCustomWorkload(ns, kind, name, size, labelZone, "example.com/ip")
}

const kvstoreWhitelist = `{"workloads":[{"Group":"demo.drover.dev","Version":"v1alpha1","Kind":"KVStore","replicasPath":"spec.size"}]}`

// The custom-workload whitelist changes while the manager runs: these specs share it, so they run in order.
var _ = Describe("PersistentPodState on custom workload kinds", Ordered, func() {
	var ctx context.Context
	var ns, node string
	var store *unstructured.Unstructured
	BeforeAll(func() {
		ctx = context.Background()
		ns = ppsNamespace(ctx)
		node = ns + "-n"
		ppsNode(ctx, node, "zone-3")
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: persistentpodstate.DefaultManagerNamespace}}))).To(Succeed())
		installCRD(ctx, "KVStore", "kvstores")
		store = customObject(ns, "KVStore", "cache", 2)
		Expect(k8sClient.Create(ctx, store)).To(Succeed())
	})
	AfterAll(func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: persistentpodstate.DefaultManagerNamespace, Name: whitelist.DefaultConfigMapName}}
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, cm))).To(Succeed())
	})

	It("refuses a PPS for a kind that is not whitelisted", func() {
		pps := testutil.MakePPS("manual", ns, "cache").Target("demo.drover.dev/v1alpha1", "KVStore", "cache").Required(labelZone).Obj()
		err := k8sClient.Create(ctx, pps)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ConsistOf("spec.targetRef"))
		Consistently(func() bool {
			_, err := getPPS(ctx, ns, "cache")()
			return apierrors.IsNotFound(err)
		}, "1s").Should(BeTrue(), "no PPS is generated for a kind that is not whitelisted")
	})

	It("generates and fills the PPS once the kind is whitelisted, with no restart", func() {
		setWhitelist(ctx, kvstoreWhitelist)
		Eventually(getPPS(ctx, ns, "cache")).Should(HaveField("Spec.TargetRef", kruisev1alpha1.TargetReference{
			APIVersion: "demo.drover.dev/v1alpha1", Kind: "KVStore", Name: "cache"}))
		pod := testutil.MakePod("cache-0", ns).ControlledBy("demo.drover.dev/v1alpha1", "KVStore", "cache", store.GetUID()).
			Annotation("example.com/ip", "10.0.0.7").Node(node).Obj()
		runPod(ctx, pod, node)
		Eventually(podStates(ctx, ns, "cache")).Should(Equal(map[string]kruisev1alpha1.PodState{"cache-0": {
			NodeName: node, NodeTopologyLabels: map[string]string{labelZone: "zone-3"},
			Annotations: map[string]string{"example.com/ip": "10.0.0.7"}}}))
	})

	It("keeps the last good whitelist when the new one does not parse", func() {
		before := metricTotal("drover_persistentpodstate_whitelist_parse_errors_total")
		setWhitelist(ctx, `{"workloads": [`)
		Eventually(func() float64 { return metricTotal("drover_persistentpodstate_whitelist_parse_errors_total") }).
			Should(BeNumerically(">", before))
		other := customObject(ns, "KVStore", "other", 1)
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(getPPS(ctx, ns, "other")).Should(HaveField("Spec.TargetRef.Kind", "KVStore"),
			"the kind stays whitelisted: its PPS is generated and admitted")
	})

	It("picks up a whitelisted kind whose CRD is installed later", func() {
		setWhitelist(ctx, `{"workloads":[`+
			`{"Group":"demo.drover.dev","Version":"v1alpha1","Kind":"KVStore","replicasPath":"spec.size"},`+
			`{"group":"demo.drover.dev","kind":"Ring","replicasPath":"spec.size"}]}`)
		installCRD(ctx, "Ring", "rings")
		ring := customObject(ns, "Ring", "ring", 1)
		Expect(k8sClient.Create(ctx, ring)).To(Succeed())
		Eventually(getPPS(ctx, ns, "ring"), "20s").Should(HaveField("Spec.TargetRef.Kind", "Ring"))
	})

	It("leaves the records alone and says why when the kind leaves the whitelist", func() {
		setWhitelist(ctx, "")
		Eventually(func() []metav1.Condition {
			p, _ := getPPS(ctx, ns, "cache")()
			return p.Status.Conditions
		}).Should(ConsistOf(And(HaveField("Type", kruisev1alpha1.ConditionTargetUnavailable),
			HaveField("Reason", persistentpodstate.ReasonKindNotAllowed))))
		Expect(podStates(ctx, ns, "cache")()).To(HaveKey("cache-0"))
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "cache"}, &kruisev1alpha1.PersistentPodState{})).To(Succeed())
	})
})

// metricTotal sums every series of a counter in the manager's registry.
func metricTotal(metric string) float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var total float64
	for _, mf := range families {
		if mf.GetName() == metric {
			total += sum(mf.GetMetric())
		}
	}
	return total
}
