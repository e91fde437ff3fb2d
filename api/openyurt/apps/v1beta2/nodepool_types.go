package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePoolType says whether the nodes of a pool run at the edge or in the cloud.
// +kubebuilder:validation:Enum=Edge;Cloud
type NodePoolType string

const (
	// Edge is a pool of edge nodes. It is the default type.
	Edge NodePoolType = "Edge"
	// Cloud is a pool of cloud nodes.
	Cloud NodePoolType = "Cloud"
)

// LeaderElectionStrategy is how the leader hubs of a pool are chosen among its ready nodes.
type LeaderElectionStrategy string

const (
	// ElectionStrategyRandom chooses leaders at random. It is the default.
	ElectionStrategyRandom LeaderElectionStrategy = "random"
	// ElectionStrategyMark chooses leaders among the nodes matching spec.leaderNodeLabelSelector.
	ElectionStrategyMark LeaderElectionStrategy = "mark"
)

// NodePoolConditionType is the type of a condition of a NodePool.
type NodePoolConditionType string

// LeaderStatus is the condition saying whether the pool's leaders are elected (True) or not.
const LeaderStatus NodePoolConditionType = "LeaderReady"

// Label and annotation keys of the NodePool API. Their values and meaning are those of OpenYurt, so that
// drover and OpenYurt's yurt-manager can take over from each other.
const (
	// LabelCurrentNodePool on a Node names the pool the node belongs to (membership).
	LabelCurrentNodePool = "apps.openyurt.io/nodepool"
	// LabelDesiredNodePool on a Node asks for the node to join the named pool.
	LabelDesiredNodePool = "apps.openyurt.io/desired-nodepool"
	// LabelNodePoolType on a NodePool holds the lower-case pool type, set by defaulting.
	LabelNodePoolType = "nodepool.openyurt.io/type"
	// LabelNodePoolHostNetwork is set to "true" on the members of a hostNetwork pool. As an annotation of a
	// NodePool, "true" (in any case) says the pool is a hostNetwork pool in v1alpha1, which has no
	// spec.hostNetwork.
	LabelNodePoolHostNetwork = "nodepool.openyurt.io/hostnetwork"
	// AnnotationPrevAttrs on a Node records, as JSON, the pool attributes last applied to it.
	AnnotationPrevAttrs = "nodepool.openyurt.io/previous-attributes"
)

// NodePoolSpec is the desired state of a NodePool.
type NodePoolSpec struct {
	// Type of the pool: Edge (the default) or Cloud. Immutable.
	// +kubebuilder:default=Edge
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	// +optional
	Type NodePoolType `json:"type,omitempty"`

	// HostNetwork says that the pool's nodes run no CNI: every pod on them uses the host network.
	// Members get the label nodepool.openyurt.io/hostnetwork=true. Immutable; not allowed for Cloud pools.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="hostNetwork is immutable"
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`

	// Labels are set on every member node.
	// At most 128: they are copied onto each member, next to the labels the kubelet and the cloud provider
	// set, and recorded once more in the node's nodepool.openyurt.io/previous-attributes annotation; pools
	// carry a few.
	// +kubebuilder:validation:MaxProperties=128
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are set on every member node.
	// At most 128, for the same reasons as labels; the webhook also keeps their total size within 256 KiB,
	// the bound Kubernetes sets on the annotations of any object.
	// +kubebuilder:validation:MaxProperties=128
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Taints are set on every member node; workloads rendered per pool tolerate them.
	// At most 64: each is copied onto every member node and becomes a toleration of every pod that
	// YurtAppDaemons render for the pool, and the scheduler checks them for every pod; pools carry a few.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`

	// InterConnectivity says that all nodes of the pool reach each other over the network, so that the
	// pool's nodes may share one list/watch of pool-scoped resources through its leaders. Immutable.
	// drover stores it; OpenYurt's hubs act on it.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="interConnectivity is immutable"
	// +optional
	InterConnectivity bool `json:"interConnectivity,omitempty"`

	// LeaderElectionStrategy is how the pool's leader hubs are chosen: random (the default) among the ready
	// members, or mark among the ready members matching leaderNodeLabelSelector.
	// +optional
	LeaderElectionStrategy string `json:"leaderElectionStrategy,omitempty"`

	// LeaderNodeLabelSelector selects, by their labels, the members that may lead with the mark strategy.
	// At most 64 labels.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	LeaderNodeLabelSelector map[string]string `json:"leaderNodeLabelSelector,omitempty"`

	// EnableLeaderElection turns on the election of leader hubs in the pool; leaderElectionStrategy,
	// leaderNodeLabelSelector and leaderReplicas apply only then. Default false.
	// +optional
	EnableLeaderElection bool `json:"enableLeaderElection,omitempty"`

	// PoolScopeMetadata are the resources whose metadata the pool's nodes (or its leaders) share. Defaulted
	// on create to include v1 services and discovery.k8s.io/v1 endpointslices. At most 64.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	PoolScopeMetadata []metav1.GroupVersionResource `json:"poolScopeMetadata,omitempty"`

	// LeaderReplicas is the number of leader hubs of the pool; defaulted to 1 on create.
	// +optional
	LeaderReplicas int32 `json:"leaderReplicas,omitempty"`
}

// NodePoolStatus is the observed state of a NodePool.
type NodePoolStatus struct {
	// ReadyNodeNum is the number of members whose Ready condition is True.
	// +optional
	ReadyNodeNum int32 `json:"readyNodeNum"`

	// UnreadyNodeNum is the number of all other members, including nodes without a Ready condition.
	// +optional
	UnreadyNodeNum int32 `json:"unreadyNodeNum"`

	// Nodes are the names of the members, sorted.
	// +optional
	Nodes []string `json:"nodes,omitempty"`

	// LeaderEndpoints are the pool's elected leader hubs. Written by OpenYurt's hub-leader controller; drover
	// stores them.
	// +optional
	LeaderEndpoints []Leader `json:"leaderEndpoints,omitempty"`

	// LeaderNum is the number of leaderEndpoints.
	// +optional
	LeaderNum int32 `json:"leaderNum,omitempty"`

	// LeaderLastElectedTime is when the leaders were last elected.
	// +optional
	LeaderLastElectedTime metav1.Time `json:"leaderLastElectedTime,omitempty"`

	// Conditions are the latest observations of the pool's state, such as LeaderReady.
	// +optional
	Conditions []NodePoolCondition `json:"conditions,omitempty"`
}

// Leader is one leader hub of a pool.
type Leader struct {
	// NodeName is the name of the leader's node.
	NodeName string `json:"nodeName"`
	// Address is the address of the leader hub.
	Address string `json:"address"`
}

// NodePoolCondition is one observation of a NodePool's state.
type NodePoolCondition struct {
	// Type of the condition.
	// +optional
	Type NodePoolConditionType `json:"type,omitempty"`
	// Status of the condition: True, False or Unknown.
	// +optional
	Status corev1.ConditionStatus `json:"status,omitempty"`
	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word reason for the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says more about the last transition.
	// +optional
	Message string `json:"message,omitempty"`
}

// NodePool groups nodes, usually the nodes of one edge region, by the node label apps.openyurt.io/nodepool,
// and pushes the pool's labels, annotations and taints to its members.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=np,categories=yurt
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".spec.type",description="The type of the pool"
// +kubebuilder:printcolumn:name="ReadyNodes",type="integer",JSONPath=".status.readyNodeNum",description="Members that are Ready"
// +kubebuilder:printcolumn:name="NotReadyNodes",type="integer",JSONPath=".status.unreadyNodeNum",description="Members that are not Ready"
// +kubebuilder:printcolumn:name="LeaderNodes",type="integer",JSONPath=".status.leaderNum",description="The number of leader hubs"
// +kubebuilder:printcolumn:name="LeaderElectionAge",type="date",JSONPath=".status.leaderLastElectedTime",description="When the leaders were last elected"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="!(has(self.spec) && has(self.spec.hostNetwork) && self.spec.hostNetwork && has(self.spec.type) && self.spec.type == 'Cloud')",message="hostNetwork is not allowed for Cloud pools"
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec NodePoolSpec `json:"spec,omitempty"`
	// +optional
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}
