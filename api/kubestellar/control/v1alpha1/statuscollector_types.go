package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Expression is CEL source text. Its variables are inventory.name (the cluster's name), obj (the workload
// object in the workload description space), returned.status (the status returned from the cluster) and
// propagation.lastReturnedUpdateTimestamp (a time, zero before the first return).
type Expression string

// StatusCollectorSpec is one query over the statuses a workload object has in its clusters, shaped like an SQL
// SELECT with one input row per cluster. Either select or combinedFields is used, not both; groupBy only with
// combinedFields. KubeStellar's controller checks these rules and the CEL, not the CRD; violations go to
// status.errors and the collector then counts as missing.
type StatusCollectorSpec struct {
	// Filter, when given, keeps only the rows for which it yields true; null counts as false.
	// +optional
	Filter *Expression `json:"filter,omitempty"`

	// GroupBy are the grouping columns of an aggregation; each must yield an atomic value.
	// +optional
	GroupBy []NamedExpression `json:"groupBy,omitempty"`

	// CombinedFields are the aggregations.
	// +optional
	CombinedFields []NamedAggregator `json:"combinedFields,omitempty"`

	// Select are the plain per-cluster columns.
	// +optional
	Select []NamedExpression `json:"select,omitempty"`

	// Limit is meant to bound the number of rows. The CRD has no default, zero is sent when unset, and
	// KubeStellar v0.30.0 does not apply it.
	Limit int64 `json:"limit"`
}

// NamedExpression is a named column computed by an expression.
type NamedExpression struct {
	// Name of the column.
	Name string `json:"name"`

	// Def computes the column's value.
	Def Expression `json:"def"`
}

// NamedAggregator is a named column computed by an aggregation over the rows of a group.
type NamedAggregator struct {
	// Name of the column.
	Name string `json:"name"`

	// Type of the aggregation; see the AggregatorType constants. The CRD accepts any string; an unknown type
	// gives a Null value and an aggregation error.
	Type AggregatorType `json:"type"`

	// Subject is the aggregated value: absent for COUNT, required for the others, and numeric (a numeric string
	// is parsed).
	// +optional
	Subject *Expression `json:"subject,omitempty"`
}

// AggregatorType is the kind of an aggregation, in upper case.
type AggregatorType string

const (
	// AggregatorTypeCount counts the rows of a group that evaluated without error.
	AggregatorTypeCount AggregatorType = "COUNT"
	// AggregatorTypeSum adds the subject over a group (0 for no rows).
	AggregatorTypeSum AggregatorType = "SUM"
	// AggregatorTypeAvg averages the subject over a group (NaN for no rows).
	AggregatorTypeAvg AggregatorType = "AVG"
	// AggregatorTypeMin is the least subject of a group (+Inf for no rows).
	AggregatorTypeMin AggregatorType = "MIN"
	// AggregatorTypeMax is the greatest subject of a group (-Inf for no rows).
	AggregatorTypeMax AggregatorType = "MAX"
)

// StatusCollectorStatus reports whether the collector is usable.
type StatusCollectorStatus struct {
	// ObservedGeneration is always sent but KubeStellar v0.30.0 never sets it (it stays 0); it says nothing
	// about freshness.
	ObservedGeneration int64 `json:"observedGeneration"`

	// Errors are validation and CEL parse errors; empty once the collector is valid.
	// +optional
	Errors []string `json:"errors,omitempty"`
}

// StatusCollector says what to extract from the statuses a workload object has in its clusters. BindingPolicy
// clauses refer to it by name; the results land in CombinedStatus objects.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sc
type StatusCollector struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec StatusCollectorSpec `json:"spec,omitempty"`
	// +optional
	Status StatusCollectorStatus `json:"status,omitempty"`
}

// StatusCollectorList is a list of StatusCollectors.
//
// +kubebuilder:object:root=true
type StatusCollectorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StatusCollector `json:"items"`
}
