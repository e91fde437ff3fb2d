package core

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/testutil"
)

func TestSummarize(t *testing.T) {
	tests := map[string]struct {
		app  *testutil.TAppWrapper
		pods func(p *Pass) Pods
		exp  map[int]bool
		want Summary
	}{
		"all current": {
			app:  newApp(2),
			pods: func(p *Pass) Pods { return podsOf(runningPod(p, 0), runningPod(p, 1)) },
			want: Summary{D: 2, Updated: 2, Available: 2},
		},
		"missing, outdated, updating, terminating, out of range": {
			app: newApp(5),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, updating), runningPod(p, 2, terminating), runningPod(p, 3),
					runningPod(p, 8))
			},
			want: Summary{D: 5, Updated: 1, Available: 2, Missing: 1, Outdated: 1, InProgress: 1, AwaitingDeletion: 2},
		},
		"finished instances are not missing; migrating pods await deletion": {
			app: newApp(3).StatusStatuses(tkestackv1.AppRunning, statuses("0", "Succ")),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 1, phase(corev1.PodSucceeded)), runningPod(p, 2))
			},
			want: Summary{D: 3, Updated: 2, Available: 1, AwaitingDeletion: 1},
		},
		"pending expectation is unavailable": {
			app:  newApp(1),
			pods: func(p *Pass) Pods { return podsOf(runningPod(p, 0)) },
			exp:  map[int]bool{0: true},
			want: Summary{D: 1, Updated: 1},
		},
		"minReadySeconds wait": {
			app:  newApp(1).Mutate(func(a *tkestackv1.TApp) { a.Spec.MinReadySeconds = 30 }),
			pods: func(p *Pass) Pods { return podsOf(runningPod(p, 0)) },
			want: Summary{D: 1, Updated: 1, RequeueAfter: 20 * time.Second},
		},
		"unresolvable template: neither updated nor outdated": {
			app:  newApp(1).Templates(pairs("0", "missing")),
			pods: func(p *Pass) Pods { return podsOf(runningPod(p, 0)) },
			want: Summary{D: 1, Available: 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := passOf(tc.app)
			got := p.Summarize(Observation{Pods: tc.pods(p), Expecting: tc.exp, Now: t0.Add(10 * time.Second)})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

func condSummary(conds []metav1.Condition) map[string]string {
	out := map[string]string{}
	for _, c := range conds {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

func TestConditions(t *testing.T) {
	tests := map[string]struct {
		app    *testutil.TAppWrapper
		sum    Summary
		issues []Issue
		want   map[string]string
	}{
		"steady": {
			app: newApp(3), sum: Summary{D: 3, Available: 3, Updated: 3},
			want: map[string]string{"Available": "True/MinimumReplicasAvailable", "Progressing": "False/RolloutComplete", "ReplicaFailure": "False/NoFailures"},
		},
		"zero desired is available": {
			app: newApp(0), sum: Summary{},
			want: map[string]string{"Available": "True/MinimumReplicasAvailable", "Progressing": "False/RolloutComplete", "ReplicaFailure": "False/NoFailures"},
		},
		"one below with budget 1": {
			app: newApp(3), sum: Summary{D: 3, Available: 2, Outdated: 1},
			want: map[string]string{"Available": "True/MinimumReplicasAvailable", "Progressing": "True/RolloutInProgress", "ReplicaFailure": "False/NoFailures"},
		},
		"two below with budget 1": {
			app: newApp(3), sum: Summary{D: 3, Available: 1, Missing: 2},
			want: map[string]string{"Available": "False/MinimumReplicasUnavailable", "Progressing": "True/RolloutInProgress", "ReplicaFailure": "False/NoFailures"},
		},
		"percent budget": {
			app: newApp(4).MaxUnavailable(intstr.FromString("50%")), sum: Summary{D: 4, Available: 2, InProgress: 2},
			want: map[string]string{"Available": "True/MinimumReplicasAvailable", "Progressing": "True/RolloutInProgress", "ReplicaFailure": "False/NoFailures"},
		},
		"paused with outdated pods": {
			app: newApp(2).Mutate(func(a *tkestackv1.TApp) { a.Spec.UpdateStrategy.Paused = true }), sum: Summary{D: 2, Available: 2, Outdated: 2},
			want: map[string]string{"Available": "True/MinimumReplicasAvailable", "Progressing": "False/Paused", "ReplicaFailure": "False/NoFailures"},
		},
		"paused but creating": {
			app: newApp(2).Mutate(func(a *tkestackv1.TApp) { a.Spec.UpdateStrategy.Paused = true }), sum: Summary{D: 2, Available: 1, Outdated: 1, Missing: 1},
			want: map[string]string{"Available": "True/MinimumReplicasAvailable", "Progressing": "True/RolloutInProgress", "ReplicaFailure": "False/NoFailures"},
		},
		"awaiting deletion": {
			app: newApp(1), sum: Summary{D: 1, Available: 1, AwaitingDeletion: 1},
			want: map[string]string{"Available": "True/MinimumReplicasAvailable", "Progressing": "True/RolloutInProgress", "ReplicaFailure": "False/NoFailures"},
		},
		"failures": {
			app: newApp(1), sum: Summary{D: 1, Available: 1},
			issues: []Issue{{Reason: tkestackv1.ReasonInvalidSpec, Subject: "spec.x"}, {Reason: tkestackv1.ReasonFailedCreate, Subject: "3"}},
			want:   map[string]string{"Available": "True/MinimumReplicasAvailable", "Progressing": "False/RolloutComplete", "ReplicaFailure": "True/FailedCreate"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := passOf(tc.app)
			conds := p.Conditions(tc.sum, tc.issues, t0)
			if diff := cmp.Diff(tc.want, condSummary(conds)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			for _, c := range conds {
				if c.ObservedGeneration != p.App.Generation {
					t.Errorf("%s: observedGeneration %d", c.Type, c.ObservedGeneration)
				}
			}
		})
	}
}

func TestConditionTransitionTimes(t *testing.T) {
	b := newApp(1)
	p := passOf(b)
	first := p.Conditions(Summary{D: 1, Available: 1}, nil, t0)
	other := metav1.Condition{Type: "Custom", Status: metav1.ConditionTrue, Reason: "X", LastTransitionTime: mt0}
	b.Status.Conditions = append(slices.Clone(first), other)
	later := t0.Add(time.Hour)
	again := passOf(b).Conditions(Summary{D: 2, Available: 0, Missing: 2}, nil, later)
	times := map[string]time.Time{}
	for _, c := range again {
		times[c.Type] = c.LastTransitionTime.Time
	}
	want := map[string]time.Time{"Available": later, "Progressing": later, "ReplicaFailure": t0, "Custom": t0}
	if diff := cmp.Diff(want, times); diff != "" {
		t.Errorf("transition times (-want +got):\n%s", diff)
	}
}

func TestSummarizeIssues(t *testing.T) {
	var many []Issue
	for i := 20; i >= 0; i-- {
		many = append(many, Issue{Reason: tkestackv1.ReasonTemplateNotFound, Subject: fmt.Sprint(i)})
	}
	tests := map[string]struct {
		in              []Issue
		reason, message string
	}{
		"none": {},
		"ordered by precedence, ids sorted numerically and de-duplicated": {
			in: []Issue{{Reason: tkestackv1.ReasonInvalidSpec, Subject: "spec.selector"}, {Reason: tkestackv1.ReasonPodNameConflict, Subject: "10"},
				{Reason: tkestackv1.ReasonPodNameConflict, Subject: "9"}, {Reason: tkestackv1.ReasonPodNameConflict, Subject: "9"}},
			reason:  tkestackv1.ReasonPodNameConflict,
			message: "PodNameConflict: 9, 10; InvalidSpec: spec.selector",
		},
		"the message of the lowest subject with one, per reason": {
			in: []Issue{{Reason: tkestackv1.ReasonFailedCreate, Subject: "3", Message: "pods \"web-3\" is forbidden"},
				{Reason: tkestackv1.ReasonFailedCreate, Subject: "2"},
				{Reason: tkestackv1.ReasonFailedCreate, Subject: "10", Message: "pods \"web-10\" is forbidden"}},
			reason:  tkestackv1.ReasonFailedCreate,
			message: `FailedCreate: 2, 3, 10 (3: pods "web-3" is forbidden)`,
		},
		"truncated": {
			in: many, reason: tkestackv1.ReasonTemplateNotFound,
			message: "TemplateNotFound: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 11 more",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reason, msg := summarizeIssues(tc.in)
			if reason != tc.reason || msg != tc.message {
				t.Errorf("SummarizeIssues = %q, %q; want %q, %q", reason, msg, tc.reason, tc.message)
			}
		})
	}
	long := truncateMessage(strings.Repeat("é", 1000))
	if len(long) > maxConditionMessage || !strings.HasSuffix(long, "...") || !strings.HasPrefix(long, "é") {
		t.Errorf("truncateMessage: %d bytes", len(long))
	}
}

// TestStatus: the whole status from a post-action view.
func TestStatus(t *testing.T) {
	b := newApp(4).Killed("3").StatusStatuses(tkestackv1.AppRunning, statuses("3", "Running"))
	b.TApp.Generation = 7
	p := passOf(b)
	view := Observation{Now: t0, Pods: podsOf(
		runningPod(p, 0),
		runningPod(p, 1, updating),
		AfterCreate(runningPod(p, 2)),
		runningPod(p, 3, terminating),
	)}
	got, requeue := p.Status(view, nil)
	want := tkestackv1.TAppStatus{
		ObservedGeneration: 7,
		Replicas:           4,
		ReadyReplicas:      1,
		UpdatedReplicas:    2, // 0 and the created 2; 1 is in progress
		AvailableReplicas:  1,
		ScaleLabelSelector: "app=web",
		AppStatus:          tkestackv1.AppRunning,
		Statuses:           map[string]tkestackv1.InstanceStatus{"0": "Running", "1": "Updating", "2": "Pending", "3": "Killing"},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(tkestackv1.TAppStatus{}, "Conditions")); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if requeue != 0 {
		t.Errorf("requeue %v", requeue)
	}
	if diff := cmp.Diff(map[string]string{"Available": "False/MinimumReplicasUnavailable", "Progressing": "True/RolloutInProgress",
		"ReplicaFailure": "False/NoFailures"}, condSummary(got.Conditions)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}

	empty, _ := passOf(newApp(0)).Status(Observation{Now: t0}, nil)
	if empty.AppStatus != tkestackv1.AppPending || empty.Statuses != nil || empty.Replicas != 0 {
		t.Errorf("replicas 0: %+v", empty)
	}
}
