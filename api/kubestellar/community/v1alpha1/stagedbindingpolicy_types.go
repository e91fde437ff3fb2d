package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// Annotation and label keys of the StagedBindingPolicy API, all under drover.dev/.
const (
	// AnnotationApproveStage is set on a StagedBindingPolicy by a person or a tool: its value names the stage
	// whose promotion is approved. It counts while it names the active stage (set early, it pre-approves), and
	// drover removes it once it has promoted out of that stage.
	AnnotationApproveStage = "drover.dev/approve-stage"
	// AnnotationRetryStage is set on a StagedBindingPolicy to retry the halted active stage it names: its gate
	// clock restarts. drover removes it once consumed, or with a warning when it names no halted active stage.
	AnnotationRetryStage = "drover.dev/retry-stage"
	// LabelStagedBindingPolicy is on every BindingPolicy drover generates: the name of its StagedBindingPolicy.
	LabelStagedBindingPolicy = "drover.dev/staged-binding-policy"
	// LabelStage is on every BindingPolicy drover generates: the name of the stage it places.
	LabelStage = "drover.dev/stage"
	// LabelManagedBy and ManagedByValue mark the BindingPolicies drover generates.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on generated BindingPolicies.
	ManagedByValue = "drover"
)

// Bounds of the CRD schema. The markers repeat the numbers (they must be literals); the CRD test checks both
// agree.
const (
	// MaxNameLength bounds the name of a StagedBindingPolicy: it is copied into a label value of every
	// generated BindingPolicy, and label values hold at most 63 characters.
	MaxNameLength = 63
	// MaxStages bounds spec.stages.
	MaxStages = 32
	// MaxExpressionLength bounds a CEL expression (filter, condition, failureCondition).
	MaxExpressionLength = 10240
	// MaxTotalExpressionLength bounds the filter, condition and failureCondition expressions of all stages
	// together. The CRD schema cannot say it; the admission webhook checks it before compiling any
	// expression, so that the work one request costs stays bounded.
	MaxTotalExpressionLength = 32768
	// MaxStageHistory bounds status.stages: one entry per stage, and room for superseded ones on their way out.
	MaxStageHistory = 2 * MaxStages
	// MaxMessageLength bounds the messages of the status.
	MaxMessageLength = 1024
)

// RolloutMode says which stages' BindingPolicies exist at a time.
// +kubebuilder:validation:Enum=Exclusive;Cumulative
type RolloutMode string

const (
	// ModeExclusive keeps only the active stage's BindingPolicy (the stager's behaviour): the workload moves
	// from one stage's clusters to the next.
	ModeExclusive RolloutMode = "Exclusive"
	// ModeCumulative keeps the BindingPolicies of every stage reached: each stage adds clusters.
	ModeCumulative RolloutMode = "Cumulative"
)

// TimeoutAction is what happens when a stage's progress deadline passes with its gates not met.
// +kubebuilder:validation:Enum=Halt
type TimeoutAction string

// TimeoutHalt halts the rollout at the stage; a retry annotation starts the stage's clock again.
const TimeoutHalt TimeoutAction = "Halt"

// StagedBindingPolicySpec is one workload ("what") placed on clusters ("where") in ordered stages.
type StagedBindingPolicySpec struct {
	// downsync selects the workload objects, as a BindingPolicy's downsync does. It is copied unchanged into
	// the BindingPolicy of every stage.
	// +kubebuilder:validation:MinItems=1
	// +required
	Downsync []controlv1alpha1.DownsyncPolicyClause `json:"downsync"`

	// stages are placed in order. The active stage's BindingPolicy is written; when its gates hold, the next
	// stage becomes active. Stages are identified by name.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +required
	Stages []Stage `json:"stages"`

	// mode is Exclusive (only the active stage's BindingPolicy exists) or Cumulative (the BindingPolicies of
	// every stage reached are kept). A drover addition.
	// +kubebuilder:default=Exclusive
	// +optional
	Mode RolloutMode `json:"mode,omitempty"`

	// paused freezes the rollout: no stage transition and no BindingPolicy write while true. Gates are still
	// evaluated and reported. Resuming restarts the active stage's clock. A drover addition.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// Stage is one step of the rollout: where the workload goes, and what must hold before the next step.
type Stage struct {
	// name identifies the stage; it is part of the generated BindingPolicy's name and a label value.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// clusterSelectors select the clusters of the stage, as a BindingPolicy's clusterSelectors do (a cluster
	// matching any selector is selected; {} selects all). Copied unchanged into the stage's BindingPolicy.
	// +kubebuilder:validation:MinItems=1
	// +required
	ClusterSelectors []metav1.LabelSelector `json:"clusterSelectors"`

	// filter is a CEL expression over downsyncClause (one workload object of the stage's Binding) that picks
	// the objects the gates look at. Absent keeps all.
	// +kubebuilder:validation:MaxLength=10240
	// +optional
	Filter string `json:"filter,omitempty"`

	// condition is a CEL expression over one gated object's CombinedStatus (combinedStatus, or obj) that must
	// be true for every gated object before the stage is promoted. Absent: the stage is promoted once its
	// Binding exists and its objects have status.
	// +kubebuilder:validation:MaxLength=10240
	// +optional
	Condition string `json:"condition,omitempty"`

	// failureCondition is a CEL expression in the same variables as condition: true for any object halts the
	// rollout at this stage. A drover addition.
	// +kubebuilder:validation:MaxLength=10240
	// +optional
	FailureCondition string `json:"failureCondition,omitempty"`

	// minDuration is the soak time: the stage is not promoted before its clock has run this long. A drover
	// addition.
	// +optional
	MinDuration *metav1.Duration `json:"minDuration,omitempty"`

	// progressDeadline is how long the automatic gates have to hold, from the stage's clock start; when it
	// passes with them not holding, onTimeout applies. Must be longer than minDuration. A drover addition.
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`

	// onTimeout is what happens when the progress deadline passes: Halt. A drover addition.
	// +kubebuilder:default=Halt
	// +optional
	OnTimeout TimeoutAction `json:"onTimeout,omitempty"`

	// requireApproval makes promotion wait for the annotation drover.dev/approve-stage naming this stage. A
	// drover addition.
	// +optional
	RequireApproval bool `json:"requireApproval,omitempty"`
}

// Phase is the state of a rollout as a whole.
// +kubebuilder:validation:Enum=Progressing;Waiting;Paused;Halted;Completed
type Phase string

// The phases, from the strongest: Completed, Halted, Paused, Waiting, Progressing.
const (
	// PhaseProgressing means the rollout is expected to move on by itself.
	PhaseProgressing Phase = "Progressing"
	// PhaseWaiting means the rollout is blocked on time, a person or a problem; the Progressing condition's
	// reason says which.
	PhaseWaiting Phase = "Waiting"
	// PhasePaused means spec.paused holds the rollout.
	PhasePaused Phase = "Paused"
	// PhaseHalted means a failure condition or a passed deadline stopped the rollout at the active stage.
	PhaseHalted Phase = "Halted"
	// PhaseCompleted means the last stage passed its gates.
	PhaseCompleted Phase = "Completed"
)

// StageResult is where a stage stands in the rollout's history.
// +kubebuilder:validation:Enum=Active;Succeeded;Halted;Skipped;Superseded
type StageResult string

const (
	// StageActive is the stage being placed and gated.
	StageActive StageResult = "Active"
	// StageSucceeded is a stage whose gates held; it is never gated again.
	StageSucceeded StageResult = "Succeeded"
	// StageHalted is the active stage stopped by a failure condition or a passed deadline.
	StageHalted StageResult = "Halted"
	// StageSkipped is a stage inserted before the active one: the rollout never moves backwards.
	StageSkipped StageResult = "Skipped"
	// StageSuperseded is an active stage renamed or removed from the spec; its entry goes once its
	// BindingPolicy is gone.
	StageSuperseded StageResult = "Superseded"
)

// EvaluationOutcome is the outcome of the last evaluation of a stage's gates.
// +kubebuilder:validation:Enum=Satisfied;NotSatisfied;Error;NotEvaluated
type EvaluationOutcome string

const (
	// OutcomeSatisfied means condition held for every gated object.
	OutcomeSatisfied EvaluationOutcome = "Satisfied"
	// OutcomeNotSatisfied means some gated object has no status yet or does not meet the condition.
	OutcomeNotSatisfied EvaluationOutcome = "NotSatisfied"
	// OutcomeError means an expression failed; errors never count as satisfied.
	OutcomeError EvaluationOutcome = "Error"
	// OutcomeNotEvaluated means the stage's BindingPolicy was not current, so nothing was evaluated.
	OutcomeNotEvaluated EvaluationOutcome = "NotEvaluated"
)

// StagedBindingPolicyStatus is what drover observed and decided. A rollout resumes from it after a restart.
type StagedBindingPolicyStatus struct {
	// activeStage names the active stage; the last stage once Completed; the halted stage when Halted.
	// +optional
	ActiveStage string `json:"activeStage,omitempty"`

	// activeStageIndex is the active stage's index at the last pass, so a renamed or removed active stage is
	// continued at the same position. A drover addition.
	// +optional
	ActiveStageIndex *int32 `json:"activeStageIndex,omitempty"`

	// phase is Progressing, Waiting, Paused, Halted or Completed. A drover addition.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// observedGeneration is the generation this status was computed from. A drover addition.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// stages is the history, in spec order: an entry for each stage reached or skipped. A drover addition.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Stages []StageStatus `json:"stages,omitempty"`

	// conditions are Ready, Progressing, Completed, Halted, GateError, InvalidSpec and BindingPolicyReady. A
	// drover addition.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// StageStatus is one stage's entry in the history.
type StageStatus struct {
	// name is the stage's name.
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
	// bindingPolicyName is the name of the stage's generated BindingPolicy.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	BindingPolicyName string `json:"bindingPolicyName,omitempty"`
	// bindingPolicyUID is the UID of the BindingPolicy incarnation whose CombinedStatuses count for the gates.
	// +optional
	BindingPolicyUID types.UID `json:"bindingPolicyUID,omitempty"`
	// result is Active, Succeeded, Halted, Skipped or Superseded.
	// +required
	Result StageResult `json:"result"`
	// startedAt is when the stage became active.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// clockStartedAt is when the stage's gate clock started: the reference of minDuration and
	// progressDeadline. It restarts when the stage's BindingPolicy changes, on resume and on retry.
	// +optional
	ClockStartedAt *metav1.Time `json:"clockStartedAt,omitempty"`
	// approvedAt is when the approval of the stage was first seen.
	// +optional
	ApprovedAt *metav1.Time `json:"approvedAt,omitempty"`
	// completedAt is when the stage succeeded, halted, was skipped or superseded.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// message says why the stage stands where it does.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// destinations is the number of clusters in the stage's Binding.
	// +optional
	Destinations int32 `json:"destinations,omitempty"`
	// lastEvaluation is the outcome of the last evaluation of the stage's gates.
	// +optional
	LastEvaluation *Evaluation `json:"lastEvaluation,omitempty"`
}

// Evaluation is the outcome of one evaluation of a stage's gates, in counts: status never lists objects.
type Evaluation struct {
	// time is when the gates were evaluated.
	// +required
	Time metav1.Time `json:"time"`
	// outcome is Satisfied, NotSatisfied, Error or NotEvaluated.
	// +required
	Outcome EvaluationOutcome `json:"outcome"`
	// objects is the number of workload objects the filter kept.
	// +optional
	Objects int32 `json:"objects,omitempty"`
	// objectsWithStatus is the number of gated objects with a CombinedStatus of the stage.
	// +optional
	ObjectsWithStatus int32 `json:"objectsWithStatus,omitempty"`
	// objectsSatisfied is the number of gated objects whose condition held.
	// +optional
	ObjectsSatisfied int32 `json:"objectsSatisfied,omitempty"`
	// awaitingDestinations are destinations that have not reported yet, sorted, at most 20: each is named
	// in a rowErrors entry of a gated object's CombinedStatus (KubeStellar evaluates a cluster that has not
	// reported, or reported without a field a collector reads, as a failed row). Such an object is not
	// judged by condition or failureCondition until every destination has its row. KubeStellar names at most
	// one cluster per failing column, so more destinations may be waiting than are named here.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	AwaitingDestinations []string `json:"awaitingDestinations,omitempty"`
	// message summarises the evaluation, naming at most a few objects.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// StagedBindingPolicy places one workload on KubeStellar-managed clusters in ordered stages: for the active
// stage drover writes a BindingPolicy, and it moves to the next stage when the active one's gates hold.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sbp
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.activeStage`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters: it is a label value of the generated BindingPolicies"
type StagedBindingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   StagedBindingPolicySpec   `json:"spec"`
	Status StagedBindingPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// StagedBindingPolicyList is a list of StagedBindingPolicies.
type StagedBindingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StagedBindingPolicy `json:"items"`
}
