package core

import (
	"fmt"
	"testing"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// TestComputeDesired: every previous status × deletePodAfterAppFinish × app finished.
func TestComputeDesired(t *testing.T) {
	all := []tkestackv1.InstanceStatus{"", tkestackv1.InstanceNotCreated, tkestackv1.InstancePending,
		tkestackv1.InstanceRunning, tkestackv1.InstanceUpdating, tkestackv1.InstancePodFailed, tkestackv1.InstancePodSucc,
		tkestackv1.InstanceKilling, tkestackv1.InstanceKilled, tkestackv1.InstanceFailed, tkestackv1.InstanceSucc,
		tkestackv1.InstanceUnknown, "Bogus"}
	for _, prev := range all {
		for _, deleteAfter := range []bool{true, false} {
			for _, app := range []tkestackv1.AppStatus{tkestackv1.AppRunning, tkestackv1.AppSucc, tkestackv1.AppFailed, tkestackv1.AppKilled, ""} {
				for _, killed := range []bool{false, true} {
					name := fmt.Sprintf("prev=%s/deleteAfter=%v/app=%s/killed=%v", prev, deleteAfter, app, killed)
					t.Run(name, func(t *testing.T) {
						finishedAreCompleted := !deleteAfter || app.IsFinished()
						want := ClassRunning
						if killed || (finishedAreCompleted && (prev == tkestackv1.InstanceFailed || prev == tkestackv1.InstanceSucc)) {
							want = ClassCompleted
						}
						d := computeDesired(3, map[int]bool{1: killed}, map[string]tkestackv1.InstanceStatus{"1": prev}, app, deleteAfter)
						if got := d.Class(1); got != want {
							t.Errorf("class = %s, want %s", got, want)
						}
					})
				}
			}
		}
	}
}

func TestDesiredRanges(t *testing.T) {
	d := computeDesired(3, map[int]bool{0: true, 7: true}, map[string]tkestackv1.InstanceStatus{
		"01": tkestackv1.InstanceSucc, "2": tkestackv1.InstanceSucc, "5": tkestackv1.InstanceFailed,
	}, tkestackv1.AppRunning, false)
	got := []Class{d.Class(-1), d.Class(0), d.Class(1), d.Class(2), d.Class(3), d.Class(7)}
	want := []Class{ClassOutOfRange, ClassCompleted, ClassRunning, ClassCompleted, ClassOutOfRange, ClassOutOfRange}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("class %d: %s, want %s", i, got[i], want[i])
		}
	}
	if d.Count() != 1 {
		t.Errorf("D = %d, want 1 (killed 7 and finished 5 are out of range)", d.Count())
	}
	if neg := computeDesired(-5, nil, nil, "", true); neg.Replicas != 0 || neg.Count() != 0 {
		t.Errorf("negative replicas: %+v", neg)
	}
}
