package e2e

import (
	"maps"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/yurtappdaemon"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// withoutYurtAppDaemon is the manager's --controllers with every controller but the YurtAppDaemon one: drover
// not yet (or no longer) running YurtAppDaemons, its YurtAppDaemon webhooks admitting every object unchanged.
const withoutYurtAppDaemon = "--controllers=nodepool,uniteddaemonset,tapp,persistentpodstate,stagedbindingpolicy"

// childState is what must not change of one child across the switch and the rollback.
type childState struct {
	uid        types.UID
	template   corev1.PodTemplateSpec
	spec       appsv1.DeploymentSpec
	pods       []types.UID
	replicaSet []types.UID
}

// The move from OpenYurt's yurt-manager (docs/migrate/openyurt.md), on objects as OpenYurt 1.5 and 1.6 leave
// them: a YurtAppDaemon with OpenYurt's status, its ControllerRevision as OpenYurt names it, and one child
// Deployment per pool with a generated name, OpenYurt's labels (the revision label on the pods too), its
// annotation and its pool pinning; their pods running on the pools' fake nodes. The preview says that only
// metadata changes, the switch restarts nothing and takes the status over, and the rollback leaves every
// object for yurt-manager as it reads them.
var _ = Describe("Moving from OpenYurt's YurtAppDaemon controller", Ordered, func() {
	const app = "moved-yad"
	var ns, sel, revision string
	var pools []testPool
	var yad *openyurtv1alpha1.YurtAppDaemon
	before := map[string]childState{} // by pool

	BeforeAll(func() {
		Expect(cluster.RestartManager(suiteCtx, withoutYurtAppDaemon)).To(Succeed())
		DeferCleanup(func() { Expect(cluster.RestartManager(suiteCtx)).To(Succeed()) })
		ns = newNamespace("e2e-move-yad")
		// The pools outlive the specs (cleanups registered here run after the last one).
		sel = uniqueName("move")
		taint := corev1.Taint{Key: "e2e.drover.dev/edge", Effect: corev1.TaintEffectNoSchedule}
		pools = []testPool{
			newTestPool(poolOpts{Labels: map[string]string{e2eSelectLabel: sel}, Taints: []corev1.Taint{taint}, Members: 1}),
			newTestPool(poolOpts{Labels: map[string]string{e2eSelectLabel: sel}, Members: 1}),
		}
	})

	It("starts from the state OpenYurt 1.6 leaves", func() {
		yad = upstreamYurtAppDaemon(ns, app, sel)
		Expect(k8sClient.Create(suiteCtx, yad)).To(Succeed())
		cr := upstreamControllerRevision(yad)
		revision = cr.Name
		Expect(k8sClient.Create(suiteCtx, cr)).To(Succeed())
		// OpenYurt's conditions (no reason) and summaries (no pool) are left out: drover's CRD, which this
		// cluster serves, refuses them on write. Stored under OpenYurt's CRD, they are replaced whole by drover's
		// first status write, as the rest of this status is.
		yad.Status = openyurtv1alpha1.YurtAppDaemonStatus{ObservedGeneration: yad.Generation, CollisionCount: ptr.To[int32](0),
			CurrentRevision: revision, TemplateType: openyurtv1alpha1.DeploymentTemplateType,
			NodePools: []string{pools[1].Name, pools[0].Name}}
		Expect(k8sClient.Status().Update(suiteCtx, yad)).To(Succeed())
		for _, p := range pools {
			var np openyurtv1beta1.NodePool
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Name}, &np)).To(Succeed())
			Expect(k8sClient.Create(suiteCtx, upstreamYADChild(yad, &np, revision))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			for _, p := range pools {
				d := poolChild(g, ns, app, p.Name)
				g.Expect(expectPodsRunningOn(g, ns, app, p, 1, e2eImage)).To(HaveLen(1))
				before[p.Name] = childState{uid: d.UID, template: d.Spec.Template, spec: d.Spec,
					pods: podUIDs(g, ns, app, p.Name), replicaSet: replicaSetUIDs(g, ns, app, p.Name)}
			}
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	})

	It("previews the switch: the revision reused, each child relabelled, nothing restarted", func() {
		reports, err := yurtappdaemon.PreviewYurtAppDaemons(suiteCtx, k8sClient, ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(reports).To(HaveLen(1))
		Expect(preview.Write(GinkgoWriter, reports, true)).To(Succeed())
		effects := map[string]preview.Effect{}
		for _, it := range reports[0].Items {
			effects[it.Object] = it.Effect
		}
		want := map[string]preview.Effect{"ControllerRevision " + revision: preview.Keep, "YurtAppDaemon " + app: preview.Relabel}
		Eventually(func(g Gomega) {
			for _, p := range pools {
				want["Deployment "+poolChild(g, ns, app, p.Name).Name] = preview.Relabel
			}
		}).Should(Succeed())
		Expect(effects).To(Equal(want))
		Expect(reports[0].Restarting()).To(BeEmpty())
		Expect(reports[0].Notices).To(BeEmpty())
	})

	It("switches to drover with every Deployment, ReplicaSet and pod kept and no pod template changed", func() {
		Expect(cluster.RestartManager(suiteCtx)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &openyurtv1alpha1.YurtAppDaemon{}
			g.Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(yad), got)).To(Succeed())
			g.Expect(got.Status.CurrentRevision).To(Equal(revision))
			g.Expect(got.Status.TotalWorkloads).To(BeEquivalentTo(2))
			g.Expect(got.Status.ReadyWorkloads).To(BeEquivalentTo(2))
			g.Expect(got.Status.WorkloadSummary).To(HaveLen(2))
			failure := findCondition(got.Status.Conditions, openyurtv1alpha1.WorkLoadFailure)
			g.Expect(failure).NotTo(BeNil())
			g.Expect(failure.Status).To(Equal(metav1.ConditionFalse), "WorkLoadFailure: %s", failure.Message)
			for _, p := range pools {
				d := poolChild(g, ns, app, p.Name)
				g.Expect(d.Annotations).To(HaveKey(openyurtv1alpha1.AnnotationRenderedHash), "drover applied %s", d.Name)
			}
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		expectChildrenAsBefore(ns, app, pools, revision, before)
		reports, err := yurtappdaemon.PreviewYurtAppDaemons(suiteCtx, k8sClient, ns)
		Expect(err).NotTo(HaveOccurred())
		for _, it := range reports[0].Items {
			Expect(it.Effect).To(Equal(preview.Keep), "%s: %s", it.Object, it.Why)
		}
	})

	It("rolls back: drover's controller stopped, every object left as yurt-manager reads it", func() {
		Expect(cluster.RestartManager(suiteCtx, withoutYurtAppDaemon)).To(Succeed())
		expectChildrenAsBefore(ns, app, pools, revision, before)
		got := &openyurtv1alpha1.YurtAppDaemon{}
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(yad), got)).To(Succeed())
		Expect(got.Status.CurrentRevision).To(Equal(revision), "yurt-manager keeps a currentRevision that is set")
		Expect(got.Status.CollisionCount).To(HaveValue(BeEquivalentTo(0)), "yurt-manager reads it without a nil check")
		var crs appsv1.ControllerRevisionList
		Expect(k8sClient.List(suiteCtx, &crs, client.InNamespace(ns))).To(Succeed())
		Expect(crs.Items).To(ConsistOf(HaveField("Name", revision)), "the one revision, still named as OpenYurt names it")
		// yurt-manager leaves a child alone when its revision label names the current revision (checked above),
		// its pod nodeSelector is exactly the pool's and its tolerations tolerate every taint of the pool.
		for _, p := range pools {
			var np openyurtv1beta1.NodePool
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Name}, &np)).To(Succeed())
			d := poolChild(Default, ns, app, p.Name)
			Expect(d.Spec.Template.Spec.NodeSelector).To(Equal(map[string]string{openyurtv1beta1.LabelCurrentNodePool: p.Name}))
			for _, t := range np.Spec.Taints {
				Expect(toleratesTaint(d.Spec.Template.Spec.Tolerations, t)).To(BeTrue(), "%s tolerates %s", d.Name, t.Key)
			}
		}
	})
})

// expectChildrenAsBefore checks each pool's child: the same Deployment (UID), spec and pod template,
// ReplicaSets and pods, and what yurt-manager reads of it: the controller reference, the ref-nodepool
// annotation, and the revision label naming the revision of the current template.
func expectChildrenAsBefore(ns, app string, pools []testPool, revision string, before map[string]childState) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		for _, p := range pools {
			d := poolChild(g, ns, app, p.Name)
			b := before[p.Name]
			g.Expect(d.UID).To(Equal(b.uid))
			// The generation moves: a Deployment's annotations count as its spec (they are copied to its
			// ReplicaSets). The spec itself does not.
			g.Expect(apiequality.Semantic.DeepEqual(d.Spec, b.spec)).To(BeTrue(), "the spec of %s", d.Name)
			g.Expect(apiequality.Semantic.DeepEqual(d.Spec.Template, b.template)).To(BeTrue(), "the pod template of %s", d.Name)
			g.Expect(podUIDs(g, ns, app, p.Name)).To(Equal(b.pods))
			g.Expect(replicaSetUIDs(g, ns, app, p.Name)).To(Equal(b.replicaSet))
			g.Expect(d.Annotations).To(HaveKeyWithValue(openyurtv1alpha1.AnnotationRefNodePool, p.Name))
			g.Expect(d.Labels).To(HaveKeyWithValue(openyurtv1alpha1.LabelControllerRevisionHash, revision))
			g.Expect(metav1.GetControllerOf(d)).NotTo(BeNil())
		}
	}).WithTimeout(3 * interval * 4).WithPolling(interval).Should(Succeed())
}

// poolChild returns the one Deployment of app labelled for pool.
func poolChild(g Gomega, ns, app, pool string) *appsv1.Deployment {
	var list appsv1.DeploymentList
	g.Expect(k8sClient.List(suiteCtx, &list, client.InNamespace(ns),
		client.MatchingLabels{"app": app, openyurtv1alpha1.LabelPoolName: pool})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1), "the child of pool %s", pool)
	return &list.Items[0]
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	i := slices.IndexFunc(conds, func(c metav1.Condition) bool { return c.Type == typ })
	if i < 0 {
		return nil
	}
	return &conds[i]
}

// upstreamYurtAppDaemon is a YurtAppDaemon as OpenYurt's webhook stores it: the template's selector copied
// from spec.selector, revisionHistoryLimit 10, the template's own labels; no nodeSelector of its own.
func upstreamYurtAppDaemon(ns, app, selectValue string) *openyurtv1alpha1.YurtAppDaemon {
	spec := deploymentSpec(app, selectValue, ptr.To[int32](1))
	tmpl := spec.WorkloadTemplate.DeploymentTemplate
	tmpl.Spec.Template.Spec.NodeSelector = nil
	tmpl.Spec.Selector = spec.Selector.DeepCopy()
	tmpl.Labels = map[string]string{"app": app}
	spec.RevisionHistoryLimit = ptr.To[int32](10)
	return &openyurtv1alpha1.YurtAppDaemon{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns}, Spec: spec}
}

func yadControllerRef(yad *openyurtv1alpha1.YurtAppDaemon) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: openyurtv1alpha1.GroupVersion.String(), Kind: "YurtAppDaemon",
		Name: yad.Name, UID: yad.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// upstreamControllerRevision is the revision OpenYurt writes for yad's template: <yad>-<hash> over the
// replace patch of spec.workloadTemplate, the template's labels plus the hash label, revision 1.
func upstreamControllerRevision(yad *openyurtv1alpha1.YurtAppDaemon) *appsv1.ControllerRevision {
	GinkgoHelper()
	data, err := render.RevisionData(&yad.Spec)
	Expect(err).NotTo(HaveOccurred())
	hash := render.RevisionHash(data, nil)
	lbls := maps.Clone(yad.Spec.WorkloadTemplate.DeploymentTemplate.Labels)
	lbls[openyurtv1alpha1.LabelRevisionHash] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: render.RevisionName(yad.Name, hash), Namespace: yad.Namespace, Labels: lbls,
			OwnerReferences: []metav1.OwnerReference{yadControllerRef(yad)}},
		Data: runtime.RawExtension{Raw: data}, Revision: 1,
	}
}

// upstreamYADChild is the Deployment OpenYurt 1.5 and 1.6 create for a pool (the controller's rendering as
// its Deployment webhook repeats it): generateName <yad>-<pool>-, the template's and selector's labels plus
// the revision and pool labels, the ref-nodepool annotation, the pool in the selector and the pod labels, the
// revision label on the pods, the nodeSelector replaced by the pool's, an Exists toleration per pool taint.
func upstreamYADChild(yad *openyurtv1alpha1.YurtAppDaemon, np *openyurtv1beta1.NodePool, revision string) *appsv1.Deployment {
	tmpl := yad.Spec.WorkloadTemplate.DeploymentTemplate
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		GenerateName: yad.Name + "-" + np.Name + "-", Namespace: yad.Namespace,
		Labels:          maps.Clone(tmpl.Labels),
		Annotations:     map[string]string{openyurtv1alpha1.AnnotationRefNodePool: np.Name},
		OwnerReferences: []metav1.OwnerReference{yadControllerRef(yad)},
	}, Spec: *tmpl.Spec.DeepCopy()}
	maps.Copy(d.Labels, yad.Spec.Selector.MatchLabels)
	d.Labels[openyurtv1alpha1.LabelControllerRevisionHash] = revision
	d.Labels[openyurtv1alpha1.LabelPoolName] = np.Name
	d.Spec.Selector.MatchLabels[openyurtv1alpha1.LabelPoolName] = np.Name
	pod := &d.Spec.Template
	pod.Labels[openyurtv1alpha1.LabelPoolName] = np.Name
	pod.Labels[openyurtv1alpha1.LabelControllerRevisionHash] = revision
	pod.Spec.NodeSelector = map[string]string{openyurtv1beta1.LabelCurrentNodePool: np.Name}
	for _, t := range np.Spec.Taints {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpExists, Effect: t.Effect})
	}
	return d
}
