// Package render is the pure render core of the YurtAppDaemon/UnitedDaemonSet controller
// (docs/yurtappdaemon.md): child naming, rendering with pool constraints and tweaks, revision
// data and hashes, the sync check, the workload adapters and the structural validation the webhook and
// the controller share. It makes no client calls.
package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

// Pool is what rendering needs of a NodePool.
type Pool struct {
	Name   string
	Labels map[string]string
	Taints []corev1.Taint
}

// OwnerRef identifies the owner for the controller ownerReference. An empty UID renders no ownerReference
// (the webhook's dry run on CREATE, when the owner has no UID yet).
type OwnerRef struct {
	APIVersion, Kind, Name string
	UID                    types.UID
}

// Input is everything one child's render depends on.
type Input struct {
	Owner     OwnerRef
	Namespace string
	Spec      *openyurtv1alpha1.YurtAppDaemonSpec
	Pool      Pool
	Revision  string // ControllerRevision name, for the label apps.openyurt.io/controller-revision-hash
	Name      string // the child's name; "" renders metadata.generateName "<owner>-<pool>-" instead (webhook dry run)
}

// Result is one rendered child.
type Result struct {
	// Body is the server-side-apply body: apiVersion/kind set; no status, no creationTimestamp, no
	// zero-valued structs or empty maps the template leaves unset; it carries the rendered-hash annotation.
	Body *unstructured.Unstructured
	// Hash is the rendered hash: canonical JSON of the body without the annotation, SHA-256, first 16 hex chars.
	Hash string
	// Replicas is the replicas drover renders: nil when drover does not manage spec.replicas.
	Replicas *int32
}

// RenderError is a per-pool render failure (a failing tweak patch): RenderFailed for that pool only.
type RenderError struct { //nolint:revive // the name is the API the reconciler and the webhook share
	Pool string
	Err  error
}

// Error implements error.
func (e *RenderError) Error() string {
	return fmt.Sprintf("rendering the workload of pool %q: %v", e.Pool, e.Err)
}

// Unwrap returns the cause.
func (e *RenderError) Unwrap() error { return e.Err }

// errNoTemplate is returned for a spec without exactly one template member (the controller's InvalidSpec
// check normally catches it first).
var errNoTemplate = errors.New("spec.workloadTemplate must have exactly one of statefulSetTemplate and deploymentTemplate")

// protectedPaths are the JSON pointers a tweak patch may not touch.
var protectedPaths = []string{
	"/apiVersion", "/kind", "/metadata/name", "/metadata/namespace", "/metadata/generateName",
	"/metadata/ownerReferences", "/spec/selector", "/status",
}

// ProtectedPaths returns the JSON pointers a tweak patch may not touch, nor anything below them.
func ProtectedPaths() []string { return append([]string(nil), protectedPaths...) }

// Render renders the child of one pool: identity, pool constraints, tweaks, and the replicas rule (the
// template's or a tweak's count is authoritative; none means the live count is left alone). Handing the
// replicas over when they stop being rendered is the caller's job. A failing tweak returns a *RenderError; a spec without exactly one
// template member returns a plain error.
func Render(in Input) (*Result, error) {
	if in.Spec == nil {
		return nil, errors.New("no spec to render")
	}
	kind := in.Spec.TemplateType()
	if kind == "" {
		return nil, errNoTemplate
	}
	idx := matchingIndexes(in.Spec, in.Pool)
	obj := renderBase(in, kind)
	for _, i := range idx {
		var err error
		if obj, err = applyTweak(obj, &in.Spec.WorkloadTweaks[i], i, in.Pool.Name); err != nil {
			return nil, &RenderError{Pool: in.Pool.Name, Err: err}
		}
	}
	if len(idx) > 0 {
		assertIdentity(obj, in) // step 8
	}
	replicas := desiredReplicas(in.Spec, idx)
	setReplicas(obj, replicas)
	body, err := toBody(obj)
	if err != nil {
		return nil, &RenderError{Pool: in.Pool.Name, Err: err}
	}
	hash, err := bodyHash(body)
	if err != nil {
		return nil, &RenderError{Pool: in.Pool.Name, Err: err}
	}
	anns := body.GetAnnotations()
	if anns == nil {
		anns = map[string]string{}
	}
	anns[openyurtv1alpha1.AnnotationRenderedHash] = hash
	body.SetAnnotations(anns)
	return &Result{Body: body, Hash: hash, Replicas: replicas}, nil
}

// workload gives rendering uniform access to a typed Deployment or StatefulSet.
type workload struct {
	obj      client.Object
	selector **metav1.LabelSelector
	template *corev1.PodTemplateSpec
	replicas **int32
}

// partsOf returns the parts of a typed child; obj is a *appsv1.Deployment or *appsv1.StatefulSet.
func partsOf(obj client.Object) workload {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return workload{obj: o, selector: &o.Spec.Selector, template: &o.Spec.Template, replicas: &o.Spec.Replicas}
	case *appsv1.StatefulSet:
		return workload{obj: o, selector: &o.Spec.Selector, template: &o.Spec.Template, replicas: &o.Spec.Replicas}
	default:
		panic(fmt.Sprintf("render: unexpected workload type %T", obj)) // unreachable: only this package builds them
	}
}

// renderBase does steps 1–6: a fresh deep copy of the template with identity and pool constraints.
func renderBase(in Input, kind openyurtv1alpha1.TemplateType) client.Object {
	var obj client.Object
	var meta metav1.ObjectMeta
	if kind == openyurtv1alpha1.DeploymentTemplateType {
		t := in.Spec.WorkloadTemplate.DeploymentTemplate
		meta = t.ObjectMeta
		obj = &appsv1.Deployment{Spec: *t.Spec.DeepCopy()}
	} else {
		t := in.Spec.WorkloadTemplate.StatefulSetTemplate
		meta = t.ObjectMeta
		obj = &appsv1.StatefulSet{Spec: *t.Spec.DeepCopy()}
	}
	adapter, _ := AdapterFor(kind)
	obj.GetObjectKind().SetGroupVersionKind(adapter.GVK())
	obj.SetLabels(maps.Clone(meta.Labels))
	obj.SetAnnotations(maps.Clone(meta.Annotations))
	assertIdentity(obj, in)
	return obj
}

// assertIdentity applies steps 2–6 to obj. It is idempotent, so step 8 calls it again after the tweaks.
func assertIdentity(obj client.Object, in Input) {
	w := partsOf(obj)
	setMeta(obj, in)

	sel := &metav1.LabelSelector{}
	if in.Spec.Selector != nil {
		sel = in.Spec.Selector.DeepCopy()
	}
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[openyurtv1alpha1.LabelPoolName] = in.Pool.Name
	*w.selector = sel

	if w.template.Labels == nil {
		w.template.Labels = map[string]string{}
	}
	w.template.Labels[openyurtv1alpha1.LabelPoolName] = in.Pool.Name

	pod := &w.template.Spec
	if pod.NodeSelector == nil {
		pod.NodeSelector = map[string]string{}
	}
	pod.NodeSelector[openyurtv1beta1.LabelCurrentNodePool] = in.Pool.Name
	pod.Tolerations = append(pod.Tolerations, poolTolerations(pod.Tolerations, in.Pool.Taints)...)
}

// setMeta sets the child's name, namespace, ownerReference, labels and annotations (step 2).
func setMeta(obj client.Object, in Input) {
	if in.Name != "" {
		obj.SetName(in.Name)
		obj.SetGenerateName("")
	} else {
		obj.SetName("")
		obj.SetGenerateName(in.Owner.Name + "-" + in.Pool.Name + "-")
	}
	obj.SetNamespace(in.Namespace)
	var refs []metav1.OwnerReference
	if in.Owner.UID != "" {
		refs = []metav1.OwnerReference{{
			APIVersion: in.Owner.APIVersion, Kind: in.Owner.Kind, Name: in.Owner.Name, UID: in.Owner.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}
	}
	obj.SetOwnerReferences(refs)

	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	if in.Spec.Selector != nil {
		maps.Copy(labels, in.Spec.Selector.MatchLabels)
	}
	labels[openyurtv1alpha1.LabelPoolName] = in.Pool.Name
	if in.Revision != "" {
		labels[openyurtv1alpha1.LabelControllerRevisionHash] = in.Revision
	}
	obj.SetLabels(labels)

	anns := obj.GetAnnotations()
	if anns == nil {
		anns = map[string]string{}
	}
	// drover's own annotations are set by steps 9 and 10 only, never taken from the template or a patch.
	delete(anns, openyurtv1alpha1.AnnotationRenderedHash)
	delete(anns, openyurtv1alpha1.AnnotationAppliedReplicas)
	anns[openyurtv1alpha1.AnnotationRefNodePool] = in.Pool.Name
	obj.SetAnnotations(anns)
}

// poolTolerations returns one {key, Exists, effect} toleration per pool taint that existing does not
// tolerate yet, sorted by key then effect, without duplicates (step 6). Taints without a key are skipped:
// a toleration with an empty key and Exists would tolerate every taint.
func poolTolerations(existing []corev1.Toleration, taints []corev1.Taint) []corev1.Toleration {
	sorted := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		if t.Key != "" {
			sorted = append(sorted, t)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Key != sorted[j].Key {
			return sorted[i].Key < sorted[j].Key
		}
		return sorted[i].Effect < sorted[j].Effect
	})
	var out []corev1.Toleration
	for i := range sorted {
		if tolerated(existing, &sorted[i]) || tolerated(out, &sorted[i]) {
			continue
		}
		out = append(out, corev1.Toleration{Key: sorted[i].Key, Operator: corev1.TolerationOpExists, Effect: sorted[i].Effect})
	}
	return out
}

func tolerated(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), taint, false) {
			return true
		}
	}
	return false
}

// desiredReplicas is the replicas drover renders: the replicas of the last matching tweak that sets them, else the template's.
func desiredReplicas(spec *openyurtv1alpha1.YurtAppDaemonSpec, idx []int) *int32 {
	for k := len(idx) - 1; k >= 0; k-- {
		if r := spec.WorkloadTweaks[idx[k]].Tweaks.Replicas; r != nil {
			return ptr.To(*r)
		}
	}
	var r *int32
	if t := spec.WorkloadTemplate.DeploymentTemplate; t != nil {
		r = t.Spec.Replicas
	} else if t := spec.WorkloadTemplate.StatefulSetTemplate; t != nil {
		r = t.Spec.Replicas
	}
	if r == nil {
		return nil
	}
	return ptr.To(*r)
}

// setReplicas renders spec.replicas and the applied-replicas annotation when r is set, or neither.
func setReplicas(obj client.Object, r *int32) {
	w := partsOf(obj)
	anns := obj.GetAnnotations()
	if r == nil {
		*w.replicas = nil
		delete(anns, openyurtv1alpha1.AnnotationAppliedReplicas)
	} else {
		*w.replicas = ptr.To(*r)
		anns[openyurtv1alpha1.AnnotationAppliedReplicas] = strconv.Itoa(int(*r))
	}
	obj.SetAnnotations(anns)
}

// toBody builds the apply body: apiVersion, kind, the identity metadata and the spec, without
// zero-valued structs, nil maps and null values. Other metadata a patch may have set is not rendered.
func toBody(obj client.Object) (*unstructured.Unstructured, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	meta := metav1.ObjectMeta{
		Name: obj.GetName(), GenerateName: obj.GetGenerateName(), Namespace: obj.GetNamespace(),
		Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), OwnerReferences: obj.GetOwnerReferences(),
	}
	var spec any
	switch o := obj.(type) {
	case *appsv1.Deployment:
		spec = &o.Spec
	case *appsv1.StatefulSet:
		spec = &o.Spec
	}
	m, err := toJSONMap(meta)
	if err != nil {
		return nil, err
	}
	s, err := toJSONMap(spec)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": m, "spec": s}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// bodyHash is the rendered hash: canonical JSON (encoding/json sorts map keys) of the body without
// the rendered-hash annotation, SHA-256, the first 16 hex characters.
func bodyHash(body *unstructured.Unstructured) (string, error) {
	obj := body.Object
	if anns := body.GetAnnotations(); anns != nil {
		if _, ok := anns[openyurtv1alpha1.AnnotationRenderedHash]; ok {
			c := body.DeepCopy()
			unstructured.RemoveNestedField(c.Object, "metadata", "annotations", openyurtv1alpha1.AnnotationRenderedHash)
			obj = c.Object
		}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encoding the rendered body: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16], nil
}
