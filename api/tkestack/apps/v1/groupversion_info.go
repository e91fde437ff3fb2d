// Package v1 holds the apps.tkestack.io/v1 API served by drover: TApp.
//
// The types are wire-compatible with TKEStack's TApp v1 so that manifests written for TKEStack's tapp-controller
// apply unchanged. drover's additions are optional fields whose absence keeps TKEStack's behaviour.
//
// +kubebuilder:object:generate=true
// +groupName=apps.tkestack.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.tkestack.io", Version: "v1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &TApp{}, &TAppList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
