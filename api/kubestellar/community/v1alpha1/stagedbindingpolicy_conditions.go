package v1alpha1

// Condition types of status.conditions. Each is set on every pass, with the generation it was computed from.
const (
	// ConditionReady is true once the rollout is Completed; otherwise false with the phase as reason.
	ConditionReady = "Ready"
	// ConditionProgressing is true while the phase is Progressing or Waiting, with the reason that holds the
	// active stage; false with reason Completed, Halted or Paused.
	ConditionProgressing = "Progressing"
	// ConditionCompleted is true once the last stage passed its gates.
	ConditionCompleted = "Completed"
	// ConditionHalted is true while the rollout is halted.
	ConditionHalted = "Halted"
	// ConditionGateError is true while an expression fails to compile or to evaluate.
	ConditionGateError = "GateError"
	// ConditionInvalidSpec is true while the spec breaks a rule the webhook enforces (it was bypassed): the
	// rollout is frozen.
	ConditionInvalidSpec = "InvalidSpec"
	// ConditionBindingPolicyReady is true while the active stage's BindingPolicy is current: it exists,
	// KubeStellar has processed its generation and made its Binding.
	ConditionBindingPolicyReady = "BindingPolicyReady"
)

// Reasons of the Progressing condition while the phase is Progressing: the rollout is expected to move on by
// itself.
const (
	ReasonBindingPolicyPending = "BindingPolicyPending"
	ReasonHandingOver          = "HandingOver"
	ReasonAwaitingStatus       = "AwaitingStatus"
	ReasonConditionNotMet      = "ConditionNotMet"
	// ReasonPromoting is the reason of a pass that promoted (or activated) a stage.
	ReasonPromoting = "Promoting"
)

// Reasons of the Progressing condition while the phase is Waiting: the rollout is blocked on time, a person
// or a problem.
const (
	ReasonSoaking                 = "Soaking"
	ReasonAwaitingApproval        = "AwaitingApproval"
	ReasonNoDestinations          = "NoDestinations"
	ReasonNoObjects               = "NoObjects"
	ReasonNoStatusCollectors      = "NoStatusCollectors"
	ReasonStatusCollectorsMissing = "StatusCollectorsMissing"
	ReasonGateError               = "GateError"
	ReasonInvalidSpec             = "InvalidSpec"
	ReasonConflict                = "Conflict"
	ReasonTerminating             = "Terminating"
)

// Reasons of the other conditions.
const (
	// ReasonRolloutCompleted is the reason of Completed=True and Ready=True.
	ReasonRolloutCompleted = "RolloutCompleted"
	// ReasonFailureCondition and ReasonProgressDeadlineExceeded are the reasons of Halted=True.
	ReasonFailureCondition         = "FailureCondition"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonNotHalted, ReasonNoGateError, ReasonSpecValid and ReasonNotCompleted are the reasons of those
	// conditions when false.
	ReasonNotHalted    = "NotHalted"
	ReasonNoGateError  = "NoGateError"
	ReasonSpecValid    = "SpecValid"
	ReasonNotCompleted = "NotCompleted"
	// ReasonCurrent is the reason of BindingPolicyReady=True; ReasonPending one of its false reasons, with
	// Conflict, Terminating, StatusCollectorsMissing and HandingOver.
	ReasonCurrent = "Current"
	ReasonPending = "Pending"
	// Reasons of GateError=True.
	ReasonCompileError      = "CompileError"
	ReasonEvaluationError   = "EvaluationError"
	ReasonNonBoolResult     = "NonBoolResult"
	ReasonCostLimitExceeded = "CostLimitExceeded"
	ReasonInvalidNumber     = "InvalidNumber"
	// Reasons of InvalidSpec=True.
	ReasonInvalidExpression = "InvalidExpression"
	ReasonInvalidField      = "InvalidField"
	ReasonNameTooLong       = "NameTooLong"
)
