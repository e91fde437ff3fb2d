package v1alpha1

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Owner is what YurtAppDaemon and UnitedDaemonSet have in common: the one generic controller and webhook
// work on this interface, so no code is copied per kind.
// +kubebuilder:object:generate=false
type Owner interface {
	client.Object
	// DaemonSpec returns the spec, for reading and writing.
	DaemonSpec() *YurtAppDaemonSpec
	// DaemonStatus returns the status, for reading and writing.
	DaemonStatus() *YurtAppDaemonStatus
}

// DaemonSpec returns the spec.
func (o *YurtAppDaemon) DaemonSpec() *YurtAppDaemonSpec { return &o.Spec }

// DaemonStatus returns the status.
func (o *YurtAppDaemon) DaemonStatus() *YurtAppDaemonStatus { return &o.Status }

// DaemonSpec returns the spec.
func (o *UnitedDaemonSet) DaemonSpec() *YurtAppDaemonSpec { return &o.Spec }

// DaemonStatus returns the status.
func (o *UnitedDaemonSet) DaemonStatus() *YurtAppDaemonStatus { return &o.Status }

// TemplateType returns the kind of the template's member, or "" when not exactly one is set.
func (s *YurtAppDaemonSpec) TemplateType() TemplateType {
	switch {
	case s.WorkloadTemplate.DeploymentTemplate != nil && s.WorkloadTemplate.StatefulSetTemplate == nil:
		return DeploymentTemplateType
	case s.WorkloadTemplate.StatefulSetTemplate != nil && s.WorkloadTemplate.DeploymentTemplate == nil:
		return StatefulSetTemplateType
	default:
		return ""
	}
}
