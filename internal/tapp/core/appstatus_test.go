package core

import (
	"slices"
	"testing"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

func TestComputeAppStatus(t *testing.T) {
	alive := []tkestackv1.InstanceStatus{tkestackv1.InstanceNotCreated, tkestackv1.InstancePending, tkestackv1.InstanceRunning,
		tkestackv1.InstanceUpdating, tkestackv1.InstanceKilling, tkestackv1.InstanceUnknown, tkestackv1.InstancePodFailed,
		tkestackv1.InstancePodSucc}
	finished := []tkestackv1.InstanceStatus{tkestackv1.InstanceKilled, tkestackv1.InstanceFailed, tkestackv1.InstanceSucc}
	tests := map[string]struct {
		in   []tkestackv1.InstanceStatus
		want tkestackv1.AppStatus
	}{
		"empty":                       {want: tkestackv1.AppPending},
		"killed only":                 {in: []tkestackv1.InstanceStatus{"Killed", "Killed"}, want: tkestackv1.AppKilled},
		"succ only":                   {in: []tkestackv1.InstanceStatus{"Succ"}, want: tkestackv1.AppSucc},
		"failed only":                 {in: []tkestackv1.InstanceStatus{"Failed"}, want: tkestackv1.AppFailed},
		"succ beats killed":           {in: []tkestackv1.InstanceStatus{"Killed", "Succ"}, want: tkestackv1.AppSucc},
		"failed beats succ":           {in: []tkestackv1.InstanceStatus{"Succ", "Failed"}, want: tkestackv1.AppFailed},
		"failed beats succ and kill":  {in: []tkestackv1.InstanceStatus{"Succ", "Killed", "Failed"}, want: tkestackv1.AppFailed},
		"failed beats killed":         {in: []tkestackv1.InstanceStatus{"Killed", "Failed"}, want: tkestackv1.AppFailed},
		"unknown string counts alive": {in: []tkestackv1.InstanceStatus{"Killed", "Bogus"}, want: tkestackv1.AppRunning},
	}
	for _, a := range alive {
		tests["alone "+string(a)] = struct {
			in   []tkestackv1.InstanceStatus
			want tkestackv1.AppStatus
		}{in: []tkestackv1.InstanceStatus{a}, want: tkestackv1.AppRunning}
		for _, other := range slices.Concat(finished, alive) {
			tests[string(a)+" with "+string(other)] = struct {
				in   []tkestackv1.InstanceStatus
				want tkestackv1.AppStatus
			}{in: []tkestackv1.InstanceStatus{other, a}, want: tkestackv1.AppRunning}
		}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := map[string]tkestackv1.InstanceStatus{}
			for i, s := range tc.in {
				m[tkestackv1.FormatInstanceID(i)] = s
			}
			if got := computeAppStatus(m); got != tc.want {
				t.Errorf("ComputeAppStatus(%v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestStatusCounts(t *testing.T) {
	replicas, ready := statusCounts(map[string]tkestackv1.InstanceStatus{
		"0": "Running", "1": "NotCreated", "2": "Killed", "3": "Running", "4": "Succ", "9": "Killing",
	})
	if replicas != 5 || ready != 2 {
		t.Errorf("StatusCounts = %d, %d; want 5, 2", replicas, ready)
	}
}
