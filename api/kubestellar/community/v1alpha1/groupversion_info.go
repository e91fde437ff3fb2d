// Package v1alpha1 holds the community.kubestellar.io/v1alpha1 API served by drover: StagedBindingPolicy.
//
// The types are wire-compatible with the KubeStellar workload stager's StagedBindingPolicy, so that a
// manifest written for the stager applies unchanged and behaves as its README says: same group, version,
// kind, scope and JSON names (spec.downsync, spec.stages[].name, clusterSelectors, filter, condition and
// status.activeStage). Everything else is a drover addition, optional and defaulting to the stager's
// behaviour: the rollout mode, pausing, failure conditions, soak and deadline timers, approvals, and a
// status that records each stage's history. docs/stagedbindingpolicy.md is the user guide.
//
// +kubebuilder:object:generate=true
// +groupName=community.kubestellar.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "community.kubestellar.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &StagedBindingPolicy{}, &StagedBindingPolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
