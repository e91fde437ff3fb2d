package core

import (
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// Class is the class of an instance id.
type Class string

const (
	// ClassRunning ids are in [0, replicas) and neither killed nor completed: they should have a pod.
	ClassRunning Class = "DesiredRunning"
	// ClassCompleted ids are in [0, replicas) and killed in spec.statuses, or finished and treated as
	// completed: their pods are deleted.
	ClassCompleted Class = "Completed"
	// ClassOutOfRange ids are >= replicas: their pods are deleted.
	ClassOutOfRange Class = "OutOfRange"
)

// Desired is the partition of [0, replicas) into desired-running and completed ids. Completed ids are
// kept sparsely; every other id in range is desired-running.
type Desired struct {
	// Replicas is spec.replicas (negative values read as 0).
	Replicas int
	// Completed holds the completed ids in [0, Replicas).
	Completed map[int]bool
	// PrevStatuses is the previous status.statuses by canonical id (non-canonical keys dropped).
	PrevStatuses map[int]tkestackv1.InstanceStatus
}

// computeDesired partitions [0, replicas). finishedAreCompleted = !deletePodAfterAppFinish or the
// previous app status is finished; an id is completed when it is killed, or finishedAreCompleted and its
// previous status is Failed or Succ. A previous status Killed without a Killed spec entry is desired-running
// (restart).
func computeDesired(replicas int32, killed map[int]bool, prev map[string]tkestackv1.InstanceStatus,
	prevApp tkestackv1.AppStatus, deletePodAfterAppFinish bool) Desired {
	d := Desired{Replicas: int(max(replicas, 0)), Completed: map[int]bool{}, PrevStatuses: map[int]tkestackv1.InstanceStatus{}}
	for key, st := range prev {
		if id, ok := tkestackv1.ParseInstanceID(key); ok {
			d.PrevStatuses[id] = st
		}
	}
	finishedAreCompleted := !deletePodAfterAppFinish || prevApp.IsFinished()
	for id, k := range killed {
		if k && id >= 0 && id < d.Replicas {
			d.Completed[id] = true
		}
	}
	if finishedAreCompleted {
		for id, st := range d.PrevStatuses {
			if id < d.Replicas && (st == tkestackv1.InstanceFailed || st == tkestackv1.InstanceSucc) {
				d.Completed[id] = true
			}
		}
	}
	return d
}

// Class returns the class of an id.
func (d Desired) Class(id int) Class {
	switch {
	case id < 0 || id >= d.Replicas:
		return ClassOutOfRange
	case d.Completed[id]:
		return ClassCompleted
	default:
		return ClassRunning
	}
}

// Count returns D, the number of desired-running ids.
func (d Desired) Count() int {
	return d.Replicas - len(d.Completed)
}

// Prev returns the previous status of an id ("" when absent).
func (d Desired) Prev(id int) tkestackv1.InstanceStatus {
	return d.PrevStatuses[id]
}

// prevRanToCompletion reports whether the previous status of id is Failed or Succ: such an id without a pod
// is never re-run implicitly.
func (d Desired) prevRanToCompletion(id int) bool {
	st := d.PrevStatuses[id]
	return st == tkestackv1.InstanceFailed || st == tkestackv1.InstanceSucc
}
