package stager

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
)

// Input is everything one pass decides from.
type Input struct {
	// SBP is the StagedBindingPolicy as read; it is not modified.
	SBP *communityv1alpha1.StagedBindingPolicy
	// Observed is what the pass read of KubeStellar's objects.
	Observed Observed
	// Now is the time of the pass, from the controller's clock.
	Now time.Time
	// CEL compiles and caches the expressions.
	CEL *sbpcel.Cache
}

// Observed is what a pass read of KubeStellar's objects.
type Observed struct {
	// BindingPolicies are, by name, the BindingPolicies the policy controls and those carrying a name one of
	// its stages would give its BindingPolicy (maybe someone else's).
	BindingPolicies map[string]*controlv1alpha1.BindingPolicy
	// Bindings are, by name, the Bindings of the same names.
	Bindings map[string]*controlv1alpha1.Binding
	// CombinedStatuses are those whose binding-policy label names the active stage's BindingPolicy, as
	// stored (read-only: they may be the cache's own objects).
	CombinedStatuses []*unstructured.Unstructured
}

// Decision is what one pass came to.
type Decision struct {
	// Status is the status to write.
	Status communityv1alpha1.StagedBindingPolicyStatus
	// Commit is set when Status carries a transition (a stage activated, promoted, halted, retried,
	// superseded, or the rollout paused or resumed). It must be written, with the policy's resourceVersion as
	// precondition, before Writes and AnnotationRemovals are applied; if the write fails none of them is.
	Commit bool
	// Promoted names the BindingPolicy of the stage this pass promoted out of ("" for no promotion). Before
	// committing the promotion the controller re-reads it and its Binding from the API server and confirms
	// with Current that they still hold.
	Promoted string
	// Writes are the BindingPolicy creates, updates and adoptions, and Deletes the deletions, in the order to
	// apply them. None while paused or while the spec is invalid.
	Writes  []Write
	Deletes []Delete
	// AnnotationRemovals are the approve and retry annotations consumed by this pass, each removed only if
	// it still holds the value seen.
	AnnotationRemovals []AnnotationRemoval
	// Events are emitted after the status write.
	Events kit.Events
	// Transitions are the stage transitions of the pass, for metrics.
	Transitions []Transition
	// CEL counts the expression evaluations of the pass, for metrics.
	CEL []CELCount
	// GateErrors are the expression errors of the pass, for metrics.
	GateErrors []GateErrorRecord
	// RequeueAfter is the earliest timer of the stage (soak end, deadline); 0 for none.
	RequeueAfter time.Duration
}

// WriteKind says what a Write does.
type WriteKind string

const (
	// WriteCreate creates the BindingPolicy.
	WriteCreate WriteKind = "Create"
	// WriteUpdate brings the policy's own BindingPolicy back to the desired spec, labels and owner.
	WriteUpdate WriteKind = "Update"
	// WriteAdopt makes a BindingPolicy the stager left (owned by this policy, but not as controller) drover's.
	WriteAdopt WriteKind = "Adopt"
)

// Write is one BindingPolicy write.
type Write struct {
	Kind WriteKind
	// Stage is the index of the stage the BindingPolicy places.
	Stage int
	// Desired is the BindingPolicy as it must be: name, labels, controller reference and spec.
	Desired *controlv1alpha1.BindingPolicy
	// Existing is the BindingPolicy as read, for updates and adoptions; nil for creates.
	Existing *controlv1alpha1.BindingPolicy
}

// Delete is the deletion of a BindingPolicy the policy controls and no longer wants.
type Delete struct {
	Name string
	UID  types.UID
}

// AnnotationRemoval removes the annotation Key from the policy if its value is still Value.
type AnnotationRemoval struct {
	Key, Value string
}

// Transition is one stage transition, for metrics.
type Transition struct {
	Stage  string
	Result string // Activated, Succeeded, Halted, Skipped, Superseded, Retried
	// Duration is how long the stage ran (completedAt - startedAt), for results that end a stage; 0 otherwise.
	Duration time.Duration
}

// CELCount counts evaluations of one kind of expression with one outcome.
type CELCount struct {
	Kind    sbpcel.Kind
	Outcome string // true, false, error
	N       int
}

// GateErrorRecord is one expression error of a pass.
type GateErrorRecord struct {
	Stage  string
	Kind   sbpcel.Kind
	Reason string
}

// Transition results, the label values of the transition metrics.
const (
	ResultActivated  = "Activated"
	ResultSucceeded  = "Succeeded"
	ResultHalted     = "Halted"
	ResultSkipped    = "Skipped"
	ResultSuperseded = "Superseded"
	ResultRetried    = "Retried"
)
