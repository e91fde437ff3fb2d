package v1alpha1

import (
	"k8s.io/apimachinery/pkg/types"
)

// Finalizers KubeStellar puts on its objects.
const (
	// FinalizerBindingPolicy is added to a BindingPolicy by KubeStellar's binding controller on its first sync
	// and removed while the policy is being deleted.
	FinalizerBindingPolicy = "bindingpolicy.kubestellar.io/kscontroller"
	// FinalizerObjectCleanup is added to a Binding by KubeStellar's transport controller, which removes it once
	// the propagated objects are cleaned up.
	FinalizerObjectCleanup = "transport.kubestellar.io/object-cleanup"
)

// Labels of a CombinedStatus, naming its workload object and BindingPolicy. KubeStellar writes exactly these
// five and rewrites an object that carries any other number of labels.
const (
	// LabelCombinedStatusAPIGroup holds the workload object's API group (no version), empty for the core group.
	LabelCombinedStatusAPIGroup = "status.kubestellar.io/api-group"
	// LabelCombinedStatusResource holds the workload object's resource, lowercase plural.
	LabelCombinedStatusResource = "status.kubestellar.io/resource"
	// LabelCombinedStatusNamespace holds the workload object's namespace, empty for cluster-scoped objects.
	LabelCombinedStatusNamespace = "status.kubestellar.io/namespace"
	// LabelCombinedStatusName holds the workload object's name.
	LabelCombinedStatusName = "status.kubestellar.io/name"
	// LabelCombinedStatusBindingPolicy holds the name of the BindingPolicy (and of its Binding).
	LabelCombinedStatusBindingPolicy = "status.kubestellar.io/binding-policy"
)

// ReportNamespace holds the CombinedStatus objects of cluster-scoped workload objects. KubeStellar creates it in
// the workload description space when its status controller starts.
const ReportNamespace = "kubestellar-report"

// CombinedStatusName returns the name of the CombinedStatus of a workload object and a BindingPolicy: the two
// UIDs joined by a dot.
func CombinedStatusName(objectUID, bindingPolicyUID types.UID) string {
	return string(objectUID) + "." + string(bindingPolicyUID)
}

// Labels and annotations KubeStellar puts on or reads from workload objects and their wrapped copies.
const (
	// LabelSingletonStatus, with value "true", is on a workload object while its status is copied back from
	// its single cluster.
	LabelSingletonStatus = "managed-by.kubestellar.io/singletonstatus"
	// LabelMultiWECStatus, with value "true", is on a workload object while its status is combined from
	// several clusters.
	LabelMultiWECStatus = "managed-by.kubestellar.io/multiwecstatus"
	// LabelExecutingCount is promised by KubeStellar's API documentation for workload objects, but no v0.30.0
	// code writes it.
	LabelExecutingCount = "kubestellar.io/executing-count"
	// KeySourceRef is the source reference of a WorkStatus object in the inventory space.
	KeySourceRef = "managed-by.kubestellar.io/sourceRef"
	// LabelOriginBinding on a wrapped object (a ManifestWork in the inventory space) holds the Binding name.
	LabelOriginBinding = "transport.kubestellar.io/originOwnerReferenceBindingKey"
	// LabelOriginWDS on wrapped objects and returned state holds the name of the workload description space.
	LabelOriginWDS = "transport.kubestellar.io/originWdsName"
	// AnnotationOriginBindingGeneration on a wrapped object holds the generation of its Binding.
	AnnotationOriginBindingGeneration = "transport.kubestellar.io/originOwnerReferenceBindingGeneration"
	// AnnotationExpandTemplates, with value "true", on a workload object asks for Go-template expansion per
	// cluster.
	AnnotationExpandTemplates = "control.kubestellar.io/expand-templates"
	// AnnotationPreserve, with value PreserveNodePort, on a Service keeps its nodePort when it is propagated.
	AnnotationPreserve = "control.kubestellar.io/preserve"
	// PreserveNodePort is the value of AnnotationPreserve that keeps a Service's nodePort.
	PreserveNodePort = "nodeport"
	// CustomizationPropertiesNamespace, in the inventory space, holds per-cluster property ConfigMaps named
	// like their cluster.
	CustomizationPropertiesNamespace = "customization-properties"
	// ValidationErrorKeyPrefix is a key prefix KubeStellar defines but does not use.
	ValidationErrorKeyPrefix = "validation-error.kubestellar.io/"
)

// ConditionType is the type of a BindingPolicyCondition.
type ConditionType string

const (
	// TypeReady is defined, and shown by a printer column of BindingPolicy, but KubeStellar v0.30.0 never
	// writes it.
	TypeReady ConditionType = "Ready"
	// TypeSynced is defined, and shown by a printer column of BindingPolicy, but KubeStellar v0.30.0 never
	// writes it.
	TypeSynced ConditionType = "Synced"
	// TypeStatusCollectorsAvailable says whether every StatusCollector the Binding names exists and is valid.
	// It is the only condition KubeStellar v0.30.0 writes: on the Binding, then copied to the BindingPolicy.
	TypeStatusCollectorsAvailable ConditionType = "StatusCollectorsAvailable"
)

// ConditionReason is the reason of a BindingPolicyCondition.
type ConditionReason string

const (
	// ReasonAvailable is defined for the Ready condition.
	ReasonAvailable ConditionReason = "Available"
	// ReasonUnavailable is defined for the Ready condition.
	ReasonUnavailable ConditionReason = "Unavailable"
	// ReasonCreating is defined for the Ready condition.
	ReasonCreating ConditionReason = "Creating"
	// ReasonDeleting is defined for the Ready condition.
	ReasonDeleting ConditionReason = "Deleting"
	// ReasonReconcileSuccess goes with StatusCollectorsAvailable True and the message
	// "All StatusCollector(s) are available".
	ReasonReconcileSuccess ConditionReason = "ReconcileSuccess"
	// ReasonReconcileError goes with StatusCollectorsAvailable False and the message
	// "Missing StatusCollector(s) [a b]" (the sorted missing names).
	ReasonReconcileError ConditionReason = "ReconcileError"
	// ReasonReconcilePaused is defined but not written by KubeStellar v0.30.0.
	ReasonReconcilePaused ConditionReason = "ReconcilePaused"
)

// Messages of the StatusCollectorsAvailable condition, as KubeStellar writes them.
const (
	// MessageStatusCollectorsAvailable goes with StatusCollectorsAvailable True (ReasonReconcileSuccess).
	MessageStatusCollectorsAvailable = "All StatusCollector(s) are available"
	// MessageStatusCollectorsMissingFormat, formatted with the sorted []string of missing collector names
	// ("Missing StatusCollector(s) [a b]"), goes with StatusCollectorsAvailable False (ReasonReconcileError).
	MessageStatusCollectorsMissingFormat = "Missing StatusCollector(s) %s"
)

// Condition words KubeStellar defines for BindingPolicies but does not use.
const (
	// BindingPolicyConditionSatisfied would say that a BindingPolicy is satisfied.
	BindingPolicyConditionSatisfied = "BindingPolicySatisfied"
	// BindingPolicyConditionMisconfigured would say that a BindingPolicy is configured wrongly.
	BindingPolicyConditionMisconfigured = "BindingPolicyMisconfigured"
)
