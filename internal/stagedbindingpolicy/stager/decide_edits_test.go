package stager

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

// edit changes the policy's spec as a user would: the generation moves on.
func edit(w *world, f func(spec *communityv1alpha1.StagedBindingPolicySpec)) {
	f(&w.sbp.Spec)
	w.sbp.Generation++
}

// completed brings a two-stage world to a completed rollout.
func completed(w *world) {
	atProd(w)
	w.report("prod", nginxDeployment, "1")
	w.step()
}

// cumulativeAtProd brings a Cumulative two-stage world to a current prod stage, dev's BindingPolicy kept.
func cumulativeAtProd(w *world) {
	w.sbp.Spec.Mode = communityv1alpha1.ModeCumulative
	w.activate()
	w.report("dev", nginxDeployment, "1")
	w.step()
	w.process()
	w.step()
}

// qaStage is a stage for the clusters labelled env=qa.
var qaStage = communityv1alpha1.Stage{Name: "qa", ClusterSelectors: []metav1.LabelSelector{testutil.MatchLabels("env", "qa")}}

func TestDecideSpecEdits(t *testing.T) {
	cases := map[string]struct {
		setup func(w *world)
		want  summary
		check func(t *testing.T, w *world, d *Decision)
	}{
		"the active stage renamed: the stage at its position takes over, create before delete": {
			setup: func(w *world) {
				reportedDev("2")(w)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Stages[0].Name = "development" })
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "development", Index: 0,
				Stages: []string{"development=Active", "dev=Superseded"}, Reason: communityv1alpha1.ReasonHandingOver,
				Events: []string{communityv1alpha1.ReasonActiveStageReplaced, communityv1alpha1.ReasonStageActivated}, Writes: []string{"Create nginx.stage.development"}, Commit: true},
			check: func(t *testing.T, _ *world, d *Decision) {
				want := []Transition{{Stage: "dev", Result: ResultSuperseded}, {Stage: "development", Result: ResultActivated}}
				if diff := cmp.Diff(want, d.Transitions); diff != "" {
					t.Errorf("transitions (-want +got):\n%s", diff)
				}
			},
		},
		"the active stage renamed while paused: nothing moves until the resume": {
			setup: func(w *world) {
				reportedDev("2")(w)
				w.sbp.Spec.Paused = true
				w.step()
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Stages[0].Name = "development" })
			},
			want: summary{Phase: communityv1alpha1.PhasePaused, Active: "dev", Index: 0,
				Stages: []string{"dev=Active"}, Reason: string(communityv1alpha1.PhasePaused)},
		},
		"the active stage removed: the next stage, now at its position, takes over": {
			setup: func(w *world) {
				reportedDev("2")(w)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Stages = s.Stages[1:] })
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 0,
				Stages: []string{"prod=Active", "dev=Superseded"}, Reason: communityv1alpha1.ReasonHandingOver,
				Events: []string{communityv1alpha1.ReasonActiveStageReplaced, communityv1alpha1.ReasonStageActivated}, Writes: []string{"Create " + prodName}, Commit: true},
		},
		"the last stage removed after completion: the stage before is final, re-placed, still completed": {
			setup: func(w *world) {
				completed(w)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Stages = s.Stages[:1] })
			},
			want: summary{Phase: communityv1alpha1.PhaseCompleted, Active: "dev", Index: 0,
				Stages: []string{"dev=Succeeded", "prod=Superseded"}, Reason: string(communityv1alpha1.PhaseCompleted),
				Events: []string{communityv1alpha1.ReasonActiveStageReplaced}, Writes: []string{"Create " + devName}, Commit: true},
		},
		"the active last stage removed after the stage before succeeded: the rollout completes, with its event": {
			setup: func(w *world) {
				atProd(w)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Stages = s.Stages[:1] })
			},
			want: summary{Phase: communityv1alpha1.PhaseCompleted, Active: "dev", Index: 0,
				Stages: []string{"dev=Succeeded", "prod=Superseded"}, Reason: string(communityv1alpha1.PhaseCompleted),
				Events: []string{communityv1alpha1.ReasonActiveStageReplaced, communityv1alpha1.ReasonRolloutCompleted}, Writes: []string{"Create " + devName}, Commit: true},
		},
		"a stage inserted before the active one is skipped (Exclusive: not placed)": {
			setup: func(w *world) {
				atProd(w)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) {
					s.Stages = []communityv1alpha1.Stage{s.Stages[0], qaStage, s.Stages[1]}
				})
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 2,
				Stages: []string{"dev=Succeeded", "qa=Skipped", "prod=Active"}, Reason: communityv1alpha1.ReasonAwaitingStatus, Commit: true},
		},
		"a stage inserted before the active one is skipped (Cumulative: its BindingPolicy is created, ungated)": {
			setup: func(w *world) {
				cumulativeAtProd(w)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) {
					s.Stages = []communityv1alpha1.Stage{s.Stages[0], qaStage, s.Stages[1]}
				})
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 2,
				Stages: []string{"dev=Succeeded", "qa=Skipped", "prod=Active"}, Reason: communityv1alpha1.ReasonAwaitingStatus,
				Writes: []string{"Create nginx.stage.qa"}, Commit: true},
		},
		"a downsync edit updates every live BindingPolicy in place and restarts the active stage's clock": {
			setup: func(w *world) {
				cumulativeAtProd(w)
				w.tick(time.Minute)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) {
					s.Downsync = append(s.Downsync, testutil.ObjectsLabelled("app", "redis", aggregator))
				})
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonBindingPolicyPending, Writes: []string{"Update " + devName, "Update " + prodName}},
			check: func(t *testing.T, w *world, d *Decision) {
				if e := entry(t, d.Status, "prod"); !e.ClockStartedAt.Equal(at(w.now)) {
					t.Errorf("prod clock started at %v, want %v", e.ClockStartedAt, w.now)
				}
				if e := entry(t, d.Status, "dev"); e.ClockStartedAt == nil || e.ClockStartedAt.Equal(at(w.now)) {
					t.Errorf("dev clock = %v; a passed stage is not re-gated", e.ClockStartedAt)
				}
				for _, wr := range d.Writes {
					if len(wr.Desired.Spec.Downsync) != 2 || wr.Existing == nil || wr.Existing.UID != w.bps[wr.Desired.Name].UID {
						t.Errorf("write %s %s does not update the existing BindingPolicy to the new downsync", wr.Kind, wr.Desired.Name)
					}
				}
			},
		},
		"an edit of the active stage's selectors updates its BindingPolicy and restarts its clock": {
			setup: func(w *world) {
				reportedDev("1")(w)
				w.tick(time.Minute)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) {
					s.Stages[0].ClusterSelectors = append(s.Stages[0].ClusterSelectors, testutil.MatchLabels("env", "qa"))
				})
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonBindingPolicyPending, Writes: []string{"Update " + devName}},
			check: func(t *testing.T, w *world, d *Decision) {
				if e := entry(t, d.Status, "dev"); !e.ClockStartedAt.Equal(at(w.now)) {
					t.Errorf("dev clock started at %v, want %v", e.ClockStartedAt, w.now)
				}
			},
		},
		"a condition edit writes no BindingPolicy and keeps the clock": {
			setup: func(w *world) {
				reportedDev("2")(w)
				w.tick(time.Minute)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) {
					s.Stages[0].Condition = `combinedStatus.results.exists(r, r.rows.exists(row, row.columns.exists(c, c.float == '3')))`
				})
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonConditionNotMet},
			check: func(t *testing.T, _ *world, d *Decision) {
				if e := entry(t, d.Status, "dev"); !e.ClockStartedAt.Equal(at(t0)) {
					t.Errorf("dev clock started at %v, want %v", e.ClockStartedAt, t0)
				}
			},
		},
		"a condition edit does not clear a halt": {
			setup: func(w *world) {
				w.sbp.Spec.Stages[0].FailureCondition = failsOnTwo
				reportedDev("2")(w)
				w.step()
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Stages[0].FailureCondition = "" })
			},
			want: summary{Phase: communityv1alpha1.PhaseHalted, Active: "dev", Index: 0, Stages: []string{"dev=Halted"},
				Reason: string(communityv1alpha1.PhaseHalted)},
		},
		"Exclusive to Cumulative re-creates the earlier stages' BindingPolicies": {
			setup: func(w *world) {
				atProd(w)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Mode = communityv1alpha1.ModeCumulative })
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonAwaitingStatus, Writes: []string{"Create " + devName}},
		},
		"Cumulative to Exclusive makes the earlier stages' BindingPolicies outgoing": {
			setup: func(w *world) {
				cumulativeAtProd(w)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Mode = communityv1alpha1.ModeExclusive })
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonAwaitingStatus, Deletes: []string{devName}},
		},
		"a stage appended after completion reopens the rollout": {
			setup: func(w *world) {
				completed(w)
				edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) {
					s.Stages = append(s.Stages, communityv1alpha1.Stage{Name: "canary", ClusterSelectors: qaStage.ClusterSelectors})
				})
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "canary", Index: 2,
				Stages: []string{"dev=Succeeded", "prod=Succeeded", "canary=Active"}, Reason: communityv1alpha1.ReasonHandingOver,
				Events: []string{communityv1alpha1.ReasonRolloutReopened, communityv1alpha1.ReasonStageActivated}, Writes: []string{"Create nginx.stage.canary"}, Commit: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, twoStages().Obj())
			tc.setup(w)
			d := w.pass()
			checkSummary(t, d, tc.want)
			if tc.check != nil {
				tc.check(t, w, d)
			}
			checkRepeat(t, w, d)
		})
	}
}

// Renaming the active stage hands over: the old BindingPolicy stays until the new one is current, is then
// deleted, and its superseded history entry goes with it. The rollout never restarts from the first stage.
func TestDecideRenamedActiveStageHandsOver(t *testing.T) {
	w := newWorld(t, twoStages().Obj())
	atProd(w)
	edit(w, func(s *communityv1alpha1.StagedBindingPolicySpec) { s.Stages[1].Name = "production" })
	const production = "nginx.stage.production"
	d := w.step()
	checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "production", Index: 1,
		Stages: []string{"dev=Succeeded", "production=Active", "prod=Superseded"}, Reason: communityv1alpha1.ReasonHandingOver,
		Events: []string{communityv1alpha1.ReasonActiveStageReplaced, communityv1alpha1.ReasonStageActivated}, Writes: []string{"Create " + production}, Commit: true})

	checkSummary(t, w.step(), summary{Phase: communityv1alpha1.PhaseProgressing, Active: "production", Index: 1,
		Stages: []string{"dev=Succeeded", "production=Active", "prod=Superseded"}, Reason: communityv1alpha1.ReasonHandingOver})
	if w.bps[prodName] == nil {
		t.Fatal("the renamed stage's BindingPolicy was deleted before the new one was current")
	}

	w.process()
	checkSummary(t, w.step(), summary{Phase: communityv1alpha1.PhaseProgressing, Active: "production", Index: 1,
		Stages: []string{"dev=Succeeded", "production=Active", "prod=Superseded"}, Reason: communityv1alpha1.ReasonAwaitingStatus,
		Deletes: []string{prodName}})

	checkSummary(t, w.step(), summary{Phase: communityv1alpha1.PhaseProgressing, Active: "production", Index: 1,
		Stages: []string{"dev=Succeeded", "production=Active"}, Reason: communityv1alpha1.ReasonAwaitingStatus})
}
