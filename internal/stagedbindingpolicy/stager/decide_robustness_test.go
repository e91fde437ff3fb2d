package stager

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

const brokenCondition = `combinedStatus.reslts.size() > 0`

// A spec that breaks a rule (the webhook was bypassed) freezes the rollout: InvalidSpec with the field path,
// no BindingPolicy write or deletion, no transition, one event.
func TestDecideInvalidSpec(t *testing.T) {
	cases := map[string]struct {
		sbp        *communityv1alpha1.StagedBindingPolicy
		setup      func(w *world)
		want       summary
		reason     string
		messageHas string
	}{
		"an uncompilable condition on a new policy": {
			sbp:   devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper { return w.Condition(brokenCondition) }),
			setup: func(*world) {},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Index: -1, Reason: communityv1alpha1.ReasonInvalidSpec,
				Events: []string{communityv1alpha1.ReasonInvalidSpec}},
			reason: communityv1alpha1.ReasonInvalidExpression, messageHas: "spec.stages[0].condition",
		},
		"an expression broken mid-rollout while the old condition holds and a handover waits": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.step() // promotion; dev is outgoing, prod not created yet
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) {
					s.Stages[1].Filter = "combinedStatus.results.size() > 0"
				})
			},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonInvalidSpec, Events: []string{communityv1alpha1.ReasonInvalidSpec}},
			reason: communityv1alpha1.ReasonInvalidExpression, messageHas: "spec.stages[1].filter",
		},
		"a name longer than 63 characters": {
			sbp: testutil.WrapSBP(twoStages().Obj()).Obj(),
			setup: func(w *world) {
				w.sbp.Name = strings.Repeat("n", 64)
			},
			want:   summary{Phase: communityv1alpha1.PhaseWaiting, Index: -1, Reason: communityv1alpha1.ReasonInvalidSpec, Events: []string{communityv1alpha1.ReasonInvalidSpec}},
			reason: communityv1alpha1.ReasonNameTooLong, messageHas: "metadata.name",
		},
		"no stage at all": {
			sbp:    testutil.MakeSBP(sbpName).UID(sbpUID).Downsync(testutil.ObjectsLabelled("app", "nginx")).Obj(),
			setup:  func(*world) {},
			want:   summary{Phase: communityv1alpha1.PhaseWaiting, Index: -1, Reason: communityv1alpha1.ReasonInvalidSpec, Events: []string{communityv1alpha1.ReasonInvalidSpec}},
			reason: communityv1alpha1.ReasonInvalidField, messageHas: "spec.stages",
		},
		"a rollout halted at its second stage stays halted with its halt message": {
			sbp: twoStages().EditStage("prod", func(s *communityv1alpha1.Stage) { s.FailureCondition = failsOnTwo }).Obj(),
			setup: func(w *world) {
				atProd(w)
				w.report("prod", nginxDeployment, "2")
				w.step()
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Stages[0].Condition = brokenCondition })
			},
			want: summary{Phase: communityv1alpha1.PhaseHalted, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Halted"},
				Reason: string(communityv1alpha1.PhaseHalted), Events: []string{communityv1alpha1.ReasonInvalidSpec}},
			reason: communityv1alpha1.ReasonInvalidExpression, messageHas: "spec.stages[0].condition",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.sbp)
			tc.setup(w)
			before := w.sbp.Status.DeepCopy()
			d := w.pass()
			checkSummary(t, d, tc.want)
			c := condition(t, d.Status, communityv1alpha1.ConditionInvalidSpec)
			if c.Status != metav1.ConditionTrue || c.Reason != tc.reason || !strings.Contains(c.Message, tc.messageHas) {
				t.Errorf("InvalidSpec = %+v, want True/%s naming %s", c, tc.reason, tc.messageHas)
			}
			ignoreConditions := cmpopts.IgnoreFields(communityv1alpha1.StagedBindingPolicyStatus{}, "Conditions", "Phase", "ObservedGeneration")
			if diff := cmp.Diff(*before, d.Status, ignoreConditions, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("an invalid spec changed the rollout (-before +after):\n%s", diff)
			}
			if old := apimeta.FindStatusCondition(before.Conditions, communityv1alpha1.ConditionHalted); old != nil && old.Status == metav1.ConditionTrue {
				if got := condition(t, d.Status, communityv1alpha1.ConditionHalted); got.Reason != old.Reason || got.Message != old.Message {
					t.Errorf("Halted = %+v, want the halt kept: %+v", got, old)
				}
			}
			checkRepeat(t, w, d)
		})
	}
}

// Fixing an invalid spec resumes the rollout where it was frozen.
func TestDecideFixingTheSpecResumes(t *testing.T) {
	w := newWorld(t, devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper { return w.Condition(brokenCondition) }))
	w.step()
	edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Stages[0].Condition = seedCondition })
	d := w.step()
	checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
		Reason: communityv1alpha1.ReasonBindingPolicyPending, Events: []string{communityv1alpha1.ReasonStageActivated}, Writes: []string{"Create " + devName}, Commit: true})
	if c := condition(t, d.Status, communityv1alpha1.ConditionInvalidSpec); c.Status != metav1.ConditionFalse {
		t.Errorf("InvalidSpec = %+v, want False", c)
	}
}

// A pass over a world that did not change decides the status it read, the times of the evaluations aside: the
// controller writes nothing.
func TestDecideStatusIsStableWhenNothingChanged(t *testing.T) {
	soaking := devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
		return w.Condition(seedCondition).MinDuration(time.Hour)
	})
	halting := devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
		return w.Condition(seedCondition).FailureCondition(failsOnTwo)
	})
	gateError := devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
		return w.Condition(`combinedStatus.results[3].name == ''`)
	})
	cases := map[string]struct {
		sbp   *communityv1alpha1.StagedBindingPolicy
		setup func(w *world)
	}{
		"waiting for KubeStellar":     {twoStages().Obj(), func(w *world) { w.step(); w.step() }},
		"awaiting status":             {twoStages().Obj(), func(w *world) { w.activate(); w.step() }},
		"condition not met":           {twoStages().Obj(), func(w *world) { reportedDev("2")(w); w.step() }},
		"handing over":                {twoStages().Obj(), func(w *world) { reportedDev("1")(w); w.step(); w.step() }},
		"soaking":                     {soaking, func(w *world) { reportedDev("1")(w); w.step() }},
		"halted":                      {halting, func(w *world) { reportedDev("2")(w); w.step() }},
		"paused":                      {twoStages().Paused(true).Obj(), func(w *world) { w.step() }},
		"completed":                   {twoStages().Obj(), completed},
		"expression error":            {gateError, func(w *world) { reportedDev("1")(w); w.step() }},
		"invalid spec":                {devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper { return w.Condition(brokenCondition) }), func(w *world) { w.step() }},
		"no destinations":             {twoStages().Obj(), func(w *world) { w.clusters = nil; w.activate(); w.step() }},
		"conflict on the first stage": {twoStages().Obj(), func(w *world) { w.bps[devName] = testutil.MakeBindingPolicy(devName).UID("x").Obj(); w.step() }},
	}
	ignoreTime := cmpopts.IgnoreFields(communityv1alpha1.Evaluation{}, "Time")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.sbp)
			tc.setup(w)
			w.tick(time.Minute)
			d := w.pass()
			if diff := cmp.Diff(w.sbp.Status, d.Status, ignoreTime); diff != "" {
				t.Errorf("status changed though nothing did (-stored +decided):\n%s", diff)
			}
			if d.Commit || len(d.Events.Reasons()) > 0 || len(d.Writes)+len(d.Deletes)+len(d.AnnotationRemovals) > 0 {
				t.Errorf("an idle pass: commit %v, events %v, writes %d, deletes %d, removals %d", d.Commit, d.Events.Reasons(),
					len(d.Writes), len(d.Deletes), len(d.AnnotationRemovals))
			}
		})
	}
}

// The phase by precedence: Completed, Halted, Paused, Waiting, Progressing.
func TestPhasePrecedence(t *testing.T) {
	spec := twoStages().Obj().Spec
	cases := map[string]struct {
		active  int
		result  communityv1alpha1.StageResult
		paused  bool
		reason  string
		invalid bool
		old     communityv1alpha1.Phase
		want    communityv1alpha1.Phase
	}{
		"the last stage succeeded, paused, with a waiting reason": {1, communityv1alpha1.StageSucceeded, true, communityv1alpha1.ReasonConflict, false, "", communityv1alpha1.PhaseCompleted},
		"a succeeded stage that is not the last":                  {0, communityv1alpha1.StageSucceeded, false, "", false, "", communityv1alpha1.PhaseProgressing},
		"halted and paused":                                       {0, communityv1alpha1.StageHalted, true, communityv1alpha1.ReasonSoaking, false, "", communityv1alpha1.PhaseHalted},
		"paused and waiting":                                      {0, communityv1alpha1.StageActive, true, communityv1alpha1.ReasonNoDestinations, false, "", communityv1alpha1.PhasePaused},
		"waiting":                                                 {0, communityv1alpha1.StageActive, false, communityv1alpha1.ReasonAwaitingApproval, false, "", communityv1alpha1.PhaseWaiting},
		"progressing":                                             {0, communityv1alpha1.StageActive, false, communityv1alpha1.ReasonConditionNotMet, false, "", communityv1alpha1.PhaseProgressing},
		"invalid and completed before":                            {1, communityv1alpha1.StageSucceeded, false, communityv1alpha1.ReasonInvalidSpec, true, communityv1alpha1.PhaseCompleted, communityv1alpha1.PhaseCompleted},
		"invalid and halted before":                               {0, communityv1alpha1.StageHalted, false, communityv1alpha1.ReasonInvalidSpec, true, communityv1alpha1.PhaseHalted, communityv1alpha1.PhaseHalted},
		"invalid otherwise":                                       {0, communityv1alpha1.StageActive, true, communityv1alpha1.ReasonInvalidSpec, true, communityv1alpha1.PhasePaused, communityv1alpha1.PhaseWaiting},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec.DeepCopy()
			s.Paused = tc.paused
			st := &communityv1alpha1.StagedBindingPolicyStatus{Stages: []communityv1alpha1.StageStatus{{Name: s.Stages[tc.active].Name, Result: tc.result}}}
			p := &pass{spec: s, st: st, old: &communityv1alpha1.StagedBindingPolicyStatus{Phase: tc.old}, active: tc.active,
				reason: tc.reason, invalid: tc.invalid}
			if got := p.phase(); got != tc.want {
				t.Errorf("phase = %s, want %s", got, tc.want)
			}
		})
	}
}

// At most one stage transition per pass: the next one waits for the next pass.
func TestDecideOneTransitionPerPass(t *testing.T) {
	t.Run("activation over a BindingPolicy that is current and satisfied already", func(t *testing.T) {
		w := newWorld(t, twoStages().Obj())
		w.activate()
		w.report("dev", nginxDeployment, "1")
		w.sbp.Status = communityv1alpha1.StagedBindingPolicyStatus{} // the commit was lost
		d := w.step()
		checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
			Reason: communityv1alpha1.ReasonPromoting, Events: []string{communityv1alpha1.ReasonStageActivated}, Commit: true})
		checkSummary(t, w.pass(), summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
			Reason: communityv1alpha1.ReasonHandingOver, Events: []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated},
			Writes: []string{"Create " + prodName}, Commit: true, Promotion: true})
	})
	t.Run("a retry whose gates hold at once", func(t *testing.T) {
		w := newWorld(t, devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
			return w.Condition(seedCondition).ProgressDeadline(time.Minute)
		}))
		reportedDev("2")(w)
		w.tick(time.Minute)
		w.step() // halted
		w.report("dev", nginxDeployment, "1")
		w.sbp.Annotations = map[string]string{retry: "dev"}
		d := w.step()
		checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
			Reason: communityv1alpha1.ReasonPromoting, Events: []string{communityv1alpha1.ReasonStageRetried}, Removals: []string{retry + "=dev"}, Commit: true})
		if got := w.pass().Events.Reasons(); !cmp.Equal(got, []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated}) {
			t.Errorf("the pass after the retry raised %v, want the promotion", got)
		}
	})
	t.Run("the active stage replaced by one that already succeeded", func(t *testing.T) {
		w := newWorld(t, twoStages().Obj())
		atProd(w)
		edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) {
			s.Stages = []communityv1alpha1.Stage{qaStage, s.Stages[0], {Name: "production", ClusterSelectors: s.Stages[1].ClusterSelectors}}
		})
		d := w.step()
		checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 1,
			Stages: []string{"qa=Skipped", "dev=Succeeded", "prod=Superseded"}, Reason: communityv1alpha1.ReasonPromoting,
			Events: []string{communityv1alpha1.ReasonActiveStageReplaced}, Writes: []string{"Create " + devName}, Commit: true})
		checkSummary(t, w.pass(), summary{Phase: communityv1alpha1.PhaseProgressing, Active: "production", Index: 2,
			Stages: []string{"qa=Skipped", "dev=Succeeded", "production=Active", "prod=Superseded"}, Reason: communityv1alpha1.ReasonHandingOver,
			Events: []string{communityv1alpha1.ReasonStageActivated}, Writes: []string{"Create nginx.stage.production"}, Commit: true})
	})
}

// An activeStageIndex out of range is clamped, and a stale one is corrected.
func TestDecideClampsTheActiveStageIndex(t *testing.T) {
	cases := map[string]struct {
		status communityv1alpha1.StagedBindingPolicyStatus
		want   summary
	}{
		"a vanished stage whose index is past the end": {
			status: communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: "gone", ActiveStageIndex: ptr.To[int32](7),
				Stages: []communityv1alpha1.StageStatus{{Name: "dev", Result: communityv1alpha1.StageSucceeded}, {Name: "gone", Result: communityv1alpha1.StageActive}}},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Active"},
				Reason: communityv1alpha1.ReasonBindingPolicyPending, Events: []string{communityv1alpha1.ReasonActiveStageReplaced, communityv1alpha1.ReasonStageActivated},
				Writes: []string{"Create " + prodName}, Commit: true},
		},
		"a vanished stage with a negative index": {
			status: communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: "gone", ActiveStageIndex: ptr.To[int32](-3)},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonBindingPolicyPending, Events: []string{communityv1alpha1.ReasonActiveStageReplaced, communityv1alpha1.ReasonStageActivated},
				Writes: []string{"Create " + devName}, Commit: true},
		},
		"a known stage with a wrong index": {
			status: communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: "prod", ActiveStageIndex: ptr.To[int32](9),
				Stages: []communityv1alpha1.StageStatus{{Name: "dev", Result: communityv1alpha1.StageSucceeded}, {Name: "prod", Result: communityv1alpha1.StageActive}}},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Active"},
				Reason: communityv1alpha1.ReasonBindingPolicyPending, Writes: []string{"Create " + prodName}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, twoStages().Status(tc.status).Obj())
			checkSummary(t, w.pass(), tc.want)
		})
	}
}

// Decide never panics, whatever the policy's spec and status or the observed objects.
func TestDecideNeverPanics(t *testing.T) {
	current := func(w *world) { w.activate() }
	cases := map[string]func(w *world){
		"no stage and no downsync":     func(w *world) { w.sbp.Spec = communityv1alpha1.StagedBindingPolicySpec{} },
		"nil maps of observed objects": func(*world) {},
		"a Binding with no workload": func(w *world) {
			current(w)
			w.bindings[devName].Spec.Workload = controlv1alpha1.DownsyncObjectClauses{}
		},
		"a Binding with no destination": func(w *world) {
			current(w)
			w.bindings[devName].Spec.Destinations = nil
		},
		"nil objects in the observed maps": func(w *world) {
			w.bps[prodName] = nil
			w.bindings[devName] = nil
			w.css = append(w.css, &unstructured.Unstructured{}, &unstructured.Unstructured{Object: map[string]any{"metadata": "x", "results": int64(3)}})
		},
		"a status with garbage entries": func(w *world) {
			w.sbp.Status = communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", ActiveStageIndex: ptr.To[int32](-1),
				Phase: "Bogus", Stages: []communityv1alpha1.StageStatus{{Name: "dev"}, {Name: "dev", Result: "Weird"}, {Name: ""}, {}}}
		},
		"a halted entry without times": func(w *world) { w.sbp.Status = haltedStatus() },
		"an active entry without times": func(w *world) {
			current(w)
			w.sbp.Status.Stages[0].StartedAt, w.sbp.Status.Stages[0].ClockStartedAt = nil, nil
		},
		"malformed CombinedStatuses of the active BindingPolicy": func(w *world) {
			current(w)
			cs := oneCS(devName, w.bps[devName].UID, w.now).Obj()
			cs.Object["results"] = []any{map[string]any{"name": aggregator, "rows": []any{map[string]any{"columns": "nope"}}}}
			w.css = append(w.css, cs)
		},
		"a BindingPolicy of drover with no spec at all": func(w *world) {
			current(w)
			w.bps[devName].Spec = controlv1alpha1.BindingPolicySpec{}
			w.bps[devName].Labels = nil
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, twoStages().Obj())
			setup(w)
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Decide panicked: %v", r)
				}
			}()
			in := Input{SBP: w.sbp, Observed: w.observed(), Now: w.now, CEL: testCEL}
			if name == "nil maps of observed objects" {
				in.Observed = Observed{}
			}
			if d := Decide(in); d == nil || d.Status.Phase == "" {
				t.Fatalf("Decide = %+v, want a decision with a phase", d)
			}
		})
	}
}

func haltedStatus() communityv1alpha1.StagedBindingPolicyStatus {
	return communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Phase: communityv1alpha1.PhaseHalted,
		Stages: []communityv1alpha1.StageStatus{{Name: "dev", Result: communityv1alpha1.StageHalted}}}
}
