package stager

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
)

// TestClockStartRoundsUp: the status keeps times to the second, rounded down; a clock started within a
// second is stored as the next whole second, so a soak or a deadline measured from the stored value never
// ends early.
func TestClockStartRoundsUp(t *testing.T) {
	cases := map[string]struct {
		now, want time.Time
	}{
		"a whole second stays":        {now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), want: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)},
		"within a second rounds up":   {now: time.Date(2025, 3, 1, 12, 0, 0, 300_000_000, time.UTC), want: time.Date(2025, 3, 1, 12, 0, 1, 0, time.UTC)},
		"a nanosecond past rounds up": {now: time.Date(2025, 3, 1, 12, 0, 59, 1, time.UTC), want: time.Date(2025, 3, 1, 12, 1, 0, 0, time.UTC)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &pass{now: metav1.NewTime(tc.now)}
			if got := p.clockStart().Time; !got.Equal(tc.want) {
				t.Errorf("clockStart() = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestHistoryInOrderForAQuickStage: a stage that completes within its first second (activated at
// 12:00:00.4, promoted at 12:00:00.9) would show its clock starting after it completed (clockStartedAt
// 12:00:01, completedAt 12:00:00) if the rounded-up clock start were kept. Every entry, read back as the API
// server stores it (whole seconds), must read startedAt <= clockStartedAt <= completedAt, and the active
// stage's clock keeps its rounded-up start.
func TestHistoryInOrderForAQuickStage(t *testing.T) {
	w := newWorld(t, twoStages().Obj())
	w.now = t0.Add(400 * time.Millisecond)
	w.activate()
	w.sbp.Status = storedStatus(t, w.sbp.Status)
	w.bps[devName].CreationTimestamp = metav1.NewTime(t0) // the API server stores whole seconds too
	w.report("dev", nginxDeployment, "1")
	w.tick(500 * time.Millisecond)
	d := w.step()
	if got := entry(t, d.Status, "dev").Result; got != communityv1alpha1.StageSucceeded {
		t.Fatalf("dev = %s, want Succeeded within its first second (%+v)", got, d.Status.Conditions)
	}
	stored := storedStatus(t, d.Status)
	for _, e := range stored.Stages {
		checkInOrder(t, e)
	}
	if got, want := entry(t, stored, "dev").ClockStartedAt, at(t0); !got.Equal(want) {
		t.Errorf("dev clockStartedAt = %v, want %v (clamped to its completion)", got, want)
	}
	if got, want := entry(t, stored, "prod").ClockStartedAt, at(t0.Add(time.Second)); !got.Equal(want) {
		t.Errorf("prod clockStartedAt = %v, want %v (the active stage's clock start is rounded up)", got, want)
	}
}

// storedStatus is the status as the API server stores it: through JSON, times to the second.
func storedStatus(t *testing.T, st communityv1alpha1.StagedBindingPolicyStatus) communityv1alpha1.StagedBindingPolicyStatus {
	t.Helper()
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatalf("marshalling the status: %v", err)
	}
	var out communityv1alpha1.StagedBindingPolicyStatus
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("unmarshalling the status: %v", err)
	}
	return out
}

// checkInOrder fails unless startedAt <= clockStartedAt <= completedAt, for those of them that are set.
func checkInOrder(t *testing.T, e communityv1alpha1.StageStatus) {
	t.Helper()
	times := []*metav1.Time{e.StartedAt, e.ClockStartedAt, e.CompletedAt}
	var last *metav1.Time
	for _, tm := range times {
		if tm == nil {
			continue
		}
		if last != nil && tm.Before(last) {
			t.Errorf("stage %s out of order: startedAt %v, clockStartedAt %v, completedAt %v",
				e.Name, e.StartedAt, e.ClockStartedAt, e.CompletedAt)
			return
		}
		last = tm
	}
}
