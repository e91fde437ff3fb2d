package core

import (
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// isAlive reports whether an instance status is alive: anything but Killed, Failed and Succ
// (unknown strings count as alive).
func isAlive(s tkestackv1.InstanceStatus) bool {
	return !s.IsFinished()
}

// computeAppStatus derives status.appStatus from the new statuses map: empty → Pending (also for
// replicas 0); else any alive entry → Running; else any Failed → Failed; else any Succ → Succ; else Killed.
func computeAppStatus(statuses map[string]tkestackv1.InstanceStatus) tkestackv1.AppStatus {
	if len(statuses) == 0 {
		return tkestackv1.AppPending
	}
	var failed, succ bool
	for _, s := range statuses {
		switch {
		case isAlive(s):
			return tkestackv1.AppRunning
		case s == tkestackv1.InstanceFailed:
			failed = true
		case s == tkestackv1.InstanceSucc:
			succ = true
		}
	}
	switch {
	case failed:
		return tkestackv1.AppFailed
	case succ:
		return tkestackv1.AppSucc
	default:
		return tkestackv1.AppKilled
	}
}

// statusCounts returns status.replicas (entries other than NotCreated) and status.readyReplicas
// (entries equal to Running).
func statusCounts(statuses map[string]tkestackv1.InstanceStatus) (replicas, ready int32) {
	for _, s := range statuses {
		if s != tkestackv1.InstanceNotCreated {
			replicas++
		}
		if s == tkestackv1.InstanceRunning {
			ready++
		}
	}
	return replicas, ready
}
