package v1beta2

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Hub marks v1beta2 as the hub of NodePool's versions: v1beta1 and v1alpha1 convert to and from it.
func (*NodePool) Hub() {}

// A NodePool of an earlier version cannot hold every field of v1beta2 (the leader election fields), and
// v1alpha1 holds one no later version has (spec.selector). What a version cannot hold travels in the
// annotation AnnotationConversionData of the object in that version, as JSON of ConversionData, and is
// restored when the object converts back: a pool read in v1beta1 and written back keeps its v1beta2 fields,
// and a v1alpha1 pool's selector survives its storage in v1beta2. The annotation is written only when it
// carries something: a pool that uses no v1beta2 field (its election fields are the defaults, its election
// status empty) reads the same in every version. A field the object's own version holds is always taken from
// the object, never from the annotation. An annotation that does not decode is ignored and dropped.
const AnnotationConversionData = "drover.dev/conversion-data"

// ConversionData is the content of AnnotationConversionData.
// +kubebuilder:object:generate=false
type ConversionData struct {
	// Spec holds v1beta2's election spec fields when they are not DefaultElectionSpec.
	Spec *ElectionSpec `json:"spec,omitempty"`
	// Status holds v1beta2's election status fields when any is set.
	Status *ElectionStatus `json:"status,omitempty"`
	// HostNetwork is v1beta2's spec.hostNetwork where the object's version would read it back otherwise: a
	// pool that is no hostNetwork pool but carries the annotation LabelNodePoolHostNetwork=true.
	HostNetwork *bool `json:"hostNetwork,omitempty"`
	// AddedHostNetworkAnnotation says that the conversion to v1alpha1 added the annotation
	// LabelNodePoolHostNetwork=true, which v1alpha1 reads as hostNetwork; the way back removes it.
	AddedHostNetworkAnnotation bool `json:"addedHostNetworkAnnotation,omitempty"`
	// Selector is v1alpha1's spec.selector, carried by the later versions.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// ElectionSpec are the spec fields of v1beta2 that no earlier version has.
// +kubebuilder:object:generate=false
type ElectionSpec struct {
	InterConnectivity       bool                          `json:"interConnectivity,omitempty"`
	LeaderElectionStrategy  string                        `json:"leaderElectionStrategy,omitempty"`
	LeaderNodeLabelSelector map[string]string             `json:"leaderNodeLabelSelector,omitempty"`
	EnableLeaderElection    bool                          `json:"enableLeaderElection,omitempty"`
	PoolScopeMetadata       []metav1.GroupVersionResource `json:"poolScopeMetadata,omitempty"`
	LeaderReplicas          int32                         `json:"leaderReplicas,omitempty"`
}

// ElectionStatus are the status fields of v1beta2 that no earlier version has.
// +kubebuilder:object:generate=false
type ElectionStatus struct {
	LeaderEndpoints       []Leader            `json:"leaderEndpoints,omitempty"`
	LeaderNum             int32               `json:"leaderNum,omitempty"`
	LeaderLastElectedTime *metav1.Time        `json:"leaderLastElectedTime,omitempty"`
	Conditions            []NodePoolCondition `json:"conditions,omitempty"`
}

// DefaultPoolScopeMetadata are the resources spec.poolScopeMetadata includes once defaulted: v1 services and
// discovery.k8s.io/v1 endpointslices.
func DefaultPoolScopeMetadata() []metav1.GroupVersionResource {
	return []metav1.GroupVersionResource{
		{Group: "", Version: "v1", Resource: "services"},
		{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
	}
}

// DefaultElectionSpec are the election fields of a pool created without them: what the defaulting webhook
// sets on create, and what a pool of an earlier version converts to when its annotation carries none.
func DefaultElectionSpec() ElectionSpec {
	return ElectionSpec{LeaderElectionStrategy: string(ElectionStrategyRandom), LeaderReplicas: 1,
		PoolScopeMetadata: DefaultPoolScopeMetadata()}
}

// ElectionSpec returns a copy of the pool's election spec fields.
func (in *NodePool) ElectionSpec() ElectionSpec {
	s := in.Spec.DeepCopy()
	return ElectionSpec{InterConnectivity: s.InterConnectivity, LeaderElectionStrategy: s.LeaderElectionStrategy,
		LeaderNodeLabelSelector: s.LeaderNodeLabelSelector, EnableLeaderElection: s.EnableLeaderElection,
		PoolScopeMetadata: s.PoolScopeMetadata, LeaderReplicas: s.LeaderReplicas}
}

// SetElectionSpec sets the pool's election spec fields to a copy of e.
func (in *NodePool) SetElectionSpec(e ElectionSpec) {
	in.Spec.InterConnectivity, in.Spec.LeaderElectionStrategy = e.InterConnectivity, e.LeaderElectionStrategy
	in.Spec.EnableLeaderElection, in.Spec.LeaderReplicas = e.EnableLeaderElection, e.LeaderReplicas
	in.Spec.LeaderNodeLabelSelector, in.Spec.PoolScopeMetadata = nil, nil
	if e.LeaderNodeLabelSelector != nil {
		in.Spec.LeaderNodeLabelSelector = make(map[string]string, len(e.LeaderNodeLabelSelector))
		for k, v := range e.LeaderNodeLabelSelector {
			in.Spec.LeaderNodeLabelSelector[k] = v
		}
	}
	if e.PoolScopeMetadata != nil {
		in.Spec.PoolScopeMetadata = append([]metav1.GroupVersionResource{}, e.PoolScopeMetadata...)
	}
}

// ElectionStatus returns a copy of the pool's election status fields.
func (in *NodePool) ElectionStatus() ElectionStatus {
	s := in.Status.DeepCopy()
	out := ElectionStatus{LeaderEndpoints: s.LeaderEndpoints, LeaderNum: s.LeaderNum, Conditions: s.Conditions}
	if !s.LeaderLastElectedTime.IsZero() {
		out.LeaderLastElectedTime = &s.LeaderLastElectedTime
	}
	return out
}

// SetElectionStatus sets the pool's election status fields to a copy of e.
func (in *NodePool) SetElectionStatus(e ElectionStatus) {
	e.LeaderEndpoints = append([]Leader(nil), e.LeaderEndpoints...)
	in.Status.LeaderEndpoints, in.Status.LeaderNum = e.LeaderEndpoints, e.LeaderNum
	in.Status.LeaderLastElectedTime = metav1.Time{}
	if e.LeaderLastElectedTime != nil {
		in.Status.LeaderLastElectedTime = *e.LeaderLastElectedTime.DeepCopy()
	}
	in.Status.Conditions = nil
	for _, c := range e.Conditions {
		in.Status.Conditions = append(in.Status.Conditions, *c.DeepCopy())
	}
}

// HostNetworkAnnotated reports whether annotations say, as v1alpha1 does, that the pool is a hostNetwork pool:
// LabelNodePoolHostNetwork is "true", in any case.
func HostNetworkAnnotated(annotations map[string]string) bool {
	return strings.EqualFold(annotations[LabelNodePoolHostNetwork], "true")
}

// TakeConversionData removes AnnotationConversionData from meta and returns what it held (nothing when it does
// not decode).
func TakeConversionData(meta *metav1.ObjectMeta) ConversionData {
	raw, ok := meta.Annotations[AnnotationConversionData]
	if !ok {
		return ConversionData{}
	}
	delete(meta.Annotations, AnnotationConversionData)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
	var d ConversionData
	if json.Unmarshal([]byte(raw), &d) != nil {
		return ConversionData{}
	}
	return d
}

// PutConversionData writes d into meta's AnnotationConversionData, or nothing when d carries nothing.
func PutConversionData(meta *metav1.ObjectMeta, d ConversionData) {
	if equality.Semantic.DeepEqual(d, ConversionData{}) {
		return
	}
	data, err := json.Marshal(d)
	if err != nil { // not expected: every field marshals
		return
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[AnnotationConversionData] = string(data)
}

// SpokeData returns what an earlier version of hub must carry of its election fields: its election spec
// when it is not DefaultElectionSpec, its election status when any is set.
func SpokeData(hub *NodePool) ConversionData {
	var d ConversionData
	if spec := hub.ElectionSpec(); !equality.Semantic.DeepEqual(spec, DefaultElectionSpec()) {
		d.Spec = &spec
	}
	if status := hub.ElectionStatus(); !equality.Semantic.DeepEqual(status, ElectionStatus{}) {
		d.Status = &status
	}
	return d
}

// RestoreElection sets hub's election fields from what an earlier version carried in d: its election spec,
// or DefaultElectionSpec when it carried none, and its election status, or none.
func RestoreElection(hub *NodePool, d ConversionData) {
	spec := DefaultElectionSpec()
	if d.Spec != nil {
		spec = *d.Spec
	}
	hub.SetElectionSpec(spec)
	var status ElectionStatus
	if d.Status != nil {
		status = *d.Status
	}
	hub.SetElectionStatus(status)
}
