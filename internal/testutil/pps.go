package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// PPSWrapper builds a PersistentPodState.
type PPSWrapper struct {
	kruisev1alpha1.PersistentPodState
}

// MakePPS starts a PersistentPodState in ns targeting the native StatefulSet target.
func MakePPS(name, ns, target string) *PPSWrapper {
	return &PPSWrapper{kruisev1alpha1.PersistentPodState{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruisev1alpha1.GroupVersion.String(), Kind: "PersistentPodState"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1},
		Spec: kruisev1alpha1.PersistentPodStateSpec{
			TargetRef: kruisev1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: target},
		},
	}}
}

// Obj returns a copy of the PersistentPodState built so far.
func (w *PPSWrapper) Obj() *kruisev1alpha1.PersistentPodState { return w.DeepCopy() }

// Hub returns the PersistentPodState built so far converted to the hub version, v1beta1, the version the
// controller and the webhooks work on.
func (w *PPSWrapper) Hub() *kruisev1beta1.PersistentPodState {
	return kruisev1alpha1.ToHub(&w.PersistentPodState)
}

// Target sets spec.targetRef.
func (w *PPSWrapper) Target(apiVersion, kind, name string) *PPSWrapper {
	w.Spec.TargetRef = kruisev1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
	return w
}

// Required sets the required topology keys.
func (w *PPSWrapper) Required(keys ...string) *PPSWrapper {
	w.Spec.RequiredPersistentTopology = &kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: keys}
	return w
}

// Preferred appends a preferred term.
func (w *PPSWrapper) Preferred(weight int32, keys ...string) *PPSWrapper {
	w.Spec.PreferredPersistentTopology = append(w.Spec.PreferredPersistentTopology, kruisev1alpha1.PreferredTopologyTerm{
		Weight: weight, Preference: kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: keys}})
	return w
}

// PersistAnnotations sets the persisted pod annotation keys.
func (w *PPSWrapper) PersistAnnotations(keys ...string) *PPSWrapper {
	w.Spec.PersistentPodAnnotations = nil
	for _, k := range keys {
		w.Spec.PersistentPodAnnotations = append(w.Spec.PersistentPodAnnotations, kruisev1alpha1.PersistentPodAnnotation{Key: k})
	}
	return w
}

// Retention sets the retention policy.
func (w *PPSWrapper) Retention(p kruisev1beta1.PersistentPodStateRetentionPolicyType) *PPSWrapper {
	w.Spec.PersistentPodStateRetentionPolicy = kruisev1alpha1.PersistentPodStateRetentionPolicyType(p)
	return w
}

// Annotation sets one annotation of the PersistentPodState.
func (w *PPSWrapper) Annotation(k, v string) *PPSWrapper {
	w.Annotations = mergeMap(w.Annotations, map[string]string{k: v})
	return w
}

// UID sets the UID.
func (w *PPSWrapper) UID(uid types.UID) *PPSWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Created sets the creation timestamp.
func (w *PPSWrapper) Created(t time.Time) *PPSWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// State records an entry for pod in the status.
func (w *PPSWrapper) State(pod, node string, labels map[string]string, annotations map[string]string) *PPSWrapper {
	if w.Status.PodStates == nil {
		w.Status.PodStates = map[string]kruisev1alpha1.PodState{}
	}
	w.Status.PodStates[pod] = kruisev1alpha1.PodState{NodeName: node, NodeTopologyLabels: copyMap(labels), Annotations: copyMap(annotations)}
	return w
}

// ObservedGeneration sets status.observedGeneration.
func (w *PPSWrapper) ObservedGeneration(g int64) *PPSWrapper {
	w.Status.ObservedGeneration = g
	return w
}

// StatefulSetWrapper builds a native StatefulSet.
type StatefulSetWrapper struct{ appsv1.StatefulSet }

// MakeStatefulSet starts a StatefulSet with replicas, a selector app=<name> and one nginx container.
func MakeStatefulSet(name, ns string, replicas int32) *StatefulSetWrapper {
	labels := map[string]string{"app": name}
	return &StatefulSetWrapper{appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
			},
		},
	}}
}

// Obj returns a copy of the StatefulSet built so far.
func (w *StatefulSetWrapper) Obj() *appsv1.StatefulSet { return w.DeepCopy() }

// UID sets the UID.
func (w *StatefulSetWrapper) UID(uid types.UID) *StatefulSetWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Annotation sets one annotation of the StatefulSet.
func (w *StatefulSetWrapper) Annotation(k, v string) *StatefulSetWrapper {
	w.Annotations = mergeMap(w.Annotations, map[string]string{k: v})
	return w
}

// Start sets spec.ordinals.start.
func (w *StatefulSetWrapper) Start(start int32) *StatefulSetWrapper {
	w.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: start}
	return w
}

// PodWrapper builds a Pod.
type PodWrapper struct{ corev1.Pod }

// MakePod starts a Pod with one nginx container.
func MakePod(name, ns string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}}
}

// Obj returns a copy of the Pod built so far.
func (w *PodWrapper) Obj() *corev1.Pod { return w.DeepCopy() }

// UID sets the UID.
func (w *PodWrapper) UID(uid types.UID) *PodWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// ControlledBy sets the controller ownerReference.
func (w *PodWrapper) ControlledBy(apiVersion, kind, name string, uid types.UID) *PodWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
	return w
}

// Node sets spec.nodeName.
func (w *PodWrapper) Node(node string) *PodWrapper {
	w.Spec.NodeName = node
	return w
}

// Ready sets phase Running and the Ready condition.
func (w *PodWrapper) Ready(ready bool) *PodWrapper {
	w.Status.Phase = corev1.PodRunning
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	w.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return w
}

// Phase sets status.phase.
func (w *PodWrapper) Phase(p corev1.PodPhase) *PodWrapper {
	w.Status.Phase = p
	return w
}

// Annotation sets one annotation.
func (w *PodWrapper) Annotation(k, v string) *PodWrapper {
	w.Annotations = mergeMap(w.Annotations, map[string]string{k: v})
	return w
}

// Label sets one label.
func (w *PodWrapper) Label(k, v string) *PodWrapper {
	w.Labels = mergeMap(w.Labels, map[string]string{k: v})
	return w
}

// NodeSelector sets one nodeSelector entry.
func (w *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	w.Spec.NodeSelector = mergeMap(w.Spec.NodeSelector, map[string]string{k: v})
	return w
}

// Terminating sets a deletionTimestamp (with a finalizer, as the fake client requires).
func (w *PodWrapper) Terminating() *PodWrapper {
	w.DeletionTimestamp = ptr.To(metav1.Now())
	w.Finalizers = append(w.Finalizers, "drover.dev/test")
	return w
}

// ControlledBy sets the controller ownerReference of the PersistentPodState (no blockOwnerDeletion, as the
// generator writes it).
func (w *PPSWrapper) ControlledBy(apiVersion, kind, name string, uid types.UID) *PPSWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
	return w
}

// Generation sets metadata.generation.
func (w *PPSWrapper) Generation(g int64) *PPSWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// NoReplicas leaves spec.replicas unset.
func (w *StatefulSetWrapper) NoReplicas() *StatefulSetWrapper {
	w.Spec.Replicas = nil
	return w
}

// Deleting sets a deletionTimestamp (with a finalizer, as the fake client requires).
func (w *StatefulSetWrapper) Deleting() *StatefulSetWrapper {
	w.DeletionTimestamp = ptr.To(metav1.Now())
	w.Finalizers = append(w.Finalizers, "drover.dev/test")
	return w
}

// ResourceVersion sets metadata.resourceVersion.
func (w *StatefulSetWrapper) ResourceVersion(rv string) *StatefulSetWrapper {
	w.ObjectMeta.ResourceVersion = rv
	return w
}

// ResourceVersion sets metadata.resourceVersion.
func (w *PodWrapper) ResourceVersion(rv string) *PodWrapper {
	w.ObjectMeta.ResourceVersion = rv
	return w
}

// CustomKindCRD returns the CRD of the sample custom workload kind (KVStore, in
// config/samples/persistentpodstate-custom-kind.yaml under root), renamed to kind (with the given plural) when
// kind is not KVStore, so that tests can make kinds of their own. It is unstructured: drover's scheme does
// not know CRDs.
func CustomKindCRD(root, kind, plural string) (*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Clean(filepath.Join(root, "config", "samples", "persistentpodstate-custom-kind.yaml")))
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the custom-kind sample has no CustomResourceDefinition")
			}
			return nil, fmt.Errorf("decoding the custom-kind sample: %w", err)
		}
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			return nil, err
		}
		if kind != crd.Spec.Names.Kind {
			crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural}
			crd.Name = plural + "." + crd.Spec.Group
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			return nil, err
		}
		out := &unstructured.Unstructured{Object: obj}
		out.SetAPIVersion("apiextensions.k8s.io/v1")
		out.SetKind("CustomResourceDefinition")
		return out, nil
	}
}

// MakeCustomWorkload returns an object of a custom kind of the sample's group (demo.drover.dev/v1alpha1)
// with spec.size and the annotations asking for a generated PersistentPodState with the required keys and
// persisted annotation keys given.
func MakeCustomWorkload(ns, kind, name string, size int64, required, persisted string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": size}}}
	u.SetAPIVersion("demo.drover.dev/v1alpha1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	ann := map[string]string{
		kruisev1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		kruisev1alpha1.AnnotationRequiredPersistentTopology:     required,
	}
	if persisted != "" {
		ann[kruisev1alpha1.AnnotationPersistentPodAnnotations] = persisted
	}
	u.SetAnnotations(ann)
	return u
}
