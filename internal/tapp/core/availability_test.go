package core

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

func TestAvailability(t *testing.T) {
	p := passOf(newApp(1))
	at := func(ct corev1.PodConditionType, d time.Duration) podOpt {
		return func(pod *corev1.Pod) {
			for i := range pod.Status.Conditions {
				if pod.Status.Conditions[i].Type == ct {
					pod.Status.Conditions[i].LastTransitionTime = metav1.NewTime(t0.Add(d))
				}
			}
		}
	}
	tests := map[string]struct {
		opts      []podOpt
		minReady  int32
		now       time.Time
		available bool
		wait      time.Duration
	}{
		"running and ready":               {available: true},
		"no ready condition":              {opts: []podOpt{noReady}},
		"not ready":                       {opts: []podOpt{notReady}},
		"pending":                         {opts: []podOpt{phase(corev1.PodPending)}},
		"succeeded":                       {opts: []podOpt{phase(corev1.PodSucceeded)}},
		"terminating":                     {opts: []podOpt{terminating}},
		"gate false":                      {opts: []podOpt{gateFalse}},
		"gate absent":                     {opts: []podOpt{noGate}, available: true},
		"in progress":                     {opts: []podOpt{updating}},
		"min ready elapsed":               {minReady: 10, now: t0.Add(10 * time.Second), available: true},
		"min ready pending":               {minReady: 10, now: t0.Add(4 * time.Second), wait: 6 * time.Second},
		"min ready from later gate":       {opts: []podOpt{at(tkestackv1.InPlaceUpdateReady, 5*time.Second)}, minReady: 10, now: t0.Add(10 * time.Second), wait: 5 * time.Second},
		"min ready from later ready":      {opts: []podOpt{at(corev1.PodReady, 8*time.Second)}, minReady: 10, now: t0.Add(10 * time.Second), wait: 8 * time.Second},
		"min ready without gate":          {opts: []podOpt{noGate}, minReady: 1, now: t0.Add(time.Second), available: true},
		"min ready not ready: no requeue": {opts: []podOpt{notReady}, minReady: 10, now: t0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			ok, wait := Availability(runningPod(p, 0, tc.opts...), tc.minReady, now)
			if ok != tc.available || wait != tc.wait {
				t.Errorf("Availability = %v, %v; want %v, %v", ok, wait, tc.available, tc.wait)
			}
		})
	}
	if ok, _ := Availability(nil, 0, t0); ok {
		t.Error("no pod is not available")
	}
}
