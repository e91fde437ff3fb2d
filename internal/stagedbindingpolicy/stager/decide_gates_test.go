package stager

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/testutil"
)

const (
	approve = communityv1alpha1.AnnotationApproveStage
	retry   = communityv1alpha1.AnnotationRetryStage
)

// devOnly is a two-stage policy whose dev stage the caller shapes.
func devOnly(dev func(w *testutil.SBPWrapper) *testutil.SBPWrapper) *communityv1alpha1.StagedBindingPolicy {
	w := testutil.MakeSBP(sbpName).UID(sbpUID).Downsync(testutil.ObjectsLabelled("app.kubernetes.io/name", "nginx", aggregator)).
		Stage("dev", testutil.MatchLabels("env", "dev"))
	return dev(w).Stage("prod", testutil.MatchLabels("env", "prod")).Obj()
}

// reportedDev activates dev and reports the Deployment with number.
func reportedDev(number string) func(w *world) {
	return func(w *world) {
		w.activate()
		w.report("dev", nginxDeployment, number)
	}
}

var (
	devActive = []string{"dev=Active"}
	promoted  = []string{"dev=Succeeded", "prod=Active"}
)

func TestDecideGates(t *testing.T) {
	cases := map[string]struct {
		sbp   *communityv1alpha1.StagedBindingPolicy
		setup func(w *world)
		want  summary
		check func(t *testing.T, d *Decision)
	}{
		"the failure condition halts the stage even while other objects have no status": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).FailureCondition(failsOnTwo)
			}),
			setup: func(w *world) {
				w.objects = []workload{nginxDeployment, nginxService}
				reportedDev("2")(w)
			},
			want: summary{Phase: communityv1alpha1.PhaseHalted, Active: "dev", Index: 0, Stages: []string{"dev=Halted"},
				Reason: string(communityv1alpha1.PhaseHalted), Events: []string{communityv1alpha1.ReasonStageHalted}, Commit: true},
			check: func(t *testing.T, d *Decision) {
				if c := condition(t, d.Status, communityv1alpha1.ConditionHalted); c.Status != metav1.ConditionTrue ||
					c.Reason != communityv1alpha1.ReasonFailureCondition || !strings.Contains(c.Message, "apps/deployments nginx/nginx-deployment") {
					t.Errorf("Halted = %+v, want True/FailureCondition naming the Deployment", c)
				}
			},
		},
		"a failure condition that does not hold lets the condition promote": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).FailureCondition(failsOnTwo)
			}),
			setup: reportedDev("1"),
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonHandingOver, Events: []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated},
				Writes: []string{"Create " + prodName}, Commit: true, Promotion: true},
		},
		"before the progress deadline the stage waits, with the deadline as timer": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).ProgressDeadline(10 * time.Minute)
			}),
			setup: func(w *world) {
				reportedDev("2")(w)
				w.tick(4 * time.Minute)
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonConditionNotMet, Requeue: 6 * time.Minute},
		},
		"the progress deadline passes with the condition false: the stage halts": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).ProgressDeadline(10 * time.Minute)
			}),
			setup: func(w *world) {
				reportedDev("2")(w)
				w.tick(10 * time.Minute)
			},
			want: summary{Phase: communityv1alpha1.PhaseHalted, Active: "dev", Index: 0, Stages: []string{"dev=Halted"},
				Reason: string(communityv1alpha1.PhaseHalted), Events: []string{communityv1alpha1.ReasonStageHalted}, Commit: true},
			check: func(t *testing.T, d *Decision) {
				if c := condition(t, d.Status, communityv1alpha1.ConditionHalted); c.Reason != communityv1alpha1.ReasonProgressDeadlineExceeded {
					t.Errorf("Halted = %+v, want reason ProgressDeadlineExceeded", c)
				}
				if e := entry(t, d.Status, "dev"); !e.CompletedAt.Equal(at(t0.Add(10*time.Minute))) || e.Message == "" {
					t.Errorf("halted entry = %+v, want completedAt and a message", e)
				}
			},
		},
		"the progress deadline passes while KubeStellar has not processed the BindingPolicy: the stage halts": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper { return w.ProgressDeadline(time.Minute) }),
			setup: func(w *world) {
				w.step()
				w.tick(time.Minute)
			},
			want: summary{Phase: communityv1alpha1.PhaseHalted, Active: "dev", Index: 0, Stages: []string{"dev=Halted"},
				Reason: string(communityv1alpha1.PhaseHalted), Events: []string{communityv1alpha1.ReasonStageHalted}, Commit: true},
		},
		"gates that hold at the first pass after the progress deadline promote": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).ProgressDeadline(10 * time.Minute)
			}),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.tick(15 * time.Minute)
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonHandingOver, Events: []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated},
				Writes: []string{"Create " + prodName}, Commit: true, Promotion: true},
		},
		"waiting only on an approval after the progress deadline never halts": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).ProgressDeadline(10 * time.Minute).RequireApproval()
			}),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.step()
				w.tick(time.Hour)
			},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonAwaitingApproval},
		},
		"the retry annotation on the halted stage makes it active again with a fresh clock": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).ProgressDeadline(10 * time.Minute)
			}),
			setup: func(w *world) {
				reportedDev("2")(w)
				w.tick(10 * time.Minute)
				w.step()
				w.tick(time.Minute)
				w.sbp.Annotations = map[string]string{retry: "dev"}
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonConditionNotMet, Events: []string{communityv1alpha1.ReasonStageRetried}, Removals: []string{retry + "=dev"},
				Commit: true, Requeue: 10 * time.Minute},
			check: func(t *testing.T, d *Decision) {
				e := entry(t, d.Status, "dev")
				if !e.ClockStartedAt.Equal(at(t0.Add(11*time.Minute))) || e.CompletedAt != nil || e.Message != "" {
					t.Errorf("retried entry = %+v, want the clock restarted at the retry", e)
				}
				if c := condition(t, d.Status, communityv1alpha1.ConditionHalted); c.Status != metav1.ConditionFalse {
					t.Errorf("Halted = %+v, want False", c)
				}
				if !cmp.Equal(d.Transitions, []Transition{{Stage: "dev", Result: ResultRetried}}) {
					t.Errorf("transitions = %+v", d.Transitions)
				}
			},
		},
		"a retry annotation that does not name a halted active stage is removed with a warning": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				reportedDev("2")(w)
				w.sbp.Annotations = map[string]string{retry: "dev"}
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonConditionNotMet, Events: []string{communityv1alpha1.ReasonRetryIgnored}, Removals: []string{retry + "=dev"}},
		},
		"pausing freezes promotions and BindingPolicy writes": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.sbp.Spec.Paused = true
				w.sbp.Spec.Stages[0].ClusterSelectors = append(w.sbp.Spec.Stages[0].ClusterSelectors, testutil.MatchLabels("env", "qa"))
			},
			want: summary{Phase: communityv1alpha1.PhasePaused, Active: "dev", Index: 0, Stages: devActive,
				Reason: string(communityv1alpha1.PhasePaused), Events: []string{communityv1alpha1.ReasonRolloutPaused}, Commit: true},
		},
		"pausing during a handover deletes nothing": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.step()
				w.process()
				w.sbp.Spec.Paused = true
			},
			want: summary{Phase: communityv1alpha1.PhasePaused, Active: "prod", Index: 1, Stages: promoted,
				Reason: string(communityv1alpha1.PhasePaused), Events: []string{communityv1alpha1.ReasonRolloutPaused}, Commit: true},
		},
		"a policy created paused activates its first stage but places nothing": {
			sbp:   twoStages().Paused(true).Obj(),
			setup: func(*world) {},
			want: summary{Phase: communityv1alpha1.PhasePaused, Active: "dev", Index: 0, Stages: devActive,
				Reason: string(communityv1alpha1.PhasePaused), Events: []string{communityv1alpha1.ReasonStageActivated, communityv1alpha1.ReasonRolloutPaused}, Commit: true},
		},
		"resuming restarts the active stage's clock": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).MinDuration(10 * time.Minute)
			}),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.sbp.Spec.Paused = true
				w.step()
				w.tick(time.Hour)
				w.sbp.Spec.Paused = false
			},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonSoaking, Events: []string{communityv1alpha1.ReasonRolloutResumed, communityv1alpha1.ReasonSoaking},
				Commit: true, Requeue: 10 * time.Minute},
			check: func(t *testing.T, d *Decision) {
				if e := entry(t, d.Status, "dev"); !e.ClockStartedAt.Equal(at(t0.Add(time.Hour))) {
					t.Errorf("clock started at %v, want the resume", e.ClockStartedAt)
				}
			},
		},
		"pausing a completed rollout keeps it completed": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				atProd(w)
				w.report("prod", nginxDeployment, "1")
				w.step()
				w.sbp.Spec.Paused = true
			},
			want: summary{Phase: communityv1alpha1.PhaseCompleted, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Succeeded"},
				Reason: string(communityv1alpha1.PhaseCompleted)},
		},
		"pausing a halted rollout keeps it halted": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).FailureCondition(failsOnTwo)
			}),
			setup: func(w *world) {
				reportedDev("2")(w)
				w.step()
				w.sbp.Spec.Paused = true
			},
			want: summary{Phase: communityv1alpha1.PhaseHalted, Active: "dev", Index: 0, Stages: []string{"dev=Halted"},
				Reason: string(communityv1alpha1.PhaseHalted)},
		},
		"a stage that requires approval waits for it": {
			sbp:   devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper { return w.Condition(seedCondition).RequireApproval() }),
			setup: reportedDev("1"),
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonAwaitingApproval, Events: []string{communityv1alpha1.ReasonAwaitingApproval}},
		},
		"the approval promotes, and the annotation is removed after the promotion": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper { return w.Condition(seedCondition).RequireApproval() }),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.step()
				w.sbp.Annotations = map[string]string{approve: "dev"}
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonHandingOver, Events: []string{communityv1alpha1.ReasonApprovalAccepted, communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated},
				Writes: []string{"Create " + prodName}, Removals: []string{approve + "=dev"}, Commit: true, Promotion: true},
			check: func(t *testing.T, d *Decision) {
				if e := entry(t, d.Status, "dev"); !e.ApprovedAt.Equal(at(t0)) {
					t.Errorf("approvedAt = %v, want %v", e.ApprovedAt, t0)
				}
			},
		},
		"an approval given before the stage is reached counts": {
			sbp: testutil.MakeSBP(sbpName).UID(sbpUID).Downsync(testutil.ObjectsLabelled("app", "nginx", aggregator)).
				Stage("dev", testutil.MatchLabels("env", "dev")).Condition(seedCondition).
				Stage("prod", testutil.MatchLabels("env", "prod")).RequireApproval().Annotation(approve, "prod").Obj(),
			setup: func(w *world) {
				atProd(w)
				w.report("prod", nginxDeployment, "1")
			},
			want: summary{Phase: communityv1alpha1.PhaseCompleted, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Succeeded"},
				Reason: string(communityv1alpha1.PhaseCompleted), Events: []string{communityv1alpha1.ReasonRolloutCompleted},
				Removals: []string{approve + "=prod"}, Commit: true, Promotion: true},
		},
		"an approve annotation naming a stage that already succeeded is removed": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.step()
				w.process()
				w.step()
				w.sbp.Annotations = map[string]string{approve: "dev"}
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonAwaitingStatus, Removals: []string{approve + "=dev"}},
		},
		"removing the approval before the promotion revokes it": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).RequireApproval().MinDuration(time.Hour)
			}),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.sbp.Annotations = map[string]string{approve: "dev"}
				w.step()
				w.tick(time.Minute)
				w.sbp.Annotations = nil
			},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonSoaking, Requeue: 59 * time.Minute},
			check: func(t *testing.T, d *Decision) {
				if e := entry(t, d.Status, "dev"); e.ApprovedAt != nil {
					t.Errorf("approvedAt = %v after the revocation, want none", e.ApprovedAt)
				}
			},
		},
		"a stage soaks until its minimum duration has passed": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).MinDuration(10 * time.Minute)
			}),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.tick(4 * time.Minute)
			},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonSoaking, Events: []string{communityv1alpha1.ReasonSoaking}, Requeue: 6 * time.Minute},
		},
		"a soaked stage promotes": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).MinDuration(10 * time.Minute)
			}),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.step()
				w.tick(10 * time.Minute)
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonHandingOver, Events: []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated},
				Writes: []string{"Create " + prodName}, Commit: true, Promotion: true},
		},
		"a stage without condition waits for status of every gated object": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper { return w }),
			setup: func(w *world) {
				w.objects = []workload{nginxDeployment, nginxService}
				reportedDev("0")(w)
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonAwaitingStatus},
		},
		"a stage without condition promotes once its objects have status": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper { return w }),
			setup: func(w *world) {
				w.objects = []workload{nginxDeployment, nginxService}
				reportedDev("0")(w)
				w.report("dev", nginxService, "0")
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonHandingOver, Events: []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated},
				Writes: []string{"Create " + prodName}, Commit: true, Promotion: true},
		},
		"a stage without destinations waits for a cluster to join": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper { return w }),
			setup: func(w *world) {
				delete(w.clusters, "dev-1")
				w.activate()
			},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonNoDestinations, Events: []string{communityv1alpha1.ReasonNoDestinations}},
		},
		"a filter that keeps no object": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Filter(`downsyncClause.resource == "configmaps"`)
			}),
			setup: reportedDev("1"),
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonNoObjects, Events: []string{communityv1alpha1.ReasonNoObjects}},
		},
		"a condition over objects that name no status collector": {
			sbp: testutil.MakeSBP(sbpName).UID(sbpUID).Downsync(testutil.ObjectsLabelled("app", "nginx")).
				Stage("dev", testutil.MatchLabels("env", "dev")).Condition(seedCondition).Obj(),
			setup: func(w *world) { w.activate() },
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonNoStatusCollectors, Events: []string{communityv1alpha1.ReasonNoStatusCollectors}},
		},
		"KubeStellar reports a missing status collector": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				reportedDev("1")(w)
				w.bps[devName] = testutil.WrapBindingPolicy(w.bps[devName]).StatusCollectorsAvailable(aggregator).Obj()
			},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonStatusCollectorsMissing, Events: []string{communityv1alpha1.ReasonStatusCollectorsMissing}},
			check: func(t *testing.T, d *Decision) {
				c := condition(t, d.Status, communityv1alpha1.ConditionBindingPolicyReady)
				if c.Status != metav1.ConditionFalse || c.Reason != communityv1alpha1.ReasonStatusCollectorsMissing ||
					!strings.Contains(c.Message, "Missing StatusCollector(s) [deployments-aggregator]") {
					t.Errorf("BindingPolicyReady = %+v, want False with KubeStellar's message", c)
				}
			},
		},
		"an expression error at run time never promotes and is reported": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(`combinedStatus.results[3].name == 'x'`)
			}),
			setup: reportedDev("1"),
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonGateError, Events: []string{communityv1alpha1.ReasonGateError}},
			check: func(t *testing.T, d *Decision) {
				c := condition(t, d.Status, communityv1alpha1.ConditionGateError)
				if c.Status != metav1.ConditionTrue || c.Reason != string(sbpcel.ReasonEvaluationError) ||
					!strings.Contains(c.Message, "spec.stages[0].condition") || !strings.Contains(c.Message, "nginx/nginx-deployment") {
					t.Errorf("GateError = %+v, want True/EvaluationError with the field path and the object", c)
				}
				want := []GateErrorRecord{{Stage: "dev", Kind: sbpcel.Condition, Reason: string(sbpcel.ReasonEvaluationError)}}
				if !cmp.Equal(d.GateErrors, want) {
					t.Errorf("gate errors = %+v, want %+v", d.GateErrors, want)
				}
				if ev := entry(t, d.Status, "dev").LastEvaluation; ev.Outcome != communityv1alpha1.OutcomeError {
					t.Errorf("outcome = %s, want Error", ev.Outcome)
				}
			},
		},
		"a failure condition error never halts": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Condition(seedCondition).FailureCondition(`combinedStatus.results[3].name == 'x'`)
			}),
			setup: reportedDev("1"),
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonGateError, Events: []string{communityv1alpha1.ReasonGateError}},
		},
		"a filter error blocks the stage": {
			sbp: devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
				return w.Filter(`downsyncClause.statusCollectors[4] == 'x'`)
			}),
			setup: reportedDev("1"),
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonGateError, Events: []string{communityv1alpha1.ReasonGateError}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.sbp)
			tc.setup(w)
			d := w.pass()
			checkSummary(t, d, tc.want)
			if tc.check != nil {
				tc.check(t, d)
			}
			checkRepeat(t, w, d)
		})
	}
}

// An expression error clears once a pass evaluates without error: the GateError condition returns to False.
func TestDecideRecoversFromAGateError(t *testing.T) {
	sbp := devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
		return w.Condition(`combinedStatus.results[0].rows[0].columns[0].float == '1'`)
	})
	w := newWorld(t, sbp)
	w.activate()
	w.report("dev", nginxDeployment, "1")
	w.css[0].Object["results"] = []any{} // KubeStellar reported no result yet: index out of range
	d := w.step()
	if c := condition(t, d.Status, communityv1alpha1.ConditionGateError); c.Status != metav1.ConditionTrue {
		t.Fatalf("GateError = %+v, want True", c)
	}
	w.tick(time.Minute)
	w.report("dev", nginxDeployment, "2")
	d = w.step()
	checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
		Reason: communityv1alpha1.ReasonConditionNotMet})
	if c := condition(t, d.Status, communityv1alpha1.ConditionGateError); c.Status != metav1.ConditionFalse || !c.LastTransitionTime.Equal(at(w.now)) {
		t.Errorf("GateError = %+v, want False since %v", c, w.now)
	}
	if len(d.GateErrors) != 0 {
		t.Errorf("gate errors = %+v, want none", d.GateErrors)
	}
}
