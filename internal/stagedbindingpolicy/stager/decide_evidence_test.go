package stager

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

// oneCS is a deployments-aggregator result whose one Number column reads "1": the seed's condition holds.
func oneCS(bpName string, bpUID types.UID, created time.Time) *testutil.CombinedStatusWrapper {
	o := nginxDeployment
	return testutil.MakeCombinedStatus(o.uid, bpName, bpUID).Workload(o.apiVersion, o.kind, o.resource, o.namespace, o.name).
		Created(created).Result(aggregator, []string{"count"}, []controlv1alpha1.Value{testutil.NumberValue("1")})
}

// Evidence that is not of the active stage's current BindingPolicy incarnation never promotes.
func TestDecideNeverPromotesOnStaleEvidence(t *testing.T) {
	cases := map[string]struct {
		sbp   *communityv1alpha1.StagedBindingPolicy
		setup func(w *world)
		want  summary
	}{
		"a CombinedStatus of another BindingPolicy incarnation": {
			setup: func(w *world) {
				w.activate()
				w.css = append(w.css, oneCS(devName, "bp-uid-old", w.now).Obj())
			},
			want: summary{Reason: communityv1alpha1.ReasonAwaitingStatus},
		},
		"a CombinedStatus created before the BindingPolicy": {
			setup: func(w *world) {
				w.activate()
				w.css = append(w.css, oneCS(devName, w.bps[devName].UID, w.now.Add(-time.Second)).Obj())
			},
			want: summary{Reason: communityv1alpha1.ReasonAwaitingStatus},
		},
		"a BindingPolicy whose generation KubeStellar has not processed": {
			setup: func(w *world) {
				reportedDev("1")(w)
				w.bps[devName].Generation = 2
			},
			want: summary{Reason: communityv1alpha1.ReasonBindingPolicyPending},
		},
		"a Binding owned by another incarnation of the BindingPolicy": {
			setup: func(w *world) {
				reportedDev("1")(w)
				w.bindings[devName] = testutil.MakeBinding(devName).ControlledBy(devName, "bp-uid-old").Destinations("dev-1").
					NamespaceObject("apps", "v1", "deployments", "nginx", "nginx-deployment", aggregator).Obj()
			},
			want: summary{Reason: communityv1alpha1.ReasonBindingPolicyPending},
		},
		"no Binding yet": {
			setup: func(w *world) {
				reportedDev("1")(w)
				delete(w.bindings, devName)
			},
			want: summary{Reason: communityv1alpha1.ReasonBindingPolicyPending},
		},
		"a BindingPolicy whose spec is not the desired one (being updated)": {
			setup: func(w *world) {
				reportedDev("1")(w)
				w.bps[devName].Spec.ClusterSelectors = []metav1.LabelSelector{testutil.MatchLabels("env", "qa")}
			},
			want: summary{Reason: communityv1alpha1.ReasonBindingPolicyPending, Writes: []string{"Update " + devName}},
		},
		"a BindingPolicy of drover missing its labels": {
			setup: func(w *world) {
				reportedDev("1")(w)
				delete(w.bps[devName].Labels, communityv1alpha1.LabelStage)
			},
			want: summary{Reason: communityv1alpha1.ReasonBindingPolicyPending, Writes: []string{"Update " + devName}},
		},
		"a BindingPolicy being deleted": {
			setup: func(w *world) {
				reportedDev("1")(w)
				w.bps[devName] = testutil.WrapBindingPolicy(w.bps[devName]).Terminating(w.now).Obj()
			},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Reason: communityv1alpha1.ReasonTerminating,
				Events: []string{communityv1alpha1.ReasonTerminating}},
		},
		"a BindingPolicy re-created by someone (a new UID) whose CombinedStatuses are the old incarnation's": {
			setup: func(w *world) {
				w.activate()
				w.step() // the UID of the first incarnation is recorded
				w.tick(time.Minute)
				w.css = append(w.css, oneCS(devName, w.bps[devName].UID, w.now).Obj())
				w.bps[devName] = testutil.WrapBindingPolicy(w.bps[devName]).UID("bp-uid-again").Created(w.now).Obj()
				w.process()
			},
			want: summary{Reason: communityv1alpha1.ReasonAwaitingStatus},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, twoStages().Obj())
			tc.setup(w)
			d := w.pass()
			want := tc.want
			want.Active, want.Index, want.Stages = "dev", 0, devActive
			if want.Phase == "" {
				want.Phase = communityv1alpha1.PhaseProgressing
			}
			checkSummary(t, d, want)
			checkRepeat(t, w, d)
		})
	}
}

// Once prod is active, the dev BindingPolicy's CombinedStatuses (still present during the handover) do not
// count for prod, although prod has no condition and promotes on any status.
func TestDecideIgnoresThePreviousStagesCombinedStatuses(t *testing.T) {
	w := newWorld(t, twoStages().Obj())
	w.activate()
	w.report("dev", nginxDeployment, "1")
	w.step()
	w.process()
	d := w.pass()
	if len(w.css) == 0 {
		t.Fatal("the dev CombinedStatus is gone; the test needs it")
	}
	checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
		Reason: communityv1alpha1.ReasonAwaitingStatus, Deletes: []string{devName}})
}

// A BindingPolicy re-created under the active stage (a new UID) restarts the stage's clock: the evidence of
// the old incarnation no longer counts, so neither does its time. drover re-creating a deleted one restarts
// the clock when it creates it; one re-created by someone else when a pass sees the new UID.
func TestDecideRecreatedBindingPolicyRestartsTheClock(t *testing.T) {
	sbp := devOnly(func(w *testutil.SBPWrapper) *testutil.SBPWrapper {
		return w.Condition(seedCondition).MinDuration(10 * time.Minute)
	})
	t.Run("deleted and re-created by drover", func(t *testing.T) {
		w := newWorld(t, sbp)
		w.activate()
		w.step() // records the first incarnation: its replacement must restart the clock once, not twice
		w.tick(5 * time.Minute)
		w.deleteBindingPolicy(devName)
		d := w.step()
		checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
			Reason: communityv1alpha1.ReasonBindingPolicyPending, Writes: []string{"Create " + devName}})
		if e := entry(t, d.Status, "dev"); !e.ClockStartedAt.Equal(at(t0.Add(5 * time.Minute))) {
			t.Errorf("clock started at %v, want the re-creation at %v", e.ClockStartedAt, t0.Add(5*time.Minute))
		}
		w.process()
		w.report("dev", nginxDeployment, "1")
		w.tick(time.Minute)
		d = w.step()
		if e := entry(t, d.Status, "dev"); e.BindingPolicyUID != w.bps[devName].UID {
			t.Errorf("recorded UID %s, want the new incarnation's %s", e.BindingPolicyUID, w.bps[devName].UID)
		}
		checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
			Reason: communityv1alpha1.ReasonSoaking, Events: []string{communityv1alpha1.ReasonSoaking}, Requeue: 9 * time.Minute})
	})
	t.Run("replaced by someone under a recorded UID", func(t *testing.T) {
		w := newWorld(t, sbp)
		w.activate()
		w.step() // records the first incarnation
		w.tick(5 * time.Minute)
		w.bps[devName] = testutil.WrapBindingPolicy(w.bps[devName]).UID("bp-uid-again").Created(w.now).Obj()
		w.process()
		w.report("dev", nginxDeployment, "1")
		d := w.step()
		if e := entry(t, d.Status, "dev"); e.BindingPolicyUID != "bp-uid-again" || !e.ClockStartedAt.Equal(at(w.now)) {
			t.Errorf("entry = %+v, want UID bp-uid-again and the clock restarted at %v", e, w.now)
		}
		checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
			Reason: communityv1alpha1.ReasonSoaking, Events: []string{communityv1alpha1.ReasonSoaking}, Requeue: 10 * time.Minute})
	})
}

// BindingPolicies that are not drover's: a foreign one with the target name is never written or deleted
// and holds the stage; one the KubeStellar workload stager left (a plain owner reference to the policy)
// is adopted.
func TestDecideOwnership(t *testing.T) {
	foreign := func(name string) *controlv1alpha1.BindingPolicy {
		return testutil.MakeBindingPolicy(name).UID("foreign-uid").ControlledBy("someone-else", "other-sbp-uid").Created(t0).ObservedGeneration(1).Obj()
	}
	cases := map[string]struct {
		setup func(w *world)
		want  summary
	}{
		"a foreign BindingPolicy with the first stage's name": {
			setup: func(w *world) { w.bps[devName] = foreign(devName) },
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonConflict, Events: []string{communityv1alpha1.ReasonStageActivated, communityv1alpha1.ReasonConflict}, Commit: true},
		},
		"a foreign BindingPolicy with the first stage's name, being deleted: the stage waits for it to go": {
			setup: func(w *world) { w.bps[devName] = testutil.WrapBindingPolicy(foreign(devName)).Terminating(t0).Obj() },
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonTerminating, Events: []string{communityv1alpha1.ReasonStageActivated, communityv1alpha1.ReasonTerminating}, Commit: true},
		},
		"a BindingPolicy without any owner with the first stage's name": {
			setup: func(w *world) { w.bps[devName] = testutil.MakeBindingPolicy(devName).UID("foreign-uid").Obj() },
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonConflict, Events: []string{communityv1alpha1.ReasonStageActivated, communityv1alpha1.ReasonConflict}, Commit: true},
		},
		"a foreign BindingPolicy with the next stage's name: the promotion commits and waits on the conflict": {
			setup: func(w *world) {
				w.bps[prodName] = foreign(prodName)
				reportedDev("1")(w)
			},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonConflict, Events: []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated, communityv1alpha1.ReasonConflict},
				Commit: true, Promotion: true},
		},
		"a foreign BindingPolicy with the next stage's name: the outgoing one stays": {
			setup: func(w *world) {
				w.bps[prodName] = foreign(prodName)
				reportedDev("1")(w)
				w.step()
				w.process()
			},
			want: summary{Phase: communityv1alpha1.PhaseWaiting, Active: "prod", Index: 1, Stages: promoted,
				Reason: communityv1alpha1.ReasonConflict},
		},
		"the workload stager's BindingPolicy is adopted": {
			setup: func(w *world) {
				w.bps[devName] = testutil.MakeBindingPolicy(devName).UID("upstream-uid").OwnedBy(sbpName, sbpUID).Created(t0).
					Downsync(w.sbp.Spec.Downsync...).ClusterSelectors(w.sbp.Spec.Stages[0].ClusterSelectors...).Obj()
			},
			want: summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
				Reason: communityv1alpha1.ReasonBindingPolicyPending, Events: []string{communityv1alpha1.ReasonStageActivated},
				Writes: []string{"Adopt " + devName}, Commit: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, twoStages().Obj())
			tc.setup(w)
			d := w.pass()
			checkSummary(t, d, tc.want)
			checkRepeat(t, w, d)
		})
	}
}

// The adoption makes the BindingPolicy drover's: its controller reference replaces the plain one, drover's
// labels are added, and what others put there stays.
func TestMergeDesiredAdopts(t *testing.T) {
	sbp := twoStages().Obj()
	desired := DesiredBindingPolicy(sbp, 0)
	existing := testutil.MakeBindingPolicy(devName).UID("upstream-uid").OwnedBy(sbpName, sbpUID).Label("team", "web").
		Finalizer(controlv1alpha1.FinalizerBindingPolicy).Obj()
	got := MergeDesired(existing, desired)
	if c := metav1.GetControllerOf(got); c == nil || c.UID != sbpUID || len(got.OwnerReferences) != 1 {
		t.Errorf("owner references = %+v, want one controller reference to the policy", got.OwnerReferences)
	}
	if got.Labels["team"] != "web" || got.Labels[communityv1alpha1.LabelStage] != "dev" || len(got.Finalizers) != 1 || got.UID != "upstream-uid" {
		t.Errorf("merged = %+v, want others' labels and finalizers kept", got.ObjectMeta)
	}
	if kind, ok := Reconcilable(existing, desired); kind != WriteAdopt || !ok {
		t.Errorf("Reconcilable = %s, %v; want Adopt", kind, ok)
	}
	if _, ok := Reconcilable(got, desired); ok {
		t.Error("an adopted, up-to-date BindingPolicy is written again")
	}
	foreign := testutil.WrapBindingPolicy(existing).ControlledBy("other", "other-uid").Obj()
	if _, ok := Reconcilable(foreign, desired); ok {
		t.Error("a foreign BindingPolicy is reconcilable")
	}
	terminating := testutil.WrapBindingPolicy(got).Terminating(t0).Obj()
	if _, ok := Reconcilable(terminating, desired); ok {
		t.Error("a terminating BindingPolicy is reconcilable")
	}
}

// A status the workload stager wrote (activeStage only, no history, no index) is honoured: the rollout
// continues at that stage, the earlier ones count as passed, and nothing is re-gated or announced.
func TestDecideHonoursAnUpstreamStatus(t *testing.T) {
	w := newWorld(t, twoStages().Obj())
	w.sbp.Status = communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: "prod"}
	w.bps[prodName] = testutil.MakeBindingPolicy(prodName).UID("upstream-prod").OwnedBy(sbpName, sbpUID).Created(t0).
		Downsync(w.sbp.Spec.Downsync...).ClusterSelectors(w.sbp.Spec.Stages[1].ClusterSelectors...).Obj()
	d := w.pass()
	checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: promoted,
		Reason: communityv1alpha1.ReasonBindingPolicyPending, Writes: []string{"Adopt " + prodName}})
	checkRepeat(t, w, d)
	if got := d.Status.ActiveStageIndex; got == nil || *got != 1 {
		t.Errorf("activeStageIndex = %v, want 1", got)
	}
	w.apply(d)
	w.process()
	w.report("prod", nginxDeployment, "1")
	d = w.step()
	if d.Status.Phase != communityv1alpha1.PhaseCompleted || entry(t, d.Status, "prod").BindingPolicyUID != "upstream-prod" {
		t.Errorf("after the adoption: phase %s, prod entry %+v; want Completed on the adopted BindingPolicy", d.Status.Phase, entry(t, d.Status, "prod"))
	}
}

// A status with the index but no history (a policy drover never wrote history for) resumes the same way.
func TestDecideUpstreamStatusWithIndex(t *testing.T) {
	w := newWorld(t, twoStages().Obj())
	w.sbp.Status = communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", ActiveStageIndex: ptr.To[int32](0)}
	d := w.pass()
	checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: devActive,
		Reason: communityv1alpha1.ReasonBindingPolicyPending, Writes: []string{"Create " + devName}})
}
