package yurtappdaemon

import (
	"context"
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/testutil"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// upstreamYAD is a YurtAppDaemon as OpenYurt stores it: the template's selector copied from spec.selector,
// two replicas, every pool labelled tier=edge selected.
func upstreamYAD() *openyurtv1alpha1.YurtAppDaemon {
	spec := testutil.DeploymentSpec(appLabels, "dns:1")
	spec.Replicas = ptr.To[int32](2)
	yad := testutil.MakeYurtAppDaemon(ownerName, testNS).UID(ownerUID).Generation(1).Deployment(spec).
		NodePoolSelectorLabels(edgeLabels).Obj()
	yad.Spec.WorkloadTemplate.DeploymentTemplate.Labels = maps.Clone(appLabels)
	return yad
}

// upstreamRevision is the ControllerRevision OpenYurt writes for yad's template: named <yad>-<hash>, the
// template's labels plus the hash label, a controller reference, the given number.
func upstreamRevision(t *testing.T, yad *openyurtv1alpha1.YurtAppDaemon, number int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := render.RevisionData(&yad.Spec)
	if err != nil {
		t.Fatal(err)
	}
	hash := render.RevisionHash(data, nil)
	lbls := maps.Clone(yad.Spec.WorkloadTemplate.DeploymentTemplate.Labels)
	lbls[openyurtv1alpha1.LabelRevisionHash] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: render.RevisionName(yad.Name, hash), Namespace: yad.Namespace, Labels: lbls,
			OwnerReferences: []metav1.OwnerReference{testYADRef()}},
		Data: runtime.RawExtension{Raw: data}, Revision: number,
	}
}

func testYADRef() metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: openyurtv1alpha1.GroupVersion.String(), Kind: testutil.YurtAppDaemonKind,
		Name: ownerName, UID: ownerUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// upstreamChild is pool's Deployment as OpenYurt 1.5 and 1.6 leave it: a generated name, the template's and
// selector's labels plus the revision and pool labels, the ref-nodepool annotation, the selector and pod
// labels with the pool, the pod labels with the revision, the nodeSelector replaced by the pool's, required
// node affinity cleared, one Exists toleration appended per pool taint in the pool's order.
func upstreamChild(yad *openyurtv1alpha1.YurtAppDaemon, np *openyurtv1beta1.NodePool, revision string) *appsv1.Deployment {
	tmpl := yad.Spec.WorkloadTemplate.DeploymentTemplate
	name := yad.Name + "-" + np.Name + "-x7k2p"
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: name, GenerateName: yad.Name + "-" + np.Name + "-", Namespace: yad.Namespace, UID: types.UID("uid-" + name),
		Labels: maps.Clone(tmpl.Labels), Annotations: maps.Clone(tmpl.Annotations),
		OwnerReferences: []metav1.OwnerReference{testYADRef()},
	}, Spec: *tmpl.Spec.DeepCopy()}
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	maps.Copy(d.Labels, yad.Spec.Selector.MatchLabels)
	d.Labels[openyurtv1alpha1.LabelControllerRevisionHash] = revision
	d.Labels[openyurtv1alpha1.LabelPoolName] = np.Name
	d.Annotations = map[string]string{openyurtv1alpha1.AnnotationRefNodePool: np.Name}
	d.Spec.Selector.MatchLabels[openyurtv1alpha1.LabelPoolName] = np.Name
	pod := &d.Spec.Template
	pod.Labels[openyurtv1alpha1.LabelPoolName] = np.Name
	pod.Labels[openyurtv1alpha1.LabelControllerRevisionHash] = revision
	pod.Spec.NodeSelector = map[string]string{openyurtv1beta1.LabelCurrentNodePool: np.Name}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
	}
	for _, taint := range np.Spec.Taints {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpExists, Effect: taint.Effect})
	}
	return d
}

// onePointFourChild is pool's Deployment as OpenYurt 1.4's Deployment webhook leaves it: the metadata the
// controller wrote, the spec replaced by the template's own (no pool in the selector, pod labels or
// nodeSelector, no pool tolerations).
func onePointFourChild(yad *openyurtv1alpha1.YurtAppDaemon, np *openyurtv1beta1.NodePool, revision string) *appsv1.Deployment {
	d := upstreamChild(yad, np, revision)
	d.Spec = *yad.Spec.WorkloadTemplate.DeploymentTemplate.Spec.DeepCopy()
	return d
}

// servedAsOpenYurt16 answers as OpenYurt 1.4 to 1.6 serve NodePools: in v1beta1, with no v1beta2.
var servedAsOpenYurt16 = interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	if _, hub := list.(*openyurtv1beta2.NodePoolList); hub {
		return &apimeta.NoKindMatchError{GroupKind: openyurtv1beta2.GroupVersion.WithKind("NodePool").GroupKind(),
			SearchedVersions: []string{"v1beta2"}}
	}
	return c.List(ctx, list, opts...)
}}

// runPreview previews objs as OpenYurt 1.4 to 1.6 leave them (servedAsOpenYurt16).
func runPreview(t *testing.T, objs ...client.Object) preview.Report {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: objs, StatusSubresource: statusTypes(), Hooks: servedAsOpenYurt16})
	reports, err := PreviewYurtAppDaemons(context.Background(), fc.Client, testNS)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 {
		t.Fatalf("got %d reports, want 1", len(reports))
	}
	var out strings.Builder
	if err := preview.Write(&out, reports, true); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	return reports[0]
}

func itemOf(t *testing.T, r preview.Report, object string) preview.Item {
	t.Helper()
	for _, it := range r.Items {
		if it.Object == object {
			return it
		}
	}
	t.Fatalf("no item %q in %+v", object, r.Items)
	return preview.Item{}
}

func TestPreviewOpenYurtChildrenInSync(t *testing.T) {
	yad := upstreamYAD()
	rev := upstreamRevision(t, yad, 1)
	yad.Status = openyurtv1alpha1.YurtAppDaemonStatus{ObservedGeneration: 1, CurrentRevision: rev.Name,
		TemplateType: openyurtv1alpha1.DeploymentTemplateType, NodePools: []string{"b", "a"}}
	a := pool("a", edgeLabels).Taints(noSchedule("edge")).Obj()
	b := pool("b", edgeLabels).Obj()
	c := pool("c", edgeLabels).Obj()
	r := runPreview(t, yad, rev, a, b, c, upstreamChild(yad, a, rev.Name), upstreamChild(yad, b, rev.Name))

	if it := itemOf(t, r, "ControllerRevision "+rev.Name); it.Effect != preview.Keep {
		t.Errorf("revision: %+v, want keep (drover's revision data and name are OpenYurt's)", it)
	}
	for _, name := range []string{"Deployment dns-a-x7k2p", "Deployment dns-b-x7k2p"} {
		it := itemOf(t, r, name)
		if it.Effect != preview.Relabel || !strings.Contains(it.Why, "drover.dev/rendered-hash") ||
			!strings.Contains(it.Why, "drover.dev/applied-replicas") || strings.Contains(it.Why, "controller-revision-hash") {
			t.Errorf("%s: %+v, want relabel with drover's two annotations only", name, it)
		}
	}
	if it := itemOf(t, r, "Deployment dns-c"); it.Effect != preview.Create {
		t.Errorf("new pool: %+v, want create", it)
	}
	if it := itemOf(t, r, "YurtAppDaemon dns"); strings.Contains(it.Why, "currentRevision") {
		t.Errorf("status: %+v, currentRevision stays", it)
	}
	if len(r.Restarting()) != 0 || len(r.Notices) != 0 {
		t.Errorf("restarting %+v, notices %v; want none", r.Restarting(), r.Notices)
	}
}

// A template changed under OpenYurt: currentRevision and the children's revision labels still name the first
// revision; drover names the newest on the children (metadata) and in the status.
func TestPreviewOpenYurtFrozenRevision(t *testing.T) {
	old := upstreamYAD()
	first := upstreamRevision(t, old, 1)
	yad := upstreamYAD()
	yad.Spec.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.Containers[0].Image = "dns:2"
	second := upstreamRevision(t, yad, 2)
	yad.Status.CurrentRevision = first.Name
	a := pool("a", edgeLabels).Obj()
	r := runPreview(t, yad, first, second, a, upstreamChild(yad, a, first.Name))

	it := itemOf(t, r, "Deployment dns-a-x7k2p")
	if it.Effect != preview.Relabel || !strings.Contains(it.Why, "metadata.labels.apps.openyurt.io/controller-revision-hash") {
		t.Errorf("child: %+v, want relabel of the revision label, no pod template change", it)
	}
	if st := itemOf(t, r, "YurtAppDaemon dns"); !strings.Contains(st.Why, `currentRevision "`+first.Name+`" -> "`+second.Name+`"`) {
		t.Errorf("status: %+v", st)
	}
	if itemOf(t, r, "ControllerRevision "+second.Name).Effect != preview.Keep {
		t.Errorf("the newest revision is reused")
	}
}

// Where drover's rendering differs from OpenYurt's inside the pod template, the preview names the fields.
func TestPreviewOpenYurtPodTemplateDifferences(t *testing.T) {
	yad := upstreamYAD()
	pod := &yad.Spec.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec
	pod.NodeSelector = map[string]string{"disk": "ssd"}
	rev := upstreamRevision(t, yad, 1)
	yad.Status.CurrentRevision = rev.Name
	a := pool("a", edgeLabels).Obj()
	b := pool("b", edgeLabels).Taints(noSchedule("zeta"), noSchedule("alpha")).Obj()
	yadB := yad.DeepCopy()
	yadB.Spec.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.NodeSelector = nil
	r := runPreview(t, yad, rev, a, b, upstreamChild(yad, a, rev.Name), upstreamChild(yadB, b, rev.Name))

	ia := itemOf(t, r, "Deployment dns-a-x7k2p")
	if ia.Effect != preview.Update || !strings.Contains(ia.Why, `spec.template.spec.nodeSelector: {"apps.openyurt.io/nodepool":"a"} -> {"apps.openyurt.io/nodepool":"a","disk":"ssd"}`) {
		t.Errorf("pool a: %+v, want update of the nodeSelector", ia)
	}
	ib := itemOf(t, r, "Deployment dns-b-x7k2p")
	if ib.Effect != preview.Update || !strings.Contains(ib.Why, "spec.template.spec.tolerations: ") {
		t.Errorf("pool b: %+v, want update of the tolerations (pool taints sorted by key)", ib)
	}
	if got := len(r.Restarting()); got != 2 {
		t.Errorf("restarting = %d, want 2", got)
	}
}

// OpenYurt 1.4's Deployment webhook left the child without the pool in its selector: drover's apply is
// refused (the selector is immutable), the child stays as it is, and the preview says so.
func TestPreviewOpenYurt14Child(t *testing.T) {
	yad := upstreamYAD()
	rev := upstreamRevision(t, yad, 1)
	yad.Status.CurrentRevision = rev.Name
	a := pool("a", edgeLabels).Obj()
	r := runPreview(t, yad, rev, a, onePointFourChild(yad, a, rev.Name))

	it := itemOf(t, r, "Deployment dns-a-x7k2p")
	if it.Effect != preview.Keep || !strings.Contains(it.Why, "the apply is refused, spec.selector") {
		t.Errorf("child: %+v, want keep with the refused apply", it)
	}
	if len(r.Notices) != 1 || !strings.Contains(r.Notices[0], "delete it") {
		t.Errorf("notices = %v", r.Notices)
	}
}

// A child drover wrote is in sync: nothing to do.
func TestPreviewDroverChildInSync(t *testing.T) {
	yad := upstreamYAD()
	rev := upstreamRevision(t, yad, 1)
	yad.Status.CurrentRevision = rev.Name
	a := pool("a", edgeLabels).Obj()
	res, err := render.Render(render.Input{Owner: render.OwnerRef{APIVersion: openyurtv1alpha1.GroupVersion.String(),
		Kind: testutil.YurtAppDaemonKind, Name: ownerName, UID: ownerUID}, Namespace: testNS, Spec: &yad.Spec,
		Pool: render.Pool{Name: "a", Labels: edgeLabels}, Revision: rev.Name, Name: "dns-a"})
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(res.Body.Object, d); err != nil {
		t.Fatal(err)
	}
	r := runPreview(t, yad, rev, a, d)
	if it := itemOf(t, r, "Deployment dns-a"); it.Effect != preview.Keep {
		t.Errorf("child: %+v, want keep", it)
	}
}

// Required node affinity OpenYurt dropped, a pool taint the template tolerates already, and a child without
// the pool-name label (which the controller's cache never holds).
func TestPreviewOpenYurtAffinityAndInvisibleChild(t *testing.T) {
	yad := upstreamYAD()
	pod := &yad.Spec.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec
	pod.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}}}}}
	pod.Tolerations = []corev1.Toleration{{Key: "edge", Operator: corev1.TolerationOpExists}}
	rev := upstreamRevision(t, yad, 1)
	yad.Status.CurrentRevision = rev.Name
	a := pool("a", edgeLabels).Taints(noSchedule("edge")).Obj()
	b := pool("b", edgeLabels).Obj()
	unlabelled := upstreamChild(yad, b, rev.Name)
	delete(unlabelled.Labels, openyurtv1alpha1.LabelPoolName)
	r := runPreview(t, yad, rev, a, b, upstreamChild(yad, a, rev.Name), unlabelled)

	it := itemOf(t, r, "Deployment dns-a-x7k2p")
	for _, want := range []string{"spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: nothing -> ",
		"spec.template.spec.tolerations: "} {
		if it.Effect != preview.Update || !strings.Contains(it.Why, want) {
			t.Errorf("pool a: %+v, want an update naming %q", it, want)
		}
	}
	if itemOf(t, r, "Deployment dns-b").Effect != preview.Create {
		t.Errorf("pool b gets another child")
	}
	if len(r.Notices) != 1 || !strings.Contains(r.Notices[0], "Deployment dns-b-x7k2p is owned but has no apps.openyurt.io/pool-name label") {
		t.Errorf("notices = %v", r.Notices)
	}
}

// UnitedDaemonSets go through the same preview.
func TestPreviewUnitedDaemonSet(t *testing.T) {
	udd := testutil.MakeUnitedDaemonSet(ownerName, testNS).UID(ownerUID).Generation(1).
		Deployment(testutil.DeploymentSpec(appLabels, "dns:1")).NodePoolSelectorLabels(edgeLabels).Obj()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: []client.Object{udd, pool("a", edgeLabels).Obj()},
		StatusSubresource: statusTypes(), Hooks: servedAsOpenYurt16})
	reports, err := PreviewUnitedDaemonSets(context.Background(), fc.Client, testNS)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Owner != "UnitedDaemonSet apps/dns" {
		t.Fatalf("reports = %+v", reports)
	}
	if itemOf(t, reports[0], "Deployment dns-a").Effect != preview.Create {
		t.Errorf("pool a gets a child")
	}
}

// TestListPoolsAsStored: where v1beta2 is served (OpenYurt 1.7, drover), the pools are read in it, as stored,
// and handed on as v1beta1.
func TestListPoolsAsStored(t *testing.T) {
	hub := &openyurtv1beta2.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"tier": "edge"}},
		Spec: openyurtv1beta2.NodePoolSpec{Type: openyurtv1beta2.Edge}}
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: []client.Object{hub}})
	pools, err := listPoolsAsStored(context.Background(), fc.Client)
	if err != nil {
		t.Fatal(err)
	}
	if len(pools) != 1 || pools[0].Name != "a" || pools[0].Labels["tier"] != "edge" || pools[0].Spec.Type != openyurtv1beta1.Edge {
		t.Errorf("pools = %+v, want pool a of type Edge labelled tier=edge", pools)
	}
}
