package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// recorded returns records on n1 for the given names.
func recorded(names ...string) States {
	s := States{}
	for _, n := range names {
		s[n] = st("n1", zoneHost...)
	}
	return s
}

// removalCase is one pass over the records have with the pods, under the policy.
type removalCase struct {
	policy kruisev1beta1.PersistentPodStateRetentionPolicyType
	target *Target
	have   States
	pods   []*corev1.Pod
	want   States
}

var removalCases = map[string]removalCase{
	"in-range record kept with its pod gone": {
		target: nativeTarget(3, 0), have: recorded("web-0", "web-1", "web-2"),
		want: recorded("web-0", "web-1", "web-2"),
	},
	"out-of-range record removed once its pod is gone": {
		target: nativeTarget(2, 0), have: recorded("web-0", "web-1", "web-2", "web-10"),
		want: recorded("web-0", "web-1"),
	},
	"out-of-range record kept while its pod is active, even not ready": {
		target: nativeTarget(1, 0), have: recorded("web-0", "web-1", "web-2"),
		pods: []*corev1.Pod{readyPod("web-1", "n1", notReady), readyPod("web-2", "", notReady)},
		want: recorded("web-0", "web-1", "web-2"),
	},
	"out-of-range record removed once its pod is terminating": {
		target: nativeTarget(1, 0), have: recorded("web-0", "web-1"),
		pods: []*corev1.Pod{readyPod("web-1", "n1", terminating)},
		want: recorded("web-0"),
	},
	"out-of-range record removed once its pod has succeeded or failed": {
		target: nativeTarget(1, 0), have: recorded("web-0", "web-1", "web-2"),
		pods: []*corev1.Pod{readyPod("web-1", "n1", phase(corev1.PodSucceeded)), readyPod("web-2", "n1", phase(corev1.PodFailed))},
		want: recorded("web-0"),
	},
	"out-of-range running pod recorded and kept": {
		target: nativeTarget(1, 0), have: recorded("web-0"),
		pods: []*corev1.Pod{readyPod("web-4", "n3")},
		want: States{"web-0": st("n1", zoneHost...), "web-4": st("n3", zoneKey, "b", hostKey, "n3")},
	},
	"start offset": {
		target: nativeTarget(2, 5), have: recorded("web-0", "web-4", "web-5", "web-6", "web-7"),
		want: recorded("web-5", "web-6"),
	},
	"reservation-aware range": { // replicas 3, reserved 1 and 3: valid 0, 2, 4
		target: kruiseTarget(3, 0, 1, 3), have: recorded("web-0", "web-1", "web-2", "web-3", "web-4", "web-5"),
		pods: []*corev1.Pod{readyPod("web-3", "n1", notReady)},
		want: recorded("web-0", "web-2", "web-3", "web-4"),
	},
	"reservation-aware range with start": { // replicas 2 from 10, reserved 10: valid 11, 12
		target: kruiseTarget(2, 10, 10), have: recorded("web-9", "web-10", "web-11", "web-12", "web-13"),
		want: recorded("web-11", "web-12"),
	},
	"tapp: killed instances keep their records": {
		target: tappTarget(4), have: recorded("web-0", "web-1", "web-2", "web-3", "web-4"),
		pods: []*corev1.Pod{readyPod("web-0", "n1"), readyPod("web-2", "n1", phase(corev1.PodSucceeded))},
		want: recorded("web-0", "web-1", "web-2", "web-3"),
	},
	"names with no ordinal kept": {
		target: nativeTarget(1, 0), have: recorded("web", "web-x", "web-", "web-0", "web-1"),
		want: recorded("web", "web-x", "web-", "web-0"),
	},
	"WhenDeleted: scale-down keeps records": {
		policy: kruisev1beta1.RetainWhenDeleted, target: nativeTarget(1, 0),
		have: recorded("web-0", "web-1", "web-7"), pods: []*corev1.Pod{readyPod("web-1", "n1", terminating)},
		want: recorded("web-0", "web-1", "web-7"),
	},
	"explicit WhenScaled": {
		policy: kruisev1beta1.RetainWhenScaled, target: nativeTarget(1, 0), have: recorded("web-0", "web-1"),
		want: recorded("web-0"),
	},
	"unknown policy behaves as WhenScaled": {
		policy: "Forever", target: nativeTarget(1, 0), have: recorded("web-0", "web-1"),
		want: recorded("web-0"),
	},
	"everything removed": {
		target: nativeTarget(1, 3), have: recorded("web-0", "web-1"),
		want: nil,
	},
}

func TestComputeRemoval(t *testing.T) {
	for name, tc := range removalCases {
		t.Run(name, func(t *testing.T) {
			got := compute(newPPS(withPolicy(tc.policy), withStates(tc.have)), tc.target, tc.pods...)
			if diff := cmp.Diff(tc.want, got.PodStates); diff != "" {
				t.Errorf("podStates (-want +got):\n%s", diff)
			}
		})
	}
}

// TestComputeTargetGoneOrEmpty: a missing or deleting target removes everything under both policies; 0
// replicas removes everything under WhenScaled and freezes the records under WhenDeleted.
func TestComputeTargetGoneOrEmpty(t *testing.T) {
	deleting := nativeTarget(3, 0)
	deleting.Deleting = true
	have := States{
		"web-0": withAnnos(st("n1", zoneKey, "a", hostKey, "n1", rackKey, "r1"), ipKey, "1", macKey, "m"),
		"web-5": st("n2", zoneKey, "a", hostKey, "n2"),
	}
	frozen := States{
		"web-0": withAnnos(st("n1", zoneKey, "a", hostKey, "n1"), ipKey, "1"), // untracked keys dropped
		"web-5": st("n2", zoneKey, "a", hostKey, "n2"),
	}
	pods := []*corev1.Pod{
		readyPod("web-0", "n3", annos(ipKey, "2")), // on another node: not recorded again
		readyPod("web-1", "n1"),                    // no record: not added
	}
	cases := map[string]struct {
		policy kruisev1beta1.PersistentPodStateRetentionPolicyType
		target *Target
		want   States
	}{
		"missing, WhenScaled":    {policy: kruisev1beta1.RetainWhenScaled, target: nil, want: nil},
		"missing, WhenDeleted":   {policy: kruisev1beta1.RetainWhenDeleted, target: nil, want: nil},
		"deleting, WhenScaled":   {policy: kruisev1beta1.RetainWhenScaled, target: deleting, want: nil},
		"deleting, WhenDeleted":  {policy: kruisev1beta1.RetainWhenDeleted, target: deleting, want: nil},
		"0 replicas, WhenScaled": {policy: kruisev1beta1.RetainWhenScaled, target: nativeTarget(0, 0), want: nil},
		"0 replicas, empty":      {policy: "", target: nativeTarget(0, 0), want: nil},
		"0 replicas, unknown":    {policy: "Sometimes", target: nativeTarget(0, 0), want: nil},
		"0 replicas, WhenDeleted": {
			policy: kruisev1beta1.RetainWhenDeleted, target: nativeTarget(0, 0), want: frozen,
		},
		"negative replicas, WhenDeleted": {
			policy: kruisev1beta1.RetainWhenDeleted, target: &Target{Replicas: -1}, want: frozen,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pps := newPPS(withPolicy(tc.policy), withAnnotationKeys(ipKey), withStates(have))
			got := compute(pps, tc.target, pods...)
			if diff := cmp.Diff(Result{PodStates: tc.want}, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}
