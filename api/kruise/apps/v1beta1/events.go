package v1beta1

// Event reasons of the PersistentPodState controller, on the PersistentPodState (events.k8s.io, source
// drover-persistentpodstate). Its condition types ConditionTargetUnavailable and
// ConditionStatusSizeLimitReached are also Warning reasons, emitted when the condition appears.
const (
	// ReasonStatusSizeLimitCleared (Normal): StatusSizeLimitReached went while the target is available;
	// every pod is recorded again.
	ReasonStatusSizeLimitCleared = "StatusSizeLimitCleared"
	// ReasonPersistedAnnotationMismatch (Warning): a pod shows a persisted annotation with another value than
	// the recorded one, which is kept; one per pod and key.
	ReasonPersistedAnnotationMismatch = "PersistedAnnotationMismatch"
	// ReasonDuplicateTarget (Warning): an older PersistentPodState targets the same workload; it steers the
	// pods, this one only records.
	ReasonDuplicateTarget = "DuplicateTarget"
	// ReasonReplicasUnreadable (Warning, the workload related): the replica count of a custom workload is
	// missing or not a non-negative integer at its path; it is taken as 0.
	ReasonReplicasUnreadable = "ReplicasUnreadable"
	// ReasonRecordedNodeGone (Warning, the pod related): the pod webhook did not inject a node identity key
	// because the recorded node is gone.
	ReasonRecordedNodeGone = "RecordedNodeGone"
)

// Event reasons of the PersistentPodState generator, on the workload whose annotations ask for a
// PersistentPodState.
const (
	// ReasonPersistentPodStateCreated (Normal): the PersistentPodState was created from the workload's
	// annotations.
	ReasonPersistentPodStateCreated = "PersistentPodStateCreated"
	// ReasonPersistentPodStateUpdated (Normal): the PersistentPodState was updated from the workload's
	// annotations.
	ReasonPersistentPodStateUpdated = "PersistentPodStateUpdated"
	// ReasonPersistentPodStateDeleted (Normal): the generated PersistentPodState was deleted: the workload no
	// longer asks for one.
	ReasonPersistentPodStateDeleted = "PersistentPodStateDeleted"
	// ReasonPersistentPodStateNotOwned (Warning): a PersistentPodState of the generated name exists and is not
	// the workload's; it is left alone.
	ReasonPersistentPodStateNotOwned = "PersistentPodStateNotOwned"
	// ReasonInvalidPersistentPodStateAnnotations (Warning): the workload's annotations do not describe a valid
	// PersistentPodState.
	ReasonInvalidPersistentPodStateAnnotations = "InvalidPersistentPodStateAnnotations"
	// ReasonPersistentPodStateRefused (Warning): the API server refused the PersistentPodState the
	// annotations describe (its schema, or the PersistentPodState webhook: another PersistentPodState already
	// tracks the workload); the generator tries again when the annotations change.
	ReasonPersistentPodStateRefused = "PersistentPodStateRefused"
)
