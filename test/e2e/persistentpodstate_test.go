package e2e

import (
	"maps"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/localcluster"
	"github.com/drover-dev/drover/internal/testutil"
)

var (
	hostname = localcluster.LabelHostname
	zone     = localcluster.LabelZone
)

// PersistentPodState on the local cluster: the real StatefulSet controller makes and replaces the pods, the
// real scheduler places them (following what drover's pod webhook injected), kwok runs them, and the
// garbage collector removes generated PPS with their workloads.
var _ = Describe("PersistentPodState", func() {
	It("records every pod of a generated PPS and keeps the records through a rolling update", func() {
		ns := newNamespace("pps")
		ppsStatefulSet(ns, "web", 3, nil)
		before := expectRecorded(ns, "web", "web", 3, hostname, zone)

		updateStatefulSet(ns, "web", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Annotations = map[string]string{"rollout": "2"}
		})
		rolledOut(ns, "web", 3)
		Eventually(func(g Gomega) {
			pods := readyPods(g, ns, "web")
			g.Expect(pods).To(HaveLen(3))
			for name, p := range pods {
				g.Expect(p.Annotations).To(HaveKeyWithValue("rollout", "2"), name)
				g.Expect(p.Annotations).To(HaveKeyWithValue(kruisev1alpha1.AnnotationInjectedPersistentPodState, "web"), name)
				g.Expect(p.Spec.NodeName).To(Equal(before[name].NodeName), "%s is back on its node", name)
			}
			g.Expect(getPPS(g, ns, "web").Status.PodStates).To(Equal(before))
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
	})

	It("follows scale-down and scale-up under WhenScaled", func() {
		ns := newNamespace("pps")
		ppsStatefulSet(ns, "scale", 3, nil)
		before := expectRecorded(ns, "scale", "scale", 3, hostname, zone)

		updateStatefulSet(ns, "scale", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
		Eventually(func(g Gomega) []string {
			return slices.Sorted(maps.Keys(getPPS(g, ns, "scale").Status.PodStates))
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Equal([]string{"scale-0"}))

		updateStatefulSet(ns, "scale", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](3) })
		after := expectRecorded(ns, "scale", "scale", 3, hostname, zone)
		Expect(after["scale-0"]).To(Equal(before["scale-0"]))
	})

	It("deletes and regenerates the PPS with the annotations, and keeps a retention policy set by hand", func() {
		ns := newNamespace("pps")
		ppsStatefulSet(ns, "gen", 2, nil)
		before := expectRecorded(ns, "gen", "gen", 2, hostname, zone)

		updateStatefulSet(ns, "gen", func(s *appsv1.StatefulSet) {
			s.Annotations[kruisev1alpha1.AnnotationAutoGeneratePersistentPodState] = "false"
		})
		Eventually(func(g Gomega) *kruisev1alpha1.PersistentPodState { return getPPS(g, ns, "gen") }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(BeNil())
		updateStatefulSet(ns, "gen", func(s *appsv1.StatefulSet) {
			s.Annotations[kruisev1alpha1.AnnotationAutoGeneratePersistentPodState] = "true"
		})
		Expect(expectRecorded(ns, "gen", "gen", 2, hostname, zone)).To(Equal(before), "the same placements")

		updateStatefulSet(ns, "gen", func(s *appsv1.StatefulSet) {
			delete(s.Annotations, kruisev1alpha1.AnnotationPreferredPersistentTopology)
		})
		expectRecorded(ns, "gen", "gen", 2, hostname)

		Eventually(func(g Gomega) {
			p := getPPS(g, ns, "gen")
			p.Spec.PersistentPodStateRetentionPolicy = kruisev1alpha1.RetainWhenDeleted
			g.Expect(k8sClient.Update(suiteCtx, p)).To(Succeed())
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
		updateStatefulSet(ns, "gen", func(s *appsv1.StatefulSet) {
			s.Annotations[kruisev1alpha1.AnnotationPreferredPersistentTopology] = zone
		})
		Eventually(func(g Gomega) {
			p := getPPS(g, ns, "gen")
			g.Expect(p.Spec.PreferredPersistentTopology).To(HaveLen(1))
			g.Expect(p.Spec.PersistentPodStateRetentionPolicy).To(Equal(kruisev1alpha1.RetainWhenDeleted))
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed(), "regeneration keeps the retention policy")
		expectRecorded(ns, "gen", "gen", 2, hostname, zone)

		updateStatefulSet(ns, "gen", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
		Eventually(func(g Gomega) { g.Expect(readyPods(g, ns, "gen")).To(HaveLen(1)) }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
		Consistently(func(g Gomega) []string {
			return slices.Sorted(maps.Keys(getPPS(g, ns, "gen").Status.PodStates))
		}, "3s").Should(Equal([]string{"gen-0", "gen-1"}), "WhenDeleted keeps the scaled-down entry")
	})

	It("refuses a second PPS for one target and garbage-collects the generated one with its StatefulSet", func() {
		ns := newNamespace("pps")
		sts := ppsStatefulSet(ns, "gc", 1, nil)
		expectRecorded(ns, "gc", "gc", 1, hostname, zone)
		err := k8sClient.Create(suiteCtx, testutil.MakePPS("gc-second", ns, "gc").Required(hostname).Obj())
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)

		Expect(k8sClient.Delete(suiteCtx, sts, client.PropagationPolicy("Background"))).To(Succeed())
		Eventually(func(g Gomega) *kruisev1alpha1.PersistentPodState { return getPPS(g, ns, "gc") }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(BeNil())
	})

	It("keeps the records of a StatefulSet numbered from ordinals.start through a rolling update", func() {
		ns := newNamespace("pps")
		sts := testutil.MakeStatefulSet("start", ns, 2).Start(5).
			Annotation(kruisev1alpha1.AnnotationAutoGeneratePersistentPodState, "true").
			Annotation(kruisev1alpha1.AnnotationRequiredPersistentTopology, hostname).Obj()
		sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		Expect(k8sClient.Create(suiteCtx, sts)).To(Succeed())
		before := expectRecorded(ns, "start", "start", 2, hostname)
		Expect(before).To(HaveKey("start-5"))
		Expect(before).To(HaveKey("start-6"))
		updateStatefulSet(ns, "start", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Annotations = map[string]string{"rollout": "2"}
		})
		rolledOut(ns, "start", 2)
		Expect(expectRecorded(ns, "start", "start", 2, hostname)).To(Equal(before))
	})

	It("persists annotations: first value across recreation, a live change followed, restored on request", func() {
		ns := newNamespace("pps")
		const key = "example.com/ip"
		ppsStatefulSet(ns, "ann", 2, map[string]string{kruisev1alpha1.AnnotationPersistentPodAnnotations: key})
		updateStatefulSet(ns, "ann", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Annotations = map[string]string{key: "t1"}
		})
		rolledOut(ns, "ann", 2)
		recorded := func(g Gomega, pod string) string {
			return getPPS(g, ns, "ann").Status.PodStates[pod].Annotations[key]
		}
		Eventually(func(g Gomega) {
			g.Expect(recorded(g, "ann-0")).To(Equal("t1"))
			g.Expect(recorded(g, "ann-1")).To(Equal("t1"))
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())

		mustKubectl("annotate", "-n", ns, "pod", "ann-0", "--overwrite", key+"=live1")
		Eventually(func(g Gomega) string { return recorded(g, "ann-0") }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Equal("live1"), "a live change is followed")

		forceDeletePod(ns, "ann-0")
		Eventually(func(g Gomega) {
			pods := readyPods(g, ns, "ann")
			g.Expect(pods).To(HaveKey("ann-0"))
			g.Expect(pods["ann-0"].Annotations).To(HaveKeyWithValue(key, "t1"))
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
		Consistently(func(g Gomega) string { return recorded(g, "ann-0") }, "3s").Should(Equal("live1"),
			"the first value wins across recreation")
		Eventually(func(g Gomega) []string { return eventReasons(ppsEvents(g, ns, "ann")) }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(ContainElement("PersistedAnnotationMismatch"))

		updateStatefulSet(ns, "ann", func(s *appsv1.StatefulSet) {
			s.Annotations[kruisev1alpha1.AnnotationRestorePersistentPodAnnotations] = "true"
		})
		Eventually(func(g Gomega) map[string]string { return getPPS(g, ns, "ann").Annotations }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(HaveKeyWithValue(kruisev1alpha1.AnnotationRestorePersistentPodAnnotations, "true"))
		updateStatefulSet(ns, "ann", func(s *appsv1.StatefulSet) { s.Spec.Template.Annotations = nil })
		rolledOut(ns, "ann", 2)
		Eventually(func(g Gomega) {
			pods := readyPods(g, ns, "ann")
			g.Expect(pods).To(HaveLen(2))
			g.Expect(pods["ann-0"].Annotations).To(HaveKeyWithValue(key, "live1"))
			g.Expect(pods["ann-1"].Annotations).To(HaveKeyWithValue(key, "t1"))
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed(), "the recreated pods start with the recorded values")
	})

	It("lets a pod whose recorded node was deleted schedule elsewhere, but waits for a cordoned one", func() {
		ns := newNamespace("pps")
		label := map[string]string{"pps-e2e": ns}
		newKwokNode(ns+"-n1", label)
		newKwokNode(ns+"-n2", label)
		sts := testutil.MakeStatefulSet("pin", ns, 1).
			Annotation(kruisev1alpha1.AnnotationAutoGeneratePersistentPodState, "true").
			Annotation(kruisev1alpha1.AnnotationRequiredPersistentTopology, hostname).Obj()
		sts.Spec.Template.Spec.NodeSelector = label
		Expect(k8sClient.Create(suiteCtx, sts)).To(Succeed())
		first := expectRecorded(ns, "pin", "pin", 1, hostname)["pin-0"].NodeName

		// Cordoned: the recreated pod keeps its node and waits for it.
		mustKubectl("cordon", first)
		forceDeletePod(ns, "pin-0")
		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(k8sClient.Get(suiteCtx, types.NamespacedName{Namespace: ns, Name: "pin-0"}, p)).To(Succeed())
			g.Expect(p.Spec.NodeSelector).To(HaveKeyWithValue(hostname, first))
			g.Expect(p.Spec.NodeName).To(BeEmpty())
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(Succeed())
		mustKubectl("uncordon", first)
		Expect(expectRecorded(ns, "pin", "pin", 1, hostname)["pin-0"].NodeName).To(Equal(first))

		// Deleted: the hostname key is dropped and the pod runs on the other node.
		deleteIgnoringNotFound(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: first}})
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKey{Name: first}, &corev1.Node{}))
		}).WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(BeTrue())
		forceDeletePod(ns, "pin-0")
		moved := expectRecorded(ns, "pin", "pin", 1, hostname)["pin-0"].NodeName
		Expect(moved).NotTo(Equal(first))
		Eventually(func(g Gomega) []string { return eventReasons(ppsEvents(g, ns, "pin")) }).
			WithTimeout(ppsTimeout).WithPolling(ppsPoll).Should(ContainElement("RecordedNodeGone"))
	})
})
