package v1alpha1

// Event reasons of the StagedBindingPolicy controller, on the StagedBindingPolicy (events.k8s.io, source
// drover-stagedbindingpolicy). One event per committed transition, never one per pass. The policy's other
// event reasons are its condition reasons of the same name: ReasonRolloutCompleted (Normal),
// ReasonSoaking and ReasonAwaitingApproval (Normal, on entering them), and ReasonGateError,
// ReasonInvalidSpec and the other Waiting reasons of Progressing (Warning, on entering them), such as
// ReasonConflict and ReasonStatusCollectorsMissing.
const (
	// ReasonStageActivated (Normal): a stage became active; its BindingPolicy is created or updated.
	ReasonStageActivated = "StageActivated"
	// ReasonStageSucceeded (Normal): the active stage passed its gates; the next one is activated.
	ReasonStageSucceeded = "StageSucceeded"
	// ReasonRolloutPaused (Normal): spec.paused froze the rollout at its active stage.
	ReasonRolloutPaused = "RolloutPaused"
	// ReasonRolloutResumed (Normal): the rollout resumed at its active stage, whose clock restarts.
	ReasonRolloutResumed = "RolloutResumed"
	// ReasonRolloutReopened (Normal): a stage was added after the completed last one, which the rollout
	// continues with.
	ReasonRolloutReopened = "RolloutReopened"
	// ReasonApprovalAccepted (Normal): the approve annotation approved the promotion of the active stage.
	ReasonApprovalAccepted = "ApprovalAccepted"
	// ReasonStageRetried (Normal): the retry annotation restarted the halted active stage.
	ReasonStageRetried = "StageRetried"
	// ReasonBindingPolicyCreated (Normal): a stage's BindingPolicy was created.
	ReasonBindingPolicyCreated = "BindingPolicyCreated"
	// ReasonBindingPolicyUpdated (Normal): a stage's BindingPolicy was brought to the stage's spec.
	ReasonBindingPolicyUpdated = "BindingPolicyUpdated"
	// ReasonBindingPolicyDeleted (Normal): the BindingPolicy of a stage no longer placed was deleted.
	ReasonBindingPolicyDeleted = "BindingPolicyDeleted"
	// ReasonBindingPolicyAdopted (Normal): a BindingPolicy of the generated name was adopted.
	ReasonBindingPolicyAdopted = "BindingPolicyAdopted"
	// ReasonBindingPolicyRefused (Warning): the API server refused a BindingPolicy write for its content (the
	// BindingPolicy CRD's schema, a validating webhook or an admission policy); drover does not retry it until
	// the StagedBindingPolicy or its BindingPolicies change.
	ReasonBindingPolicyRefused = "BindingPolicyRefused"
	// ReasonStageHalted (Warning): the active stage halted (its failure condition held or its progress
	// deadline passed); the retry annotation restarts it.
	ReasonStageHalted = "StageHalted"
	// ReasonActiveStageReplaced (Warning): the active stage was renamed or removed from spec.stages; the stage
	// at its position takes over.
	ReasonActiveStageReplaced = "ActiveStageReplaced"
	// ReasonRetryIgnored (Warning): the retry annotation named no halted active stage and was removed.
	ReasonRetryIgnored = "RetryIgnored"
)
