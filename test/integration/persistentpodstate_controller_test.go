package integration

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/persistentpodstate"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsmetrics"
	"github.com/drover-dev/drover/internal/testutil"
)

const (
	labelZone     = "topology.kubernetes.io/zone"
	labelHostname = "kubernetes.io/hostname"
)

// ppsNode creates a Node with hostname and zone labels, deleted after the spec.
func ppsNode(ctx context.Context, name, zone string) {
	node := testutil.MakeNode(name).Label(labelHostname, name).Label(labelZone, zone).Obj()
	Expect(k8sClient.Create(ctx, node)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, node))).To(Succeed()) })
}

// runPod creates pod (through the webhooks), binds it to node when it has none, and reports it Ready, as
// the scheduler and a kubelet would. It returns the pod as admitted.
func runPod(ctx context.Context, pod *corev1.Pod, node string) *corev1.Pod {
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	admitted := pod.DeepCopy()
	if pod.Spec.NodeName == "" {
		bindPod(ctx, pod.Namespace, pod.Name, node)
	}
	Eventually(func() error {
		got := &corev1.Pod{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			return err
		}
		got.Status.Phase = corev1.PodRunning
		setPodCondition(got, corev1.PodReady, corev1.ConditionTrue)
		return k8sClient.Status().Update(ctx, got)
	}).Should(Succeed())
	return admitted
}

// forceDelete deletes a pod at once, as the kubelet confirms a deletion (no kubelet runs here).
func forceDelete(ctx context.Context, ns, name string) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, pod, client.GracePeriodSeconds(0)))).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	}).Should(BeTrue())
}

func getPPS(ctx context.Context, ns, name string) func() (*kruisev1alpha1.PersistentPodState, error) {
	return func() (*kruisev1alpha1.PersistentPodState, error) {
		pps := &kruisev1alpha1.PersistentPodState{}
		return pps, k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pps)
	}
}

func podStates(ctx context.Context, ns, name string) func() map[string]kruisev1alpha1.PodState {
	return func() map[string]kruisev1alpha1.PodState {
		pps, err := getPPS(ctx, ns, name)()
		if err != nil {
			return nil
		}
		return pps.Status.PodStates
	}
}

func ppsNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pps-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

var _ = Describe("PersistentPodState on a StatefulSet", func() {
	var ctx context.Context
	var ns, nodeA, nodeB string
	BeforeEach(func() {
		ctx = context.Background()
		ns = ppsNamespace(ctx)
		nodeA, nodeB = ns+"-a", ns+"-b"
		ppsNode(ctx, nodeA, "zone-1")
		ppsNode(ctx, nodeB, "zone-2")
	})

	newStatefulSet := func(name string, replicas int32) *appsv1.StatefulSet {
		sts := testutil.MakeStatefulSet(name, ns, replicas).
			Annotation(kruisev1alpha1.AnnotationAutoGeneratePersistentPodState, "true").
			Annotation(kruisev1alpha1.AnnotationRequiredPersistentTopology, labelHostname).
			Annotation(kruisev1alpha1.AnnotationPreferredPersistentTopology, labelZone).Obj()
		Expect(k8sClient.Create(ctx, sts)).To(Succeed())
		return sts
	}
	stsPod := func(sts *appsv1.StatefulSet, ordinal int) *corev1.Pod {
		return testutil.MakePod(fmt.Sprintf("%s-%d", sts.Name, ordinal), ns).Label("app", sts.Name).
			ControlledBy("apps/v1", "StatefulSet", sts.Name, sts.UID).Obj()
	}

	It("generates the PPS, records a Ready pod, keeps the record across recreation and steers the new pod back", func() {
		sts := newStatefulSet("web", 2)
		Eventually(getPPS(ctx, ns, "web")).Should(HaveField("Spec.RequiredPersistentTopology.NodeTopologyKeys", []string{labelHostname}))
		pps, err := getPPS(ctx, ns, "web")()
		Expect(err).NotTo(HaveOccurred())
		Expect(pps.OwnerReferences).To(ConsistOf(HaveField("UID", sts.UID)))
		Expect(pps.Spec.PreferredPersistentTopology).To(ConsistOf(kruisev1alpha1.PreferredTopologyTerm{
			Weight: 100, Preference: kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{labelZone}}}))

		first := stsPod(sts, 0)
		first.Spec.NodeName = nodeA
		runPod(ctx, first, nodeA)
		want := kruisev1alpha1.PodState{NodeName: nodeA, NodeTopologyLabels: map[string]string{labelHostname: nodeA, labelZone: "zone-1"}}
		Eventually(podStates(ctx, ns, "web")).Should(Equal(map[string]kruisev1alpha1.PodState{"web-0": want}))

		forceDelete(ctx, ns, "web-0")
		Consistently(podStates(ctx, ns, "web"), "1s").Should(HaveKeyWithValue("web-0", want))

		again := runPod(ctx, stsPod(sts, 0), nodeA)
		Expect(again.Annotations).To(HaveKeyWithValue(kruisev1alpha1.AnnotationInjectedPersistentPodState, "web"))
		Expect(again.Spec.NodeSelector).To(Equal(map[string]string{labelHostname: nodeA}))
		Expect(again.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(ConsistOf(
			corev1.PreferredSchedulingTerm{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: labelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-1"}}}}}))
		Expect(podStates(ctx, ns, "web")()).To(Equal(map[string]kruisev1alpha1.PodState{"web-0": want}))
	})

	It("makes no write on passes that change nothing", func() {
		sts := newStatefulSet("quiet", 2)
		Eventually(getPPS(ctx, ns, "quiet")).Should(Not(BeNil()))
		p := stsPod(sts, 0)
		p.Spec.NodeName = nodeB
		runPod(ctx, p, nodeB)
		Eventually(podStates(ctx, ns, "quiet")).Should(HaveKey("quiet-0"))
		pps, err := getPPS(ctx, ns, "quiet")()
		Expect(err).NotTo(HaveOccurred())

		// Nudges that reconcile both controllers: a replica change within the records, and a change of an
		// annotation the generator reads that leaves the generated spec as it is.
		before := reconcileTotal(persistentpodstate.ControllerName) + reconcileTotal(persistentpodstate.GeneratorName)
		Eventually(func() error {
			cur := &appsv1.StatefulSet{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sts), cur); err != nil {
				return err
			}
			cur.Spec.Replicas = ptr.To(int32(3))
			cur.Annotations[kruisev1alpha1.AnnotationRequiredPersistentTopology] = labelHostname + ", " + labelHostname
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func() float64 {
			return reconcileTotal(persistentpodstate.ControllerName) + reconcileTotal(persistentpodstate.GeneratorName)
		}).Should(BeNumerically(">=", before+2))
		Consistently(func() string {
			got, _ := getPPS(ctx, ns, "quiet")()
			return got.ResourceVersion
		}, "2s").Should(Equal(pps.ResourceVersion))
	})

	It("refuses a second PPS for one target, a changed target and bad keys, with field paths", func() {
		newStatefulSet("dup", 1)
		Eventually(getPPS(ctx, ns, "dup")).Should(Not(BeNil()))
		second := testutil.MakePPS("dup-2", ns, "dup").Required(labelHostname).Obj()
		err := k8sClient.Create(ctx, second)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ConsistOf("spec.targetRef"))
		Expect(err.Error()).To(ContainSubstring(`"dup"`))

		bad := testutil.MakePPS("bad", ns, "other").Required("not a key").Preferred(50, labelZone, labelZone).
			PersistAnnotations("").Obj()
		err = k8sClient.Create(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ConsistOf("spec.requiredPersistentTopology.nodeTopologyKeys[0]",
			"spec.preferredPersistentTopology[0].preference.nodeTopologyKeys[1]", "spec.persistentPodAnnotations[0].key"))

		pps, err := getPPS(ctx, ns, "dup")()
		Expect(err).NotTo(HaveOccurred())
		pps.Spec.TargetRef.APIVersion = "apps/v1beta2"
		err = k8sClient.Update(ctx, pps)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ConsistOf("spec.targetRef"))
	})

	It("never sees bare pods, and admits owned pods unchanged when the pod webhook fails", func() {
		sts := newStatefulSet("edge", 1)
		Eventually(getPPS(ctx, ns, "edge")).Should(Not(BeNil()))
		p := stsPod(sts, 0)
		p.Spec.NodeName = nodeA
		runPod(ctx, p, nodeA)
		Eventually(podStates(ctx, ns, "edge")).Should(HaveKey("edge-0"))

		admissions := func() float64 {
			return metricSum("drover_persistentpodstate_pod_admissions_total", "result", ppsmetrics.AdmissionNotApplicable,
				func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }) +
				metricSum("drover_persistentpodstate_pod_admissions_total", "result", ppsmetrics.AdmissionInjected,
					func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
		}
		before := admissions()
		bare := testutil.MakePod("edge-1", ns).Obj()
		Expect(k8sClient.Create(ctx, bare)).To(Succeed())
		Expect(bare.Annotations).NotTo(HaveKey(kruisev1alpha1.AnnotationInjectedPersistentPodState))
		Expect(admissions()).To(Equal(before), "matchConditions keep bare pods away from the webhook")

		forceDelete(ctx, ns, "edge-0")
		restore := withUnreachablePodWebhook(ctx)
		// The API server picks the changed configuration up within moments: until it does, a create may
		// still be steered. Every create must succeed.
		Eventually(func() map[string]string {
			recreated := stsPod(sts, 0)
			Expect(k8sClient.Create(ctx, recreated)).To(Succeed())
			if len(recreated.Spec.NodeSelector) > 0 {
				forceDelete(ctx, ns, "edge-0")
			}
			return recreated.Spec.NodeSelector
		}).Should(BeEmpty())
		restore()
		forceDelete(ctx, ns, "edge-0")
		Eventually(func() map[string]string {
			probe := stsPod(sts, 0)
			Expect(k8sClient.Create(ctx, probe, client.DryRunAll)).To(Succeed())
			return probe.Spec.NodeSelector
		}).Should(HaveKeyWithValue(labelHostname, nodeA), "the restored webhook steers again")
	})
})

// withUnreachablePodWebhook points the PersistentPodState pod webhook at a closed port and returns a function
// that restores it.
func withUnreachablePodWebhook(ctx context.Context) func() {
	list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	Expect(k8sClient.List(ctx, list)).To(Succeed())
	for i := range list.Items {
		cfg := &list.Items[i]
		for j := range cfg.Webhooks {
			wh := &cfg.Webhooks[j]
			if wh.Name != "mpod-persistentpodstate.drover.dev" {
				continue
			}
			Expect(wh.FailurePolicy).To(HaveValue(Equal(admissionregistrationv1.Ignore)))
			saved := cfg.DeepCopy()
			wh.ClientConfig.URL = ptr.To("https://127.0.0.1:1/mutate-pod-persistentpodstate")
			wh.ClientConfig.Service = nil
			Expect(k8sClient.Update(ctx, cfg)).To(Succeed())
			return func() {
				cur := &admissionregistrationv1.MutatingWebhookConfiguration{}
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(saved), cur)).To(Succeed())
				cur.Webhooks = saved.Webhooks
				Expect(k8sClient.Update(ctx, cur)).To(Succeed())
			}
		}
	}
	Fail("no pod webhook mpod-persistentpodstate.drover.dev is installed")
	return nil
}
