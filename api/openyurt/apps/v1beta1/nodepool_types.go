package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
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

// Label and annotation keys of the NodePool API (v1beta2 defines them; v1beta1 keeps their names). Their
// values and meaning are those of OpenYurt, so that drover and OpenYurt's yurt-manager can take over from each
// other.
const (
	// LabelCurrentNodePool on a Node names the pool the node belongs to (membership).
	LabelCurrentNodePool = openyurtv1beta2.LabelCurrentNodePool
	// LabelDesiredNodePool on a Node asks for the node to join the named pool.
	LabelDesiredNodePool = openyurtv1beta2.LabelDesiredNodePool
	// LabelNodePoolType on a NodePool holds the lower-case pool type, set by defaulting.
	LabelNodePoolType = openyurtv1beta2.LabelNodePoolType
	// LabelNodePoolHostNetwork is set to "true" on the members of a hostNetwork pool.
	LabelNodePoolHostNetwork = openyurtv1beta2.LabelNodePoolHostNetwork
	// AnnotationPrevAttrs on a Node records, as JSON, the pool attributes last applied to it.
	AnnotationPrevAttrs = openyurtv1beta2.AnnotationPrevAttrs
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
}

// NodePool groups nodes, usually the nodes of one edge region, by the node label apps.openyurt.io/nodepool,
// and pushes the pool's labels, annotations and taints to its members. It is stored as, and converts through,
// v1beta2; the v1beta2 fields it lacks travel in the annotation drover.dev/conversion-data.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=np,categories=yurt
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".spec.type",description="The type of the pool"
// +kubebuilder:printcolumn:name="ReadyNodes",type="integer",JSONPath=".status.readyNodeNum",description="Members that are Ready"
// +kubebuilder:printcolumn:name="NotReadyNodes",type="integer",JSONPath=".status.unreadyNodeNum",description="Members that are not Ready"
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
