package v1alpha1

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// v1alpha1 converts to and from the hub, v1beta1, field by field. The two versions hold the same fields; only
// the node label keys of a topology term are renamed (nodeTopologyKeys here, keys in the hub). So every value
// survives a round trip either way, nil and empty lists and maps included, and nothing needs to be carried
// in an annotation. The result never shares a list or a map with the source.

var _ conversion.Convertible = &PersistentPodState{}

// ConvertTo converts pps into hubRaw, a v1beta1 PersistentPodState.
func (pps *PersistentPodState) ConvertTo(hubRaw conversion.Hub) error {
	src := pps
	dst, ok := hubRaw.(*kruisev1beta1.PersistentPodState)
	if !ok {
		return fmt.Errorf("converting PersistentPodState %s/%s to the hub: unexpected type %T", src.Namespace, src.Name, hubRaw)
	}
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.SetGroupVersionKind(kruisev1beta1.GroupVersion.WithKind("PersistentPodState"))
	dst.Spec = kruisev1beta1.PersistentPodStateSpec{
		TargetRef: kruisev1beta1.TargetReference{
			APIVersion: src.Spec.TargetRef.APIVersion, Kind: src.Spec.TargetRef.Kind, Name: src.Spec.TargetRef.Name},
		PersistentPodStateRetentionPolicy: kruisev1beta1.PersistentPodStateRetentionPolicyType(src.Spec.PersistentPodStateRetentionPolicy),
	}
	if t := src.Spec.RequiredPersistentTopology; t != nil {
		dst.Spec.RequiredPersistentTopology = &kruisev1beta1.NodeTopologyTerm{Keys: slices.Clone(t.NodeTopologyKeys)}
	}
	if terms := src.Spec.PreferredPersistentTopology; terms != nil {
		dst.Spec.PreferredPersistentTopology = make([]kruisev1beta1.PreferredTopologyTerm, len(terms))
		for i, t := range terms {
			dst.Spec.PreferredPersistentTopology[i] = kruisev1beta1.PreferredTopologyTerm{
				Weight: t.Weight, Preference: kruisev1beta1.NodeTopologyTerm{Keys: slices.Clone(t.Preference.NodeTopologyKeys)}}
		}
	}
	if list := src.Spec.PersistentPodAnnotations; list != nil {
		dst.Spec.PersistentPodAnnotations = make([]kruisev1beta1.PersistentPodAnnotation, len(list))
		for i, a := range list {
			dst.Spec.PersistentPodAnnotations[i] = kruisev1beta1.PersistentPodAnnotation{Key: a.Key}
		}
	}
	dst.Status = kruisev1beta1.PersistentPodStateStatus{
		ObservedGeneration: src.Status.ObservedGeneration,
		Conditions:         slices.Clone(src.Status.Conditions),
	}
	if states := src.Status.PodStates; states != nil {
		dst.Status.PodStates = make(map[string]kruisev1beta1.PodState, len(states))
		for pod, s := range states {
			dst.Status.PodStates[pod] = kruisev1beta1.PodState{NodeName: s.NodeName,
				NodeTopologyLabels: maps.Clone(s.NodeTopologyLabels), Annotations: maps.Clone(s.Annotations)}
		}
	}
	return nil
}

// ConvertFrom converts hubRaw, a v1beta1 PersistentPodState, into pps.
func (pps *PersistentPodState) ConvertFrom(hubRaw conversion.Hub) error {
	dst := pps
	src, ok := hubRaw.(*kruisev1beta1.PersistentPodState)
	if !ok {
		return fmt.Errorf("converting PersistentPodState %s/%s from the hub: unexpected type %T", dst.Namespace, dst.Name, hubRaw)
	}
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.SetGroupVersionKind(GroupVersion.WithKind("PersistentPodState"))
	dst.Spec = PersistentPodStateSpec{
		TargetRef: TargetReference{
			APIVersion: src.Spec.TargetRef.APIVersion, Kind: src.Spec.TargetRef.Kind, Name: src.Spec.TargetRef.Name},
		PersistentPodStateRetentionPolicy: PersistentPodStateRetentionPolicyType(src.Spec.PersistentPodStateRetentionPolicy),
	}
	if t := src.Spec.RequiredPersistentTopology; t != nil {
		dst.Spec.RequiredPersistentTopology = &NodeTopologyTerm{NodeTopologyKeys: slices.Clone(t.Keys)}
	}
	if terms := src.Spec.PreferredPersistentTopology; terms != nil {
		dst.Spec.PreferredPersistentTopology = make([]PreferredTopologyTerm, len(terms))
		for i, t := range terms {
			dst.Spec.PreferredPersistentTopology[i] = PreferredTopologyTerm{
				Weight: t.Weight, Preference: NodeTopologyTerm{NodeTopologyKeys: slices.Clone(t.Preference.Keys)}}
		}
	}
	if list := src.Spec.PersistentPodAnnotations; list != nil {
		dst.Spec.PersistentPodAnnotations = make([]PersistentPodAnnotation, len(list))
		for i, a := range list {
			dst.Spec.PersistentPodAnnotations[i] = PersistentPodAnnotation{Key: a.Key}
		}
	}
	dst.Status = PersistentPodStateStatus{
		ObservedGeneration: src.Status.ObservedGeneration,
		Conditions:         slices.Clone(src.Status.Conditions),
	}
	if states := src.Status.PodStates; states != nil {
		dst.Status.PodStates = make(map[string]PodState, len(states))
		for pod, s := range states {
			dst.Status.PodStates[pod] = PodState{NodeName: s.NodeName,
				NodeTopologyLabels: maps.Clone(s.NodeTopologyLabels), Annotations: maps.Clone(s.Annotations)}
		}
	}
	return nil
}

// ToHub returns pps converted to the hub version, sharing nothing with it.
func ToHub(pps *PersistentPodState) *kruisev1beta1.PersistentPodState {
	hub := &kruisev1beta1.PersistentPodState{}
	_ = pps.ConvertTo(hub) // fails only for another hub type
	return hub
}

// FromHub returns hub converted to v1alpha1, sharing nothing with it.
func FromHub(hub *kruisev1beta1.PersistentPodState) *PersistentPodState {
	pps := &PersistentPodState{}
	_ = pps.ConvertFrom(hub) // fails only for another hub type
	return pps
}

// hubKeysPath matches the hub's path of the keys of a topology term, or of one of its keys.
var hubKeysPath = regexp.MustCompile(`^(spec\.(?:requiredPersistentTopology|preferredPersistentTopology\[\d+\]\.preference))\.keys(\[\d+\])?$`)

// FieldPathFromHub returns the v1alpha1 path of a field path of the hub: the keys of a topology term
// (spec.requiredPersistentTopology.keys[0]) are nodeTopologyKeys here; every other path is the same.
func FieldPathFromHub(path string) string {
	return hubKeysPath.ReplaceAllString(path, "${1}.nodeTopologyKeys${2}")
}

// ErrorsFromHub returns copies of errs, field errors of a hub object, at the paths of v1alpha1.
func ErrorsFromHub(errs field.ErrorList) field.ErrorList {
	if errs == nil {
		return nil
	}
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		c := *e
		c.Field = FieldPathFromHub(e.Field)
		out[i] = &c
	}
	return out
}
