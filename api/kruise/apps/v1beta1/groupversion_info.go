// Package v1beta1 holds the apps.kruise.io/v1beta1 API served by drover: PersistentPodState, its storage
// version and the hub of its conversions.
//
// The types are wire-compatible with OpenKruise's PersistentPodState v1beta1: same group, version, kind, JSON
// names and required fields. v1beta1 and v1alpha1 hold the same fields; the one rename is the node label keys
// of a topology term, keys here and nodeTopologyKeys in v1alpha1, so a conversion either way loses nothing.
// drover's additions are the CRD's size bounds, the enum of the retention policy and the problem conditions
// of the status; a healthy object's status carries exactly what OpenKruise writes.
//
// The annotation keys, the admission rules and the event reasons of PersistentPodState live here, in the
// version every part of drover works on.
//
// +kubebuilder:object:generate=true
// +groupName=apps.kruise.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.kruise.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &PersistentPodState{}, &PersistentPodStateList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
