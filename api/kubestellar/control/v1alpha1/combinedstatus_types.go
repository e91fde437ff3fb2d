package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamedStatusCombination is the table one StatusCollector produced for one workload object.
type NamedStatusCombination struct {
	// Name of the StatusCollector.
	Name string `json:"name"`

	// ColumnNames name the columns: the select names, or the groupBy names followed by the combinedFields
	// names. Always sent and required: use an empty, non-nil slice for no columns (nil is sent as null, which
	// the API server drops).
	ColumnNames []string `json:"columnNames"`

	// Rows are in no particular order: one per cluster for select, one per distinct groupBy tuple for an
	// aggregation.
	// +optional
	Rows []StatusCombinationRow `json:"rows,omitempty"`

	// RowErrors hold at most one entry per column; rows with errors are left out of aggregations.
	// +optional
	RowErrors []RowEvaluationError `json:"rowErrors,omitempty"`

	// AggregationErrors are the errors the aggregations raised.
	// +optional
	AggregationErrors []ErrorInColumn `json:"aggregationErrors,omitempty"`
}

// StatusCombinationRow is one row of a NamedStatusCombination.
type StatusCombinationRow struct {
	// Columns are aligned with the combination's columnNames. Always sent and required (non-nil).
	Columns []Value `json:"columns"`
}

// Value is one cell: a union whose type says which other key, if any, holds the payload (none for Null).
type Value struct {
	// Type of the value; see the ValueType constants.
	Type ValueType `json:"type"`

	// String holds a String value.
	// +optional
	String *string `json:"string,omitempty"`

	// Number holds a Number value as a decimal string, under the JSON key "float": integers in base 10 ("2"),
	// other numbers in Go's shortest %g form ("2.5", "1e+21", "NaN", "+Inf").
	// +optional
	Number *string `json:"float,omitempty"`

	// Bool holds a Bool value.
	// +optional
	Bool *bool `json:"bool,omitempty"`

	// Object holds an Object value: any JSON. KubeStellar v0.30.0 writes every non-scalar result (lists and
	// timestamps included) as an Object.
	// +optional
	Object *apiextensionsv1.JSON `json:"object,omitempty"`

	// Array holds an Array value: any JSON. KubeStellar v0.30.0 never writes it.
	// +optional
	Array *apiextensionsv1.JSON `json:"array,omitempty"`
}

// ValueType names the kind of a Value.
type ValueType string

const (
	// TypeString is a string, in Value.String.
	TypeString ValueType = "String"
	// TypeNumber is a number, as a decimal string in Value.Number.
	TypeNumber ValueType = "Number"
	// TypeBool is a boolean, in Value.Bool.
	TypeBool ValueType = "Bool"
	// TypeNull is null, a missing value: no payload key.
	TypeNull ValueType = "Null"
	// TypeObject is any JSON, in Value.Object.
	TypeObject ValueType = "Object"
	// TypeArray is a JSON array, in Value.Array.
	TypeArray ValueType = "Array"
)

// RowEvaluationError is an error evaluating one column for one cluster.
type RowEvaluationError struct {
	// WEC is the cluster whose row failed.
	WEC Destination `json:"wec"`

	// ColumnName is the failing column; the empty string means the filter expression.
	ColumnName string `json:"columnName"`

	// Error is the message.
	Error string `json:"error"`
}

// ErrorInColumn is an error an aggregation raised for one column.
type ErrorInColumn struct {
	// ColumnName is the column.
	ColumnName string `json:"columnName"`

	// Error is the message.
	Error string `json:"error"`
}

// CombinedStatus holds the tables the StatusCollectors produced for one pair of workload object and
// BindingPolicy. It has neither spec nor status, only results, and no status subresource: each change is a
// write of the main resource. Its name is CombinedStatusName(object UID, BindingPolicy UID), its namespace
// the object's (or ReportNamespace for cluster-scoped objects), it carries exactly the five
// status.kubestellar.io labels and one owner reference to the workload object.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=cs
// +kubebuilder:printcolumn:name="SUBJECT_GROUP",type="string",JSONPath=".metadata.labels['status\\.kubestellar\\.io/api-group']"
// +kubebuilder:printcolumn:name="SUBJECT_RSC",type="string",JSONPath=".metadata.labels['status\\.kubestellar\\.io/resource']"
// +kubebuilder:printcolumn:name="SUBJECT_NS",type="string",JSONPath=".metadata.labels['status\\.kubestellar\\.io/namespace']"
// +kubebuilder:printcolumn:name="SUBJECT_NAME",type="string",JSONPath=".metadata.labels['status\\.kubestellar\\.io/name']"
// +kubebuilder:printcolumn:name="BINDINGPOLICY",type="string",JSONPath=".metadata.labels['status\\.kubestellar\\.io/binding-policy']"
type CombinedStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Results hold one table per referenced StatusCollector that exists and is valid, sorted by collector
	// name.
	// +optional
	Results []NamedStatusCombination `json:"results,omitempty"`
}

// CombinedStatusList is a list of CombinedStatuses.
//
// +kubebuilder:object:root=true
type CombinedStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CombinedStatus `json:"items"`
}
