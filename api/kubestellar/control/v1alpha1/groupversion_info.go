// Package v1alpha1 declares KubeStellar's control.kubestellar.io/v1alpha1 API: BindingPolicy, Binding,
// StatusCollector and CombinedStatus.
//
// drover does not serve this group: KubeStellar's controllers own these objects and install their CRDs. drover
// declares the types itself so that its controllers can read and write KubeStellar objects, and they are
// wire-compatible with KubeStellar v0.30.0: same group, version, kinds, JSON keys, required keys and empty
// values. A key KubeStellar always sends, even when zero, carries no omitempty here either, so that writing
// a zero value still passes the installed CRD's required checks. The CRDs generated from this package
// (config/crd/kubestellar) stand in for KubeStellar's in tests and on the local cluster only; `make install`
// and `make deploy` never install them. CustomTransform, the fifth kind of the group, is not declared.
//
// +kubebuilder:object:generate=true
// +groupName=control.kubestellar.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "control.kubestellar.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&BindingPolicy{}, &BindingPolicyList{},
		&Binding{}, &BindingList{},
		&StatusCollector{}, &StatusCollectorList{},
		&CombinedStatus{}, &CombinedStatusList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
