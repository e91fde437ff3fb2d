package testutil

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// Owner kinds, for tables that run over both (OwnerKinds).
const (
	YurtAppDaemonKind   = "YurtAppDaemon"
	UnitedDaemonSetKind = "UnitedDaemonSet"
)

// OwnerKinds lists the two owner kinds that share the YurtAppDaemon spec.
var OwnerKinds = []string{YurtAppDaemonKind, UnitedDaemonSetKind}

// OwnerWrapper builds a YurtAppDaemon or a UnitedDaemonSet; both kinds share spec and status, so one builder
// serves both. T is the concrete pointer type, or openyurtv1alpha1.Owner for tables over both kinds:
//
//	yad := testutil.MakeYurtAppDaemon("dns", "kube-system").Deployment(testutil.DeploymentSpec(lbls, "dns:1")).
//		NodePoolSelectorLabels(map[string]string{"tier": "edge"}).Obj()
//	owner := testutil.MakeOwner(kind, "dns", "kube-system").Selector(lbls).Obj() // either kind
type OwnerWrapper[T openyurtv1alpha1.Owner] struct{ obj T }

// MakeYurtAppDaemon starts a YurtAppDaemon with the given name and namespace and nothing else set.
func MakeYurtAppDaemon(name, ns string) *OwnerWrapper[*openyurtv1alpha1.YurtAppDaemon] {
	o := &openyurtv1alpha1.YurtAppDaemon{
		TypeMeta:   metav1.TypeMeta{APIVersion: openyurtv1alpha1.GroupVersion.String(), Kind: YurtAppDaemonKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}
	return &OwnerWrapper[*openyurtv1alpha1.YurtAppDaemon]{obj: o}
}

// MakeUnitedDaemonSet starts a UnitedDaemonSet with the given name and namespace and nothing else set.
func MakeUnitedDaemonSet(name, ns string) *OwnerWrapper[*openyurtv1alpha1.UnitedDaemonSet] {
	o := &openyurtv1alpha1.UnitedDaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: openyurtv1alpha1.GroupVersion.String(), Kind: UnitedDaemonSetKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}
	return &OwnerWrapper[*openyurtv1alpha1.UnitedDaemonSet]{obj: o}
}

// MakeOwner starts an owner of the given kind (YurtAppDaemonKind or UnitedDaemonSetKind); it panics on
// another kind.
func MakeOwner(kind, name, ns string) *OwnerWrapper[openyurtv1alpha1.Owner] {
	switch kind {
	case YurtAppDaemonKind:
		return &OwnerWrapper[openyurtv1alpha1.Owner]{obj: MakeYurtAppDaemon(name, ns).obj}
	case UnitedDaemonSetKind:
		return &OwnerWrapper[openyurtv1alpha1.Owner]{obj: MakeUnitedDaemonSet(name, ns).obj}
	default:
		panic(fmt.Sprintf("testutil: unknown owner kind %q", kind))
	}
}

// Obj returns a copy of the owner built so far.
func (w *OwnerWrapper[T]) Obj() T {
	obj, ok := w.obj.DeepCopyObject().(T)
	if !ok {
		panic(fmt.Sprintf("testutil: cannot copy %T", w.obj))
	}
	return obj
}

// UID sets metadata.uid.
func (w *OwnerWrapper[T]) UID(uid types.UID) *OwnerWrapper[T] {
	w.obj.SetUID(uid)
	return w
}

// Generation sets metadata.generation.
func (w *OwnerWrapper[T]) Generation(g int64) *OwnerWrapper[T] {
	w.obj.SetGeneration(g)
	return w
}

// ResourceVersion sets metadata.resourceVersion.
func (w *OwnerWrapper[T]) ResourceVersion(rv string) *OwnerWrapper[T] {
	w.obj.SetResourceVersion(rv)
	return w
}

// Labels adds labels to the owner object.
func (w *OwnerWrapper[T]) Labels(l map[string]string) *OwnerWrapper[T] {
	w.obj.SetLabels(mergeMap(w.obj.GetLabels(), l))
	return w
}

// Deleting marks the owner as being deleted, with a finalizer (the API server requires one on such objects).
func (w *OwnerWrapper[T]) Deleting() *OwnerWrapper[T] {
	now := metav1.Now()
	w.obj.SetDeletionTimestamp(&now)
	if len(w.obj.GetFinalizers()) == 0 {
		w.obj.SetFinalizers([]string{"test.drover.dev/hold"})
	}
	return w
}

// Selector sets spec.selector to match the given labels.
func (w *OwnerWrapper[T]) Selector(matchLabels map[string]string) *OwnerWrapper[T] {
	w.obj.DaemonSpec().Selector = &metav1.LabelSelector{MatchLabels: copyMap(matchLabels)}
	return w
}

// LabelSelector sets spec.selector.
func (w *OwnerWrapper[T]) LabelSelector(sel *metav1.LabelSelector) *OwnerWrapper[T] {
	w.obj.DaemonSpec().Selector = sel.DeepCopy()
	return w
}

// Deployment sets spec.workloadTemplate.deploymentTemplate.spec (keeping its metadata) and clears the
// StatefulSet template. When spec.selector is unset, it is taken from the Deployment spec's selector.
func (w *OwnerWrapper[T]) Deployment(spec appsv1.DeploymentSpec) *OwnerWrapper[T] {
	tmpl := &w.obj.DaemonSpec().WorkloadTemplate
	meta := templateMeta(tmpl)
	tmpl.StatefulSetTemplate = nil
	tmpl.DeploymentTemplate = &openyurtv1alpha1.DeploymentTemplateSpec{ObjectMeta: meta, Spec: *spec.DeepCopy()}
	w.defaultSelector(spec.Selector)
	return w
}

// StatefulSet sets spec.workloadTemplate.statefulSetTemplate.spec (keeping its metadata) and clears the
// Deployment template. When spec.selector is unset, it is taken from the StatefulSet spec's selector.
func (w *OwnerWrapper[T]) StatefulSet(spec appsv1.StatefulSetSpec) *OwnerWrapper[T] {
	tmpl := &w.obj.DaemonSpec().WorkloadTemplate
	meta := templateMeta(tmpl)
	tmpl.DeploymentTemplate = nil
	tmpl.StatefulSetTemplate = &openyurtv1alpha1.StatefulSetTemplateSpec{ObjectMeta: meta, Spec: *spec.DeepCopy()}
	w.defaultSelector(spec.Selector)
	return w
}

// BothTemplates sets both template members (an invalid spec that bypassed the webhook).
func (w *OwnerWrapper[T]) BothTemplates(d appsv1.DeploymentSpec, s appsv1.StatefulSetSpec) *OwnerWrapper[T] {
	tmpl := &w.obj.DaemonSpec().WorkloadTemplate
	tmpl.DeploymentTemplate = &openyurtv1alpha1.DeploymentTemplateSpec{Spec: *d.DeepCopy()}
	tmpl.StatefulSetTemplate = &openyurtv1alpha1.StatefulSetTemplateSpec{Spec: *s.DeepCopy()}
	return w
}

// TemplateMetadata sets the labels and annotations of the template member (set the member first).
func (w *OwnerWrapper[T]) TemplateMetadata(labels, annotations map[string]string) *OwnerWrapper[T] {
	tmpl := &w.obj.DaemonSpec().WorkloadTemplate
	switch {
	case tmpl.DeploymentTemplate != nil:
		tmpl.DeploymentTemplate.Labels, tmpl.DeploymentTemplate.Annotations = copyMap(labels), copyMap(annotations)
	case tmpl.StatefulSetTemplate != nil:
		tmpl.StatefulSetTemplate.Labels, tmpl.StatefulSetTemplate.Annotations = copyMap(labels), copyMap(annotations)
	}
	return w
}

// NodePoolSelector sets spec.nodepoolSelector (nil selects no pool; an empty selector selects all).
func (w *OwnerWrapper[T]) NodePoolSelector(sel *metav1.LabelSelector) *OwnerWrapper[T] {
	w.obj.DaemonSpec().NodePoolSelector = sel.DeepCopy()
	return w
}

// NodePoolSelectorLabels sets spec.nodepoolSelector to match the given pool labels.
func (w *OwnerWrapper[T]) NodePoolSelectorLabels(matchLabels map[string]string) *OwnerWrapper[T] {
	w.obj.DaemonSpec().NodePoolSelector = &metav1.LabelSelector{MatchLabels: copyMap(matchLabels)}
	return w
}

// RevisionHistoryLimit sets spec.revisionHistoryLimit.
func (w *OwnerWrapper[T]) RevisionHistoryLimit(n int32) *OwnerWrapper[T] {
	w.obj.DaemonSpec().RevisionHistoryLimit = &n
	return w
}

// Tweaks sets spec.workloadTweaks, replacing earlier ones.
func (w *OwnerWrapper[T]) Tweaks(tweaks ...openyurtv1alpha1.WorkloadTweak) *OwnerWrapper[T] {
	out := make([]openyurtv1alpha1.WorkloadTweak, len(tweaks))
	for i := range tweaks {
		tweaks[i].DeepCopyInto(&out[i])
	}
	w.obj.DaemonSpec().WorkloadTweaks = out
	return w
}

// Status sets the status.
func (w *OwnerWrapper[T]) Status(s openyurtv1alpha1.YurtAppDaemonStatus) *OwnerWrapper[T] {
	*w.obj.DaemonStatus() = *s.DeepCopy()
	return w
}

func (w *OwnerWrapper[T]) defaultSelector(sel *metav1.LabelSelector) {
	if w.obj.DaemonSpec().Selector == nil && sel != nil {
		w.obj.DaemonSpec().Selector = sel.DeepCopy()
	}
}

func templateMeta(tmpl *openyurtv1alpha1.WorkloadTemplate) metav1.ObjectMeta {
	switch {
	case tmpl.DeploymentTemplate != nil:
		return *tmpl.DeploymentTemplate.ObjectMeta.DeepCopy()
	case tmpl.StatefulSetTemplate != nil:
		return *tmpl.StatefulSetTemplate.ObjectMeta.DeepCopy()
	default:
		return metav1.ObjectMeta{}
	}
}

// PodTemplate returns a pod template with the given labels and one container "main" running image.
func PodTemplate(labels map[string]string, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: copyMap(labels)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

// DeploymentSpec returns a Deployment spec selecting labels, with PodTemplate(labels, image).
func DeploymentSpec(labels map[string]string, image string) appsv1.DeploymentSpec {
	return appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: copyMap(labels)},
		Template: PodTemplate(labels, image),
	}
}

// StatefulSetSpec returns a StatefulSet spec selecting labels, with PodTemplate(labels, image).
func StatefulSetSpec(labels map[string]string, image string) appsv1.StatefulSetSpec {
	return appsv1.StatefulSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: copyMap(labels)},
		Template: PodTemplate(labels, image),
	}
}

// PoolPatches returns n realistic tweak patches for a template whose first container is the one to tweak:
// the first sets that container's env to one variable holding the pool name; of the others, one in four
// appends an env variable and three add a label to the child, all with {{nodepool-name}} in the value
// (94 bytes of JSON per patch on average). Every patch applies, so a tweak holding them is valid.
func PoolPatches(n int) []openyurtv1alpha1.Patch {
	out := make([]openyurtv1alpha1.Patch, 0, n)
	for j := range n {
		p := openyurtv1alpha1.Patch{Operation: openyurtv1alpha1.PatchAdd}
		switch {
		case j == 0:
			p.Path = "/spec/template/spec/containers/0/env"
			p.Value = rawJSON(fmt.Sprintf(`[{"name":"POOL","value":%q}]`, openyurtv1alpha1.NodePoolNamePlaceholder))
		case j%4 == 1:
			p.Path = "/spec/template/spec/containers/0/env/-"
			p.Value = rawJSON(fmt.Sprintf(`{"name":"POOL_%d","value":"%s-%d"}`, j, openyurtv1alpha1.NodePoolNamePlaceholder, j))
		default:
			p.Path = fmt.Sprintf("/metadata/labels/pool-%d", j)
			p.Value = rawJSON(fmt.Sprintf("%q", openyurtv1alpha1.NodePoolNamePlaceholder))
		}
		out = append(out, p)
	}
	return out
}

func rawJSON(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
