package v1alpha1

// Event reasons of the YurtAppDaemon and UnitedDaemonSet controllers (events.k8s.io, on the owner), each
// emitted at most once per pass with the workloads or pools it concerns aggregated in its message. The
// owners' other event reasons are their condition reasons of the same name: ReasonNoNodePoolsSelected
// (Normal, on transition), ReasonInvalidSpec, ReasonNodePoolListFailed, ReasonRevisionFailed,
// ReasonRenderFailed, ReasonNameConflict and ReasonInvalidNodePoolName (Warning).
const (
	// ReasonWorkloadCreated (Normal): workloads were created for newly selected pools.
	ReasonWorkloadCreated = "WorkloadCreated"
	// ReasonWorkloadUpdated (Normal): workloads were applied with a new rendering.
	ReasonWorkloadUpdated = "WorkloadUpdated"
	// ReasonWorkloadDeleted (Normal): workloads of deselected pools, duplicates or of the other kind were
	// deleted.
	ReasonWorkloadDeleted = "WorkloadDeleted"
	// ReasonWorkloadAdopted (Normal): orphaned workloads were adopted: a pool's workload with no controller,
	// drover's labels and a match of spec.selector.
	ReasonWorkloadAdopted = "WorkloadAdopted"
	// ReasonWorkloadCreateFailed (Warning): workload creates failed or are pending after an earlier failure.
	ReasonWorkloadCreateFailed = "WorkloadCreateFailed"
	// ReasonWorkloadUpdateFailed (Warning): workload applies failed or are pending after an earlier failure.
	ReasonWorkloadUpdateFailed = "WorkloadUpdateFailed"
	// ReasonWorkloadDeleteFailed (Warning): workload deletes failed or are pending after an earlier failure.
	ReasonWorkloadDeleteFailed = "WorkloadDeleteFailed"
	// ReasonUnmappedWorkload (Warning): owned workloads map to no pool; they are left alone.
	ReasonUnmappedWorkload = "UnmappedWorkload"
)
