// Package v1alpha1 holds the apps.openyurt.io/v1alpha1 APIs served by drover: YurtAppDaemon and its earlier
// name UnitedDaemonSet, which share one set of spec and status types and one controller, and the first
// version of NodePool, which converts through v1beta2.
//
// The types are field-compatible with OpenYurt's YurtAppDaemon v1alpha1 so that manifests written for
// OpenYurt apply unchanged; drover's additions (workloadTweaks, the per-pool summary and counters) are
// optional and default to OpenYurt's behaviour.
//
// +kubebuilder:object:generate=true
// +groupName=apps.openyurt.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.openyurt.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&YurtAppDaemon{}, &YurtAppDaemonList{},
		&UnitedDaemonSet{}, &UnitedDaemonSetList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
