package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotation and label keys of the PersistentPodState API. The kruise.io keys keep OpenKruise's names and
// value formats, so workloads annotated for OpenKruise are handled unchanged; drover's own keys are under
// drover.dev/.
const (
	// AnnotationAutoGeneratePersistentPodState is on a workload: exactly "true" makes drover create and keep a
	// PersistentPodState for it from the two topology annotations below. Any other value counts as off.
	AnnotationAutoGeneratePersistentPodState = "kruise.io/auto-generate-persistent-pod-state"
	// AnnotationRequiredPersistentTopology is on a workload: a comma list of node label keys, the generated
	// object's spec.requiredPersistentTopology.keys.
	AnnotationRequiredPersistentTopology = "kruise.io/required-persistent-topology"
	// AnnotationPreferredPersistentTopology is on a workload: a comma list of node label keys, the generated
	// object's one preferred term, with weight GeneratedPreferredWeight.
	AnnotationPreferredPersistentTopology = "kruise.io/preferred-persistent-topology"
	// AnnotationPersistentPodAnnotations is on a workload: a comma list of pod annotation keys, the generated
	// object's spec.persistentPodAnnotations.
	AnnotationPersistentPodAnnotations = "kruise.io/persistent-pod-annotations"
	// AnnotationInjectedPersistentPodState is on a pod: the name of the PersistentPodState whose recorded
	// state the pod webhook injected into it.
	AnnotationInjectedPersistentPodState = "kruise.io/injected-persistent-pod-state"
	// AnnotationRestorePersistentPodAnnotations is on a PersistentPodState (or on a workload, copied to the
	// generated object): "true" opts in to restoring the recorded annotations on a pod created again.
	AnnotationRestorePersistentPodAnnotations = "drover.dev/restore-persistent-pod-annotations"
	// LabelPersistentPodState on a namespace or a pod, with the value LabelValueDisabled, keeps the pod
	// webhook away from the pods of that namespace or from that pod.
	LabelPersistentPodState = "drover.dev/persistentpodstate"
	// LabelValueDisabled is the value of LabelPersistentPodState that excludes.
	LabelValueDisabled = "disabled"
	// LabelAggregateToManager with the value "true" on a ClusterRole aggregates its rules into the manager's
	// role, to grant reading custom workload kinds.
	LabelAggregateToManager = "drover.dev/aggregate-to-manager"
	// GeneratedPreferredWeight is the weight of the preferred term generated from
	// AnnotationPreferredPersistentTopology.
	GeneratedPreferredWeight = 100
)

// Condition types of status.conditions (a drover addition). They are problem conditions: present only while
// true, so a healthy object has no conditions.
const (
	// ConditionStatusSizeLimitReached is true while some pods are not recorded because the object would grow
	// past the status size limit.
	ConditionStatusSizeLimitReached = "StatusSizeLimitReached"
	// ConditionTargetUnavailable is true while the target cannot be used: its kind is not allowed, not served
	// or not readable.
	ConditionTargetUnavailable = "TargetUnavailable"
)

// Bounds of the CRD schema. The markers repeat the numbers (they must be literals); the CRD test checks both
// agree.
const (
	// MaxTopologyKeys bounds the keys of one topology term. Every key is recorded for every pod in
	// status.podStates, so keys multiply the object's size; real objects name one to three keys (zone,
	// hostname), and a node carries few labels that make sense to pin to.
	MaxTopologyKeys = 32
	// MaxPreferredTerms bounds spec.preferredPersistentTopology. Each term becomes one preferred node-affinity
	// term of every pod created again and adds its keys to every record; real objects have one or two.
	MaxPreferredTerms = 16
	// MaxPersistentPodAnnotations bounds spec.persistentPodAnnotations. Every key's value (an annotation value
	// may be large) is recorded for every pod; real objects name one or two (a CNI's IP annotation).
	MaxPersistentPodAnnotations = 32
	// MaxKeyLength bounds a label or annotation key: a qualified name is a DNS subdomain prefix of at most 253
	// characters, "/" and a name of at most 63.
	MaxKeyLength = 317
	// MaxNodeTopologyLabels bounds one record's nodeTopologyLabels: one label per key of the spec, required
	// and preferred.
	MaxNodeTopologyLabels = MaxTopologyKeys * (1 + MaxPreferredTerms)
	// MaxConditions bounds status.conditions: there are two problem condition types, and room for a few more.
	MaxConditions = 8
)

// PersistentPodStateRetentionPolicyType says when the record of a pod identity is removed.
// +kubebuilder:validation:Enum="";WhenScaled;WhenDeleted
type PersistentPodStateRetentionPolicyType string

const (
	// RetainWhenScaled removes the record of an identity once it is outside the target's replicas (scaled
	// down), and all records when the target is deleted. It is the default: empty behaves the same.
	RetainWhenScaled PersistentPodStateRetentionPolicyType = "WhenScaled"
	// RetainWhenDeleted keeps the records of scaled-down identities, removing them all only when the target
	// is deleted.
	RetainWhenDeleted PersistentPodStateRetentionPolicyType = "WhenDeleted"
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

// NodeTopologyTerm is a set of node label keys whose values are recorded per pod identity. The field is keys
// in this version and nodeTopologyKeys in v1alpha1; that rename is the only difference between the two.
type NodeTopologyTerm struct {
	// Keys are node label keys, e.g. topology.kubernetes.io/zone.
	// At most 32 (MaxTopologyKeys): every key is recorded for every pod, and real terms name one to three;
	// each at most 317 characters, the longest label key.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=317
	Keys []string `json:"keys"`
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
// Objects are stored in v1beta1; every other version is converted to and from it.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
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
