package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// The annotation and label keys, condition types and schema bounds of PersistentPodState are those of the
// hub version; they are repeated here for code that writes v1alpha1 objects.
const (
	AnnotationAutoGeneratePersistentPodState  = kruisev1beta1.AnnotationAutoGeneratePersistentPodState
	AnnotationRequiredPersistentTopology      = kruisev1beta1.AnnotationRequiredPersistentTopology
	AnnotationPreferredPersistentTopology     = kruisev1beta1.AnnotationPreferredPersistentTopology
	AnnotationPersistentPodAnnotations        = kruisev1beta1.AnnotationPersistentPodAnnotations
	AnnotationInjectedPersistentPodState      = kruisev1beta1.AnnotationInjectedPersistentPodState
	AnnotationRestorePersistentPodAnnotations = kruisev1beta1.AnnotationRestorePersistentPodAnnotations
	LabelPersistentPodState                   = kruisev1beta1.LabelPersistentPodState
	LabelValueDisabled                        = kruisev1beta1.LabelValueDisabled
	LabelAggregateToManager                   = kruisev1beta1.LabelAggregateToManager
	GeneratedPreferredWeight                  = kruisev1beta1.GeneratedPreferredWeight

	ConditionStatusSizeLimitReached = kruisev1beta1.ConditionStatusSizeLimitReached
	ConditionTargetUnavailable      = kruisev1beta1.ConditionTargetUnavailable

	MaxTopologyKeys             = kruisev1beta1.MaxTopologyKeys
	MaxPreferredTerms           = kruisev1beta1.MaxPreferredTerms
	MaxPersistentPodAnnotations = kruisev1beta1.MaxPersistentPodAnnotations
	MaxKeyLength                = kruisev1beta1.MaxKeyLength
	MaxNodeTopologyLabels       = kruisev1beta1.MaxNodeTopologyLabels
	MaxConditions               = kruisev1beta1.MaxConditions
)

// PersistentPodStateRetentionPolicyType says when the record of a pod identity is removed.
// +kubebuilder:validation:Enum="";WhenScaled;WhenDeleted
type PersistentPodStateRetentionPolicyType string

// The retention policies, as in the hub version.
const (
	RetainWhenScaled  = PersistentPodStateRetentionPolicyType(kruisev1beta1.RetainWhenScaled)
	RetainWhenDeleted = PersistentPodStateRetentionPolicyType(kruisev1beta1.RetainWhenDeleted)
)

// TargetReference names the workload, in the object's namespace, whose pods are tracked. Matching uses the
// API group, kind and name; the version is ignored.
type TargetReference struct {
	// APIVersion is the target's group/version, e.g. apps/v1. At most 317 characters: a group is a DNS
	// subdomain (253), a version a DNS label (63).
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`
	// Kind is the target's kind, e.g. StatefulSet. At most 63 characters, the longest kind a CRD can declare.
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name is the target's name. At most 253 characters, the longest object name.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// NodeTopologyTerm is a set of node label keys whose values are recorded per pod identity. The field is
// nodeTopologyKeys in this version and keys in v1beta1; that rename is the only difference between the two.
type NodeTopologyTerm struct {
	// NodeTopologyKeys are node label keys, e.g. topology.kubernetes.io/zone.
	// At most 32 (MaxTopologyKeys): every key is recorded for every pod, and real terms name one to three;
	// each at most 317 characters, the longest label key.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=317
	NodeTopologyKeys []string `json:"nodeTopologyKeys"`
}

// PreferredTopologyTerm is a weighted term: a pod created again prefers, with this weight, nodes that carry
// the recorded values of its keys.
type PreferredTopologyTerm struct {
	// Weight is the weight of the preferred node-affinity term, 1 to 100 like a Kubernetes preferred term.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`
	// Preference holds the keys of the term.
	Preference NodeTopologyTerm `json:"preference"`
}

// PersistentPodAnnotation names a pod annotation whose value is recorded per pod identity.
type PersistentPodAnnotation struct {
	// Key is the annotation key. At most 317 characters, the longest annotation key.
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`
}

// PersistentPodStateSpec says which workload is tracked and what is recorded about its pods.
type PersistentPodStateSpec struct {
	// TargetRef is the tracked workload. Immutable.
	TargetRef TargetReference `json:"targetRef"`

	// RequiredPersistentTopology are node label keys recorded per pod and given back to a pod created again
	// as nodeSelector entries: it must land on a node with the same values.
	// +optional
	RequiredPersistentTopology *NodeTopologyTerm `json:"requiredPersistentTopology,omitempty"`

	// PreferredPersistentTopology are weighted terms recorded per pod and given back to a pod created again
	// as preferred node-affinity terms.
	// At most 16 (MaxPreferredTerms): each term becomes an affinity term of every such pod and adds its keys
	// to every record; real objects have one or two.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	PreferredPersistentTopology []PreferredTopologyTerm `json:"preferredPersistentTopology,omitempty"`

	// PersistentPodStateRetentionPolicy says when records are removed: WhenScaled (the default, also for
	// empty) or WhenDeleted.
	// +optional
	PersistentPodStateRetentionPolicy PersistentPodStateRetentionPolicyType `json:"persistentPodStateRetentionPolicy,omitempty"`

	// PersistentPodAnnotations are pod annotation keys whose values are recorded per pod.
	// At most 32 (MaxPersistentPodAnnotations): every value is recorded for every pod, and real objects name
	// one or two.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	PersistentPodAnnotations []PersistentPodAnnotation `json:"persistentPodAnnotations,omitempty"`
}

// PodState is what was recorded about one pod identity (a pod name) the last time it ran.
type PodState struct {
	// NodeName is the node the recorded pod ran on. At most 253 characters, the longest node name.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// NodeTopologyLabels are the node's values of the tracked keys it has; keys it lacks are absent.
	// At most 544 (MaxNodeTopologyLabels): one per key of the spec, whose keys are bounded.
	// +kubebuilder:validation:MaxProperties=544
	// +optional
	NodeTopologyLabels map[string]string `json:"nodeTopologyLabels,omitempty"`
	// Annotations are the pod's values of the persisted annotation keys.
	// At most 32 (MaxPersistentPodAnnotations): one per key of spec.persistentPodAnnotations.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PersistentPodStateStatus is what was recorded about the target's pods.
type PersistentPodStateStatus struct {
	// ObservedGeneration is the metadata.generation the status was written for. Always written.
	ObservedGeneration int64 `json:"observedGeneration"`

	// PodStates maps a pod name to its record. Absent when there is none.
	// Not bounded by count: a target may have any number of replicas, so the controller bounds the
	// object's encoded size instead (etcd refuses objects over about 1.5 MiB), recording fewer pods and
	// setting StatusSizeLimitReached when it would grow past it.
	// +optional
	PodStates map[string]PodState `json:"podStates,omitempty"`

	// Conditions are problem conditions (StatusSizeLimitReached, TargetUnavailable), present only while
	// true: a healthy object has none.
	// At most 8 (MaxConditions): there are two condition types.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PersistentPodState records, per pod identity of a StatefulSet-like workload, the node and node labels the
// pod last ran on (and selected pod annotations), so that a pod created again with the same name is steered
// back to the same topology.
//
// The short name pps is drover's: `kubectl get pps` is what users type. It adds a name and changes none.
//
// v1alpha1 is served for the manifests and clients written for it; objects are stored as v1beta1 and
// converted to and from this version.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=pps
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Target-Kind",type="string",JSONPath=".spec.targetRef.kind",description="The kind of the tracked workload"
// +kubebuilder:printcolumn:name="Target-Name",type="string",JSONPath=".spec.targetRef.name",description="The name of the tracked workload"
// +kubebuilder:printcolumn:name="Retention",type="string",JSONPath=".spec.persistentPodStateRetentionPolicy",priority=1,description="When records are removed"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type PersistentPodState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PersistentPodStateSpec   `json:"spec,omitempty"`
	Status PersistentPodStateStatus `json:"status,omitempty"`
}

// PersistentPodStateList is a list of PersistentPodStates.
//
// +kubebuilder:object:root=true
type PersistentPodStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PersistentPodState `json:"items"`
}
