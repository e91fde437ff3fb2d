package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/testutil"
)

func TestScheduleUpdates(t *testing.T) {
	set := func(ids ...int) map[int]bool {
		m := map[int]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	rolling := func(ids ...int) []Candidate {
		var out []Candidate
		for _, id := range ids {
			out = append(out, Candidate{ID: id, Rolling: true})
		}
		return out
	}
	force := func(ids ...int) []Candidate {
		var out []Candidate
		for _, id := range ids {
			out = append(out, Candidate{ID: id})
		}
		return out
	}
	tests := map[string]struct {
		cands          []Candidate
		available      map[int]bool
		d, force, roll int
		want           []int
	}{
		"one at a time, lowest first":  {cands: rolling(2, 0, 1), available: set(0, 1, 2), d: 3, force: 3, roll: 1, want: []int{0}},
		"two at a time":                {cands: rolling(0, 1, 2), available: set(0, 1, 2), d: 3, force: 3, roll: 2, want: []int{0, 1}},
		"budget above D":               {cands: rolling(0, 1, 2), available: set(0, 1, 2), d: 3, force: 3, roll: 10, want: []int{0, 1, 2}},
		"unavailable always scheduled": {cands: rolling(0, 1, 2), available: set(0, 1), d: 3, force: 3, roll: 1, want: []int{2}},
		"nothing available: all":       {cands: rolling(0, 1, 2), available: set(), d: 3, force: 3, roll: 1, want: []int{0, 1, 2}},
		"skip and continue":            {cands: rolling(0, 5), available: set(0, 1, 2), d: 4, force: 4, roll: 1, want: []int{5}},
		"budget already used up":       {cands: rolling(0, 1), available: set(0, 1), d: 3, force: 3, roll: 1},
		"force path first":             {cands: append(force(1), rolling(0, 2)...), available: set(0, 1, 2), d: 3, force: 3, roll: 1, want: []int{1}},
		"force budget int":             {cands: force(0, 1, 2), available: set(0, 1, 2), d: 3, force: 1, roll: 3, want: []int{0}},
		"force then rolling share A":   {cands: append(force(3), rolling(0, 1)...), available: set(0, 1, 2, 3), d: 4, force: 4, roll: 2, want: []int{0, 3}},
		"force unavailable free":       {cands: force(0, 1), available: set(1), d: 2, force: 1, roll: 1, want: []int{0}},
		"negative minAvailable":        {cands: rolling(0, 1), available: set(0, 1), d: 2, force: 2, roll: 5, want: []int{0, 1}},
		"no candidates":                {available: set(0), d: 1, force: 1, roll: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := len(tc.available)
			got := scheduleUpdates(tc.cands, tc.available, tc.d, tc.force, tc.roll)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scheduled (-want +got):\n%s", diff)
			}
			if len(tc.available) != before {
				t.Error("the available set was modified")
			}
		})
	}
}

type planCase struct {
	app     *testutil.TAppWrapper
	pods    func(p *Pass) Pods
	obs     func(o *Observation)
	want    map[string]Action
	reasons map[string]string // only the ids listed are checked
	issues  []string          // reasons
}

func runPlanCases(t *testing.T, tests map[string]planCase) {
	t.Helper()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := passOf(tc.app)
			obs := Observation{Now: t0}
			if tc.pods != nil {
				obs.Pods = tc.pods(p)
			}
			if tc.obs != nil {
				tc.obs(&obs)
			}
			plan := p.Plan(obs)
			if diff := cmp.Diff(tc.want, actionsByID(plan)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			for id, reason := range tc.reasons {
				n, _ := tkestackv1.ParseInstanceID(id)
				if a, _ := plan.Action(n); a.Reason != reason {
					t.Errorf("reason of %s = %q, want %q", id, a.Reason, reason)
				}
			}
			var issues []string
			for _, is := range plan.Issues {
				issues = append(issues, is.Reason)
			}
			if diff := cmp.Diff(tc.issues, issues); diff != "" {
				t.Errorf("issues (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanActionRows: each row of the action table.
func TestPlanActionRows(t *testing.T) {
	lost := func(o *Observation) { o.Nodes = map[string]*corev1.Node{} }
	forceDelete := func(a *tkestackv1.TApp) { a.Spec.ForceDeletePod = true }
	runPlanCases(t, map[string]planCase{
		"terminating: wait": {
			app:  newApp(1),
			pods: func(p *Pass) Pods { return podsOf(runningPod(p, 0, terminating)) },
			want: map[string]Action{"0": ActionWait},
		},
		"terminating on a lost node with forceDeletePod, any class": {
			app: newApp(2).Killed("1").Mutate(forceDelete),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, terminating), runningPod(p, 1, terminating), runningPod(p, 5, terminating))
			},
			obs:  lost,
			want: map[string]Action{"0": ActionForceDelete, "1": ActionForceDelete, "5": ActionForceDelete},
		},
		"terminating on a ready node: wait": {
			app:  newApp(1).Mutate(forceDelete),
			pods: func(p *Pass) Pods { return podsOf(runningPod(p, 0, terminating)) },
			obs: func(o *Observation) {
				o.Nodes = map[string]*corev1.Node{"node-1": {Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: "True"}}}}}
			},
			want: map[string]Action{"0": ActionWait},
		},
		"no pod, previous Failed/Succ: never re-run": {
			app:     newApp(3).StatusStatuses(tkestackv1.AppRunning, statuses("0", "Failed", "1", "Succ", "2", "Killed")),
			want:    map[string]Action{"0": ActionNone, "1": ActionNone, "2": ActionCreate},
			reasons: map[string]string{"0": ReasonFinished, "1": ReasonFinished},
		},
		"no pod, template unresolvable": {
			app:     newApp(2).Templates(pairs("1", "missing")),
			want:    map[string]Action{"0": ActionCreate, "1": ActionNone},
			reasons: map[string]string{"1": tkestackv1.ReasonTemplateNotFound},
			issues:  []string{tkestackv1.ReasonTemplateNotFound},
		},
		"no pod, name taken": {
			app:     newApp(2),
			obs:     func(o *Observation) { o.NameTaken = map[int]bool{1: true} },
			want:    map[string]Action{"0": ActionCreate, "1": ActionNone},
			reasons: map[string]string{"1": tkestackv1.ReasonPodNameConflict},
			issues:  []string{tkestackv1.ReasonPodNameConflict},
		},
		"no pod, expectation pending": {
			app:     newApp(2),
			obs:     func(o *Observation) { o.Expecting = map[int]bool{0: true} },
			want:    map[string]Action{"0": ActionNone, "1": ActionCreate},
			reasons: map[string]string{"0": ReasonExpectationPending},
		},
		"no pod, template does not match the selector": {
			app:     newApp(2).Pool("other", tplWith(oldImage)).Templates(pairs("1", "other")).Mutate(func(a *tkestackv1.TApp) { a.Spec.TemplatePool["other"].Labels["app"] = "x" }),
			want:    map[string]Action{"0": ActionCreate, "1": ActionNone},
			reasons: map[string]string{"1": tkestackv1.ReasonInvalidSpec},
			issues:  []string{tkestackv1.ReasonInvalidSpec},
		},
		"existing pod, template unresolvable: kept whatever its phase": {
			app: newApp(2).Templates(pairs("0", "missing", "1", "missing")),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, phase(corev1.PodFailed)), runningPod(p, 1, label(tkestackv1.TAppUniqHashKey, "x")))
			},
			want:   map[string]Action{"0": ActionNone, "1": ActionNone},
			issues: []string{tkestackv1.ReasonTemplateNotFound, tkestackv1.ReasonTemplateNotFound},
		},
		"completed phase: delete if migrating, else keep": {
			app: newApp(3).Pool("never", tplWith(oldImage)).Templates(pairs("1", "never", "2", "never")).Mutate(func(a *tkestackv1.TApp) {
				tpl := a.Spec.TemplatePool["never"]
				tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
				a.Spec.TemplatePool["never"] = tpl
			}),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, phase(corev1.PodSucceeded)), runningPod(p, 1, phase(corev1.PodFailed)),
					runningPod(p, 2, phase(corev1.PodFailed), label(tkestackv1.TAppHashKey, "v1-0000000000000000")))
			},
			want:    map[string]Action{"0": ActionDelete, "1": ActionNone, "2": ActionNone},
			reasons: map[string]string{"1": ReasonFinished, "2": ReasonFinished},
		},
		"foreign hash: restamp when images match, update in place when only images differ, else recreate": {
			app: newApp(6).MaxUnavailable(intstr.FromInt32(6)),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, label(tkestackv1.TAppHashKey, "1234567")),
					runningPod(p, 1, label(tkestackv1.TAppHashKey, ""), func(p *corev1.Pod) { p.Spec.Containers[0].Image = "docker.io/library/nginx:1.7.9" }),
					runningPod(p, 2, label(tkestackv1.TAppHashKey, "99"), func(p *corev1.Pod) { p.Spec.Containers[0].Image = newImage }),
					// Defaults and injected volumes are not differences.
					runningPod(p, 3, label(tkestackv1.TAppHashKey, "99"), func(p *corev1.Pod) {
						p.Spec.Containers[0].Image = newImage
						p.Spec.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
						p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "kube-api-access-x1y2z"})
						p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists})
					}),
					// A template change beyond images recreates, as upstream's uniq hash would have differed.
					runningPod(p, 4, label(tkestackv1.TAppHashKey, "99"), func(p *corev1.Pod) {
						p.Spec.Containers[0].Image = newImage
						p.Spec.Containers[0].Args = []string{"--old-flag"}
					}),
					runningPod(p, 5, label(tkestackv1.TAppHashKey, "99"), func(p *corev1.Pod) {
						p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "REMOVED", Value: "1"})
					}))
			},
			want: map[string]Action{"0": ActionRestamp, "1": ActionRestamp, "2": ActionUpdate, "3": ActionUpdate,
				"4": ActionRecreate, "5": ActionRecreate},
		},
		"outdated: update when the uniq hash matches, else recreate": {
			app: newApp(3).MaxUnavailable(intstr.FromInt32(3)),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, label(tkestackv1.TAppHashKey, "v1-0000000000000000")),
					runningPod(p, 1, label(tkestackv1.TAppHashKey, "v1-0000000000000000"), label(tkestackv1.TAppUniqHashKey, "v1-0000000000000000")),
					runningPod(p, 2))
			},
			want:    map[string]Action{"0": ActionUpdate, "1": ActionRecreate, "2": ActionNone},
			reasons: map[string]string{"2": ReasonCurrent},
		},
		"completed and out of range pods are deleted": {
			app: newApp(2).Killed("1"),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0), runningPod(p, 1), runningPod(p, 2), runningPod(p, 7))
			},
			want: map[string]Action{"0": ActionNone, "1": ActionDelete, "2": ActionDelete, "7": ActionDelete},
		},
		"finished instances are deleted after the app finished": {
			app:  newApp(2).StatusStatuses(tkestackv1.AppSucc, statuses("0", "Succ", "1", "Succ")),
			pods: func(p *Pass) Pods { return podsOf(runningPod(p, 0, phase(corev1.PodSucceeded))) },
			want: map[string]Action{"0": ActionDelete},
		},
		"blocked spec: nothing": {
			app:     newApp(2).Mutate(func(a *tkestackv1.TApp) { a.Spec.Selector.MatchLabels["app"] = "nope" }),
			pods:    func(p *Pass) Pods { return podsOf(runningPod(p, 0, noGate), runningPod(p, 5)) },
			want:    map[string]Action{"0": ActionNone, "1": ActionNone, "5": ActionNone},
			reasons: map[string]string{"0": tkestackv1.ReasonInvalidSpec, "1": tkestackv1.ReasonInvalidSpec},
			issues:  []string{tkestackv1.ReasonInvalidSpec},
		},
		"TApp deleting: only force deletes": {
			app: newApp(3).Mutate(forceDelete).Mutate(func(a *tkestackv1.TApp) { a.DeletionTimestamp = &mt0 }),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, terminating), runningPod(p, 1, label(tkestackv1.TAppHashKey, "v1-0000000000000000")), runningPod(p, 4))
			},
			obs:     lost,
			want:    map[string]Action{"0": ActionForceDelete, "1": ActionNone, "2": ActionNone, "4": ActionNone},
			reasons: map[string]string{"1": ReasonTAppDeleting, "2": ReasonTAppDeleting},
		},
		"malformed pods are reported": {
			app:    newApp(0),
			obs:    func(o *Observation) { o.Malformed = []*corev1.Pod{{}} },
			want:   map[string]Action{},
			issues: []string{tkestackv1.ReasonMalformedPod},
		},
	})
}

func TestPlanUpdateDetails(t *testing.T) {
	p := passOf(newApp(3).Image(newImage).MaxUnavailable(intstr.FromInt32(3)).Mutate(func(a *tkestackv1.TApp) {
		a.Spec.Template.Labels["v"] = "2"
	}))
	old := passOf(newApp(3))
	metaOnly := passOf(newApp(3).Mutate(func(a *tkestackv1.TApp) { a.Spec.Template.Labels["v"] = "1" }))
	plan := p.Plan(Observation{Now: t0, Pods: podsOf(runningPod(old, 0), runningPod(metaOnly, 1, func(pod *corev1.Pod) {
		pod.Spec.Containers[0].Image = newImage
	}), runningPod(old, 2, gateFalse))})
	for id, wantInPlace := range map[int]bool{0: true, 1: false, 2: true} {
		a, _ := plan.Action(id)
		if a.Action != ActionUpdate || a.InPlace != wantInPlace || a.Desired == nil || a.Desired.Name != PodName(testName, id) {
			t.Errorf("id %d: action %s in place %v desired %v", id, a.Action, a.InPlace, a.Desired != nil)
		}
	}
	// The metadata-only update also gets gate reconciliation; image updates do not (the protocol owns it).
	if a, _ := plan.Action(1); a.Gate.Status != corev1.ConditionTrue {
		t.Errorf("metadata-only update gate: %+v", a.Gate)
	}
	if a, _ := plan.Action(2); a.Gate.Write {
		t.Errorf("image update must not get a separate gate write: %+v", a.Gate)
	}
	wantOrder := [][]int{ids(plan.GateWrites()), ids(plan.Deletes()), ids(plan.Creates()), ids(plan.Updates())}
	if diff := cmp.Diff([][]int{nil, nil, nil, {0, 1, 2}}, wantOrder); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func ids(as []InstanceAction) []int {
	var out []int
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

// outdated marks a pod as carrying an older template (same uniq hash: in-place candidate).
var outdated = label(tkestackv1.TAppHashKey, "v1-0000000000000000")

// TestPlanBudgets: exact scheduled sets for mixes of instance states.
func TestPlanBudgets(t *testing.T) {
	tests := map[string]struct {
		app       *testutil.TAppWrapper
		pods      func(p *Pass) Pods
		expecting map[int]bool
		want      []int
		paused    bool
	}{
		"default budget: one at a time": {
			app: newApp(3),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated), runningPod(p, 2, outdated))
			},
			want: []int{0},
		},
		"percent rounds up on D": {
			app: newApp(3).MaxUnavailable(intstr.FromString("50%")),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated), runningPod(p, 2, outdated))
			},
			want: []int{0, 1},
		},
		"int above D": {
			app:  newApp(2).MaxUnavailable(intstr.FromInt32(9)),
			pods: func(p *Pass) Pods { return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated)) },
			want: []int{0, 1},
		},
		"not-ready outdated pods go first, free": {
			app: newApp(3),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated), runningPod(p, 2, outdated, notReady))
			},
			want: []int{2},
		},
		"terminating pod consumes the budget": {
			app: newApp(3),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated), runningPod(p, 2, terminating))
			},
		},
		"missing pod consumes the budget": {
			app:  newApp(3),
			pods: func(p *Pass) Pods { return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated)) },
		},
		"migrating pod consumes the budget": {
			app: newApp(3),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated), runningPod(p, 2, phase(corev1.PodSucceeded)))
			},
		},
		"killed and out-of-range pods are outside D and A": {
			app: newApp(3).Killed("2"),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated), runningPod(p, 2, terminating), runningPod(p, 5, terminating))
			},
			want: []int{0},
		},
		"completed (finished) instances are outside D": {
			app: newApp(3).StatusStatuses(tkestackv1.AppSucc, statuses("2", "Succ")),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated))
			},
			want: []int{0},
		},
		"force-remapped ids first, all at once; rolling waits": {
			app: newApp(4).Pool("test", tplWith(newImage)).Templates(pairs("1", "test", "3", "test")),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated), runningPod(p, 2, outdated), runningPod(p, 3, outdated))
			},
			want: []int{1, 3},
		},
		"rolling-remapped ids use maxUnavailable": {
			app: newApp(3).Pool("test2", tplWith(newImage)).Templates(pairs("1", "test2", "2", "test2")).Mutate(func(a *tkestackv1.TApp) {
				a.Spec.UpdateStrategy.Template = "test2"
			}),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated), runningPod(p, 2, outdated))
			},
			want: []int{0}, // 0 is on the force path (default ≠ test2) and uses up the availability the rolling path needs
		},
		"rolling-remapped ids alone: one at a time": {
			app: newApp(3).Pool("test2", tplWith(newImage)).Templates(pairs("1", "test2", "2", "test2")).Mutate(func(a *tkestackv1.TApp) {
				a.Spec.UpdateStrategy.Template = "test2"
			}),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0), runningPod(p, 1, outdated), runningPod(p, 2, outdated))
			},
			want: []int{1},
		},
		"nothing available: everything outdated moves": {
			app: newApp(3),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated, notReady), runningPod(p, 1, outdated, notReady), runningPod(p, 2, outdated, phase(corev1.PodPending)))
			},
			want: []int{0, 1, 2},
		},
		"pending expectation: not a candidate and not available": {
			app: newApp(3).MaxUnavailable(intstr.FromInt32(2)),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated), runningPod(p, 1, outdated), runningPod(p, 2, outdated))
			},
			expecting: map[int]bool{0: true},
			want:      []int{1},
		},
		"paused": {
			app: newApp(3).Mutate(func(a *tkestackv1.TApp) { a.Spec.UpdateStrategy.Paused = true }),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated, notReady), runningPod(p, 1, outdated))
			},
			paused: true,
		},
		"recreate and update share the budget": {
			app: newApp(3).MaxUnavailable(intstr.FromInt32(2)),
			pods: func(p *Pass) Pods {
				return podsOf(runningPod(p, 0, outdated, label(tkestackv1.TAppUniqHashKey, "v1-0000000000000000")),
					runningPod(p, 1, outdated), runningPod(p, 2, outdated))
			},
			want: []int{0, 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := passOf(tc.app)
			plan := p.Plan(Observation{Now: t0, Pods: tc.pods(p), Expecting: tc.expecting})
			if diff := cmp.Diff(tc.want, plan.Budget.Scheduled); diff != "" {
				t.Errorf("scheduled (-want +got):\n%s", diff)
			}
			var got []int
			for _, a := range plan.Actions {
				if a.Action == ActionUpdate || a.Action == ActionRecreate {
					got = append(got, a.ID)
				}
				if a.Wanted != a.Action && a.Action == ActionNone {
					want := ReasonBudgetExhausted
					if tc.paused {
						want = tkestackv1.ReasonPaused
					}
					if a.Reason != want {
						t.Errorf("id %d: reason %q, want %q", a.ID, a.Reason, want)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("budgeted actions (-want +got):\n%s", diff)
			}
		})
	}
}
