// Package v1beta1 holds the apps.openyurt.io/v1beta1 API served by drover: NodePool.
//
// The types are field-compatible with OpenYurt's NodePool v1beta1 so that manifests written for OpenYurt
// apply unchanged. NodePools are stored in v1beta2, the hub this version converts through.
//
// +kubebuilder:object:generate=true
// +groupName=apps.openyurt.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.openyurt.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &NodePool{}, &NodePoolList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
