package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindingSpec is the resolved form of a BindingPolicy: the individual workload objects and the clusters they go
// to.
type BindingSpec struct {
	// Workload lists the chosen objects, each with the modulation merged over every clause that chose it.
	// +optional
	Workload DownsyncObjectClauses `json:"workload,omitempty"`

	// Destinations are the chosen clusters, at most one entry per cluster.
	// +listType=map
	// +listMapKey=clusterId
	// +optional
	Destinations []Destination `json:"destinations,omitempty"`
}

// DownsyncObjectClauses lists the individual objects of a Binding, cluster-scoped and namespaced apart.
type DownsyncObjectClauses struct {
	// ClusterScope lists cluster-scoped objects, one entry per group, resource and name (the version is not
	// part of the key).
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +listMapKey=name
	// +optional
	ClusterScope []ClusterScopeDownsyncClause `json:"clusterScope,omitempty"`

	// NamespaceScope lists namespaced objects, one entry per group, resource, namespace and name.
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +listMapKey=namespace
	// +listMapKey=name
	// +optional
	NamespaceScope []NamespaceScopeDownsyncClause `json:"namespaceScope,omitempty"`
}

// ClusterScopeDownsyncClause is one cluster-scoped object of a Binding and how it is propagated.
type ClusterScopeDownsyncClause struct {
	ClusterScopeDownsyncObject `json:",inline"`
	DownsyncModulation         `json:",inline"`
}

// ClusterScopeDownsyncObject identifies one cluster-scoped object. Every key is always sent; group is the empty
// string for the core group.
type ClusterScopeDownsyncObject struct {
	// GroupVersionResource names the group, the version under which KubeStellar watches the resource (the
	// preferred version of discovery) and the lowercase plural resource.
	metav1.GroupVersionResource `json:",inline"`

	// Name of the object.
	Name string `json:"name"`

	// ResourceVersion of the object in the workload description space when the Binding was computed.
	ResourceVersion string `json:"resourceVersion"`
}

// NamespaceScopeDownsyncClause is one namespaced object of a Binding and how it is propagated.
type NamespaceScopeDownsyncClause struct {
	NamespaceScopeDownsyncObject `json:",inline"`
	DownsyncModulation           `json:",inline"`
}

// NamespaceScopeDownsyncObject identifies one namespaced object. Every key is always sent; group is the empty
// string for the core group.
type NamespaceScopeDownsyncObject struct {
	// GroupVersionResource names the group, the version under which KubeStellar watches the resource (the
	// preferred version of discovery) and the lowercase plural resource.
	metav1.GroupVersionResource `json:",inline"`

	// Namespace of the object.
	Namespace string `json:"namespace"`

	// Name of the object.
	Name string `json:"name"`

	// ResourceVersion of the object in the workload description space when the Binding was computed.
	ResourceVersion string `json:"resourceVersion"`
}

// Destination is one workload execution cluster.
type Destination struct {
	// ClusterID is the cluster's name: the metadata.name of its OCM ManagedCluster, which is also the name of
	// its mailbox namespace in the inventory space.
	ClusterID string `json:"clusterId"`
}

// BindingStatus is written by KubeStellar's transport and status controllers. The transport controller replaces
// the whole status (observedGeneration and errors) when the generation or the errors change, dropping the
// conditions until the status controller writes them again.
type BindingStatus struct {
	// Conditions hold StatusCollectorsAvailable, written by the status controller.
	// +optional
	Conditions []BindingPolicyCondition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the transport controller has processed. Always sent, also when zero.
	ObservedGeneration int64 `json:"observedGeneration"`

	// Errors are transport errors; a Binding with errors is not propagated.
	// +optional
	Errors []string `json:"errors,omitempty"`
}

// Binding is the resolved form of the BindingPolicy of the same name, which owns it (as controller). KubeStellar
// writes it; its transport controller propagates the listed objects to the listed clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=bdg
type Binding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec BindingSpec `json:"spec,omitempty"`
	// +optional
	Status BindingStatus `json:"status,omitempty"`
}

// BindingList is a list of Bindings.
//
// +kubebuilder:object:root=true
type BindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Binding `json:"items"`
}
