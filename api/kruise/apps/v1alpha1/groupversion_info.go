// Package v1alpha1 holds the apps.kruise.io/v1alpha1 API served by drover: PersistentPodState.
//
// The types are wire-compatible with OpenKruise's PersistentPodState v1alpha1 so that manifests written for
// OpenKruise apply unchanged: same group, version, kind, JSON names and required fields. drover's additions
// are the CRD's size bounds, the enum of the retention policy and the problem conditions of the status; a
// healthy object's status carries exactly what OpenKruise writes.
//
// v1alpha1 is a spoke: objects are stored as v1beta1, the hub, and this version converts to and from it
// (ConvertTo, ConvertFrom). The two versions hold the same fields under the same names but one, the node
// label keys of a topology term (nodeTopologyKeys here, keys in v1beta1), so the conversion loses nothing.
//
// +kubebuilder:object:generate=true
// +groupName=apps.kruise.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.kruise.io", Version: "v1alpha1"}

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
