// Package v1beta1 holds the apps.openyurt.io/v1beta1 API served by drover: NodePool.
//
// The types are field-compatible with OpenYurt's NodePool v1beta1 so that manifests written for OpenYurt
// apply unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=apps.openyurt.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.openyurt.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
