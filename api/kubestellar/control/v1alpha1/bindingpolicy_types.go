package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindingPolicySpec says which workload objects go to which clusters.
type BindingPolicySpec struct {
	// ClusterSelectors choose the destination clusters (the "where"). A cluster is chosen when the labels of its
	// inventory object, an OCM ManagedCluster in the inventory space, match at least one selector. An absent or
	// empty list chooses no cluster; an empty selector `{}` chooses every cluster.
	// +optional
	ClusterSelectors []metav1.LabelSelector `json:"clusterSelectors,omitempty"`

	// Downsync chooses the workload objects (the "what") and how they are propagated. An object is chosen when
	// it passes at least one clause. The installed CRD requires each clause to carry at least one of the keys
	// apiGroup, resources, namespaces, namespaceSelectors, objectSelectors and objectNames.
	// +optional
	Downsync []DownsyncPolicyClause `json:"downsync,omitempty"`
}

// DownsyncPolicyClause is one clause of a BindingPolicy's downsync list: a test that chooses objects and the
// way the chosen objects are propagated. All keys of both parts sit flat in one JSON object.
type DownsyncPolicyClause struct {
	DownsyncObjectTest `json:",inline"`
	DownsyncModulation `json:",inline"`
}

// DownsyncObjectTest is a predicate on workload objects. An object passes when it meets every criterion; an
// absent or empty list sets no constraint.
type DownsyncObjectTest struct {
	// APIGroup is the API group (never the version) an object must belong to: nil accepts every group, the empty
	// string is the core group. KubeStellar's own clients send null for nil, which the API server drops, so a
	// stored object simply lacks the key; leaving it out is the same on the wire.
	// +optional
	APIGroup *string `json:"apiGroup,omitempty"`

	// Resources are lowercase plural resource names; "*" accepts every resource and should then be the only
	// entry.
	// +optional
	Resources []string `json:"resources,omitempty"`

	// Namespaces are the acceptable namespaces; "*" accepts any, and is how cluster-scoped objects (whose
	// namespace is empty) are matched.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// NamespaceSelectors: at least one must match the labels of the object's Namespace. A `{}` selector in the
	// list accepts every object, cluster-scoped ones included. An object whose Namespace cannot be read does not
	// pass.
	// +optional
	NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`

	// ObjectSelectors: at least one must match the object's labels.
	// +optional
	ObjectSelectors []metav1.LabelSelector `json:"objectSelectors,omitempty"`

	// ObjectNames are the acceptable object names; "*" accepts every name.
	// +optional
	ObjectNames []string `json:"objectNames,omitempty"`
}

// DownsyncModulation says how the chosen objects are propagated. When several clauses choose the same object,
// the booleans are ORed and the collector names united.
type DownsyncModulation struct {
	// CreateOnly: an object that already exists in a destination cluster is not updated there.
	// +optional
	CreateOnly bool `json:"createOnly,omitempty"`

	// StatusCollectors are names of (cluster-scoped) StatusCollectors applied to the chosen objects. Names are
	// not checked at admission; missing ones are reported in the StatusCollectorsAvailable condition.
	// +optional
	StatusCollectors []string `json:"statusCollectors,omitempty"`

	// WantSingletonReportedState asks for the status of an object that goes to exactly one cluster to be
	// copied from that cluster back into the object.
	// +optional
	WantSingletonReportedState bool `json:"wantSingletonReportedState,omitempty"`

	// WantMultiWECReportedState asks for an object's status to be returned from several clusters: with one
	// qualifying cluster it behaves as the singleton request, with more the returned statuses are combined. A
	// server running a KubeStellar CRD older than v0.30.0 drops this key.
	// +optional
	WantMultiWECReportedState bool `json:"wantMultiWECReportedState,omitempty"`
}

// BindingPolicyStatus is written by KubeStellar only.
type BindingPolicyStatus struct {
	// Conditions are copied from the status of the Binding of the same name.
	// +optional
	Conditions []BindingPolicyCondition `json:"conditions,omitempty"`

	// ObservedGeneration is the metadata.generation of the BindingPolicy whose Binding spec has been written.
	// It says nothing about propagation or status collection. Always sent, also when zero.
	ObservedGeneration int64 `json:"observedGeneration"`

	// Errors are the policy's own errors followed by those of its Binding.
	// +optional
	Errors []string `json:"errors,omitempty"`
}

// BindingPolicyCondition is KubeStellar's own condition type, used by BindingPolicy and Binding status. Unlike
// metav1.Condition it has no observedGeneration; every key is always sent and required by the CRD.
type BindingPolicyCondition struct {
	// Type of the condition; see the ConditionType constants.
	Type ConditionType `json:"type"`

	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`

	// LastTransitionTime is when type, status, reason or message last changed. It must not be zero: a zero
	// time is sent as null, which the API server drops, and the required check then refuses the object.
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`

	// Reason is a machine-readable word; see the ConditionReason constants.
	Reason ConditionReason `json:"reason"`

	// Message explains the condition; it may be empty, but the key is always sent.
	Message string `json:"message"`
}

// BindingPolicy binds workload objects of a workload description space to destination clusters. KubeStellar
// derives from it a Binding of the same name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=bp
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="TYPE",type="string",JSONPath=".spec.type"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type BindingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec BindingPolicySpec `json:"spec,omitempty"`
	// +optional
	Status BindingPolicyStatus `json:"status,omitempty"`
}

// BindingPolicyList is a list of BindingPolicies.
//
// +kubebuilder:object:root=true
type BindingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindingPolicy `json:"items"`
}
