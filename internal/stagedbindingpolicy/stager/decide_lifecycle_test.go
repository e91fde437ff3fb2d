package stager

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

// atProd brings a two-stage world to a current prod stage whose dev BindingPolicy is gone.
func atProd(w *world) {
	w.activate()
	w.report("dev", nginxDeployment, "1")
	w.step() // promotion
	w.process()
	w.step() // handover: dev deleted
}

func TestDecideLifecycle(t *testing.T) {
	cases := map[string]struct {
		sbp   *communityv1alpha1.StagedBindingPolicy
		setup func(w *world)
		want  summary
		check func(t *testing.T, d *Decision)
	}{
		"a new policy activates its first stage and creates its BindingPolicy": {
			sbp:   twoStages().Obj(),
			setup: func(*world) {},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: []string{"dev=Active"},
				Reason: communityv1alpha1.ReasonBindingPolicyPending, Events: []string{communityv1alpha1.ReasonStageActivated},
				Writes: []string{"Create " + devName}, Commit: true},
			check: func(t *testing.T, d *Decision) {
				e := entry(t, d.Status, "dev")
				if !e.StartedAt.Equal(at(t0)) || !e.ClockStartedAt.Equal(at(t0)) || e.BindingPolicyName != devName {
					t.Errorf("dev entry = %+v, want started and clocked at %v with BindingPolicy %s", e, t0, devName)
				}
				if got := d.Transitions; !cmp.Equal(got, []Transition{{Stage: "dev", Result: ResultActivated}}) {
					t.Errorf("transitions = %+v", got)
				}
			},
		},
		"the BindingPolicy of the first stage is current but the condition is false: no promotion": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				w.activate()
				w.report("dev", nginxDeployment, "2")
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: []string{"dev=Active"},
				Reason: communityv1alpha1.ReasonConditionNotMet},
			check: func(t *testing.T, d *Decision) {
				ev := entry(t, d.Status, "dev").LastEvaluation
				if ev == nil || ev.Outcome != communityv1alpha1.OutcomeNotSatisfied || ev.Objects != 1 || ev.ObjectsWithStatus != 1 || ev.ObjectsSatisfied != 0 {
					t.Errorf("lastEvaluation = %+v, want NotSatisfied over 1 object with status", ev)
				}
				if c := condition(t, d.Status, communityv1alpha1.ConditionBindingPolicyReady); c.Status != metav1.ConditionTrue {
					t.Errorf("BindingPolicyReady = %+v, want True", c)
				}
			},
		},
		"the condition turns true: the stage succeeds and the next one is activated": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				w.activate()
				w.tick(time.Minute)
				w.report("dev", nginxDeployment, "1")
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Active"},
				Reason: communityv1alpha1.ReasonHandingOver, Events: []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated},
				Writes: []string{"Create " + prodName}, Commit: true, Promotion: true},
			check: func(t *testing.T, d *Decision) {
				dev, prod := entry(t, d.Status, "dev"), entry(t, d.Status, "prod")
				if !dev.CompletedAt.Equal(at(t0.Add(time.Minute))) || !prod.StartedAt.Equal(at(t0.Add(time.Minute))) {
					t.Errorf("dev completed %v, prod started %v; want both at %v", dev.CompletedAt, prod.StartedAt, t0.Add(time.Minute))
				}
				if d.Promoted != devName {
					t.Errorf("Promoted = %q, want %q", d.Promoted, devName)
				}
				want := []Transition{{Stage: "dev", Result: ResultSucceeded, Duration: time.Minute}, {Stage: "prod", Result: ResultActivated}}
				if !cmp.Equal(d.Transitions, want) {
					t.Errorf("transitions = %+v, want %+v", d.Transitions, want)
				}
				// The active stage is now prod, whose BindingPolicy does not exist yet.
				if c := condition(t, d.Status, communityv1alpha1.ConditionBindingPolicyReady); c.Status != metav1.ConditionFalse {
					t.Errorf("BindingPolicyReady after the promotion = %+v, want False", c)
				}
			},
		},
		"the last stage completes once its objects have status, and its BindingPolicy stays": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				atProd(w)
				w.report("prod", nginxDeployment, "1")
			},
			want: summary{Phase: communityv1alpha1.PhaseCompleted, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Succeeded"},
				Reason: string(communityv1alpha1.PhaseCompleted), Events: []string{communityv1alpha1.ReasonRolloutCompleted}, Commit: true, Promotion: true},
			check: func(t *testing.T, d *Decision) {
				for _, typ := range []string{communityv1alpha1.ConditionCompleted, communityv1alpha1.ConditionReady} {
					if c := condition(t, d.Status, typ); c.Status != metav1.ConditionTrue || c.Reason != communityv1alpha1.ReasonRolloutCompleted {
						t.Errorf("%s = %+v, want True/RolloutCompleted", typ, c)
					}
				}
			},
		},
		"a last stage with a condition completes without deleting its BindingPolicy": {
			sbp: testutil.MakeSBP(sbpName).UID(sbpUID).Downsync(testutil.ObjectsLabelled("app", "nginx", aggregator)).
				Stage("dev", testutil.MatchLabels("env", "dev")).Condition(seedCondition).Obj(),
			setup: func(w *world) {
				w.activate()
				w.report("dev", nginxDeployment, "1")
			},
			want: summary{Phase: communityv1alpha1.PhaseCompleted, Active: "dev", Index: 0, Stages: []string{"dev=Succeeded"},
				Reason: string(communityv1alpha1.PhaseCompleted), Events: []string{communityv1alpha1.ReasonRolloutCompleted}, Commit: true, Promotion: true},
		},
		"a completed rollout stays completed and writes nothing": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				atProd(w)
				w.report("prod", nginxDeployment, "1")
				w.step()
				w.tick(time.Hour)
			},
			want: summary{Phase: communityv1alpha1.PhaseCompleted, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Succeeded"},
				Reason: string(communityv1alpha1.PhaseCompleted)},
		},
		"the new stage's BindingPolicy is kept waiting for: the previous one stays until it is current": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				w.activate()
				w.report("dev", nginxDeployment, "1")
				w.step()
				w.step() // prod created, not yet processed by KubeStellar
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Active"},
				Reason: communityv1alpha1.ReasonHandingOver},
			check: func(t *testing.T, d *Decision) {
				if c := condition(t, d.Status, communityv1alpha1.ConditionBindingPolicyReady); c.Reason != communityv1alpha1.ReasonHandingOver {
					t.Errorf("BindingPolicyReady = %+v, want reason HandingOver", c)
				}
			},
		},
		"once the new stage's BindingPolicy is current the previous one is deleted": {
			sbp: twoStages().Obj(),
			setup: func(w *world) {
				w.activate()
				w.report("dev", nginxDeployment, "1")
				w.step()
				w.process()
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Active"},
				Reason: communityv1alpha1.ReasonAwaitingStatus, Deletes: []string{devName}},
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

// The BindingPolicy of a stage: its name, drover's labels, one controller reference to the policy, and the
// policy's downsync and the stage's selectors copied as written (a nil apiGroup means any group, "" the
// core group).
func TestDecideCreatesTheDesiredBindingPolicy(t *testing.T) {
	anyGroup := testutil.ObjectsLabelled("app", "nginx", aggregator)
	core := controlv1alpha1.DownsyncPolicyClause{}
	core.APIGroup = ptr.To("")
	core.Resources = []string{"configmaps"}
	core.Namespaces = []string{"nginx"}
	sbp := testutil.MakeSBP(sbpName).UID(sbpUID).Downsync(anyGroup, core).
		Stage("dev", testutil.MatchLabels("env", "dev"), metav1.LabelSelector{}).Obj()
	d := newWorld(t, sbp).pass()
	if len(d.Writes) != 1 || d.Writes[0].Kind != WriteCreate || d.Writes[0].Stage != 0 || d.Writes[0].Existing != nil {
		t.Fatalf("writes = %+v, want one create of stage 0", d.Writes)
	}
	want := &controlv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: devName,
			Labels: map[string]string{
				"drover.dev/staged-binding-policy": sbpName,
				"drover.dev/stage":                 "dev",
				"app.kubernetes.io/managed-by":     "drover",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "community.kubestellar.io/v1alpha1", Kind: "StagedBindingPolicy", Name: sbpName, UID: sbpUID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: controlv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{testutil.MatchLabels("env", "dev"), {}},
			Downsync:         []controlv1alpha1.DownsyncPolicyClause{anyGroup, core},
		},
	}
	if diff := cmp.Diff(want, d.Writes[0].Desired); diff != "" {
		t.Errorf("desired BindingPolicy (-want +got):\n%s", diff)
	}
	got := d.Writes[0].Desired.Spec.Downsync
	if got[0].APIGroup != nil || got[1].APIGroup == nil || *got[1].APIGroup != "" {
		t.Errorf("apiGroup not preserved: %v, %v", got[0].APIGroup, got[1].APIGroup)
	}
	// The copy is deep: changing the policy later does not change the decided BindingPolicy.
	sbp.Spec.Downsync[0].ObjectSelectors[0].MatchLabels["app"] = "changed"
	if d.Writes[0].Desired.Spec.Downsync[0].ObjectSelectors[0].MatchLabels["app"] != "nginx" {
		t.Error("the desired BindingPolicy shares the policy's selectors")
	}
}
