package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// NodePoolSpec is the desired state of a NodePool in v1alpha1. A hostNetwork pool is one annotated
// nodepool.openyurt.io/hostnetwork=true: v1alpha1 has no spec.hostNetwork.
type NodePoolSpec struct {
	// Type of the pool: Edge (the default) or Cloud. Immutable.
	// +kubebuilder:default=Edge
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	// +optional
	Type NodePoolType `json:"type,omitempty"`

	// Selector is a label query over nodes, kept for OpenYurt's v1alpha1 manifests: neither OpenYurt nor
	// drover selects members by it (a node belongs to the pool its label apps.openyurt.io/nodepool names).
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Labels are set on every member node. At most 128.
	// +kubebuilder:validation:MaxProperties=128
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are set on every member node. At most 128.
	// +kubebuilder:validation:MaxProperties=128
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Taints are set on every member node; workloads rendered per pool tolerate them. At most 64.
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

// NodePool is the first version of OpenYurt's NodePool, served for its manifests. It is stored as, and
// converts through, v1beta2; the v1beta2 fields it lacks travel in the annotation
// drover.dev/conversion-data.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=np,categories=yurt
// +kubebuilder:deprecatedversion:warning="apps.openyurt.io/v1alpha1 NodePool is deprecated; use apps.openyurt.io/v1beta2 NodePool"
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".spec.type",description="The type of the pool"
// +kubebuilder:printcolumn:name="ReadyNodes",type="integer",JSONPath=".status.readyNodeNum",description="Members that are Ready"
// +kubebuilder:printcolumn:name="NotReadyNodes",type="integer",JSONPath=".status.unreadyNodeNum",description="Members that are not Ready"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
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

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &NodePool{}, &NodePoolList{})
		return nil
	})
}
