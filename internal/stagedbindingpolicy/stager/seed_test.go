package stager

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

// The KubeStellar workload stager README's example, applied unchanged: the dev BindingPolicy first, prod once
// a deployments-aggregator Number column of the dev Deployment reads "1", the dev BindingPolicy deleted only
// once prod's is current, and prod (no condition) completed once its objects have status. KubeStellar is
// played by hand between the passes.
func TestDecideSeedRolloutFromDevToProd(t *testing.T) {
	seed, err := testutil.SeedSBP()
	if err != nil {
		t.Fatal(err)
	}
	seed.UID = sbpUID
	w := newWorld(t, seed)
	w.objects = []workload{nginxDeployment, nginxService}
	const (
		dev  = "nginx-staged-bindingpolicy.stage.dev"
		prod = "nginx-staged-bindingpolicy.stage.prod"
	)

	// The new policy activates dev and creates its BindingPolicy.
	d := w.step()
	checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: []string{"dev=Active"},
		Reason: communityv1alpha1.ReasonBindingPolicyPending, Events: []string{communityv1alpha1.ReasonStageActivated}, Writes: []string{"Create " + dev}, Commit: true})
	bp := w.bps[dev]
	if bp == nil {
		t.Fatalf("no BindingPolicy %s", dev)
	}
	if diff := cmp.Diff([]metav1.LabelSelector{testutil.MatchLabels("env", "dev")}, bp.Spec.ClusterSelectors); diff != "" {
		t.Errorf("dev selectors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(seed.Spec.Downsync, bp.Spec.Downsync); diff != "" {
		t.Errorf("dev downsync (-want +got):\n%s", diff)
	}
	if c := metav1.GetControllerOf(bp); c == nil || c.UID != sbpUID || c.Kind != "StagedBindingPolicy" || !*c.BlockOwnerDeletion {
		t.Errorf("dev controller reference = %+v", c)
	}
	if bp.Labels["drover.dev/staged-binding-policy"] != seed.Name || bp.Labels["drover.dev/stage"] != "dev" {
		t.Errorf("dev labels = %v", bp.Labels)
	}

	// KubeStellar has not processed it yet: nothing to write, nothing to decide.
	w.tick(time.Second)
	checkSummary(t, w.step(), summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: []string{"dev=Active"},
		Reason: communityv1alpha1.ReasonBindingPolicyPending})

	// The Binding exists; the filter keeps the Deployment only, which has no CombinedStatus yet.
	w.process()
	w.tick(time.Second)
	d = w.step()
	checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: []string{"dev=Active"},
		Reason: communityv1alpha1.ReasonAwaitingStatus})
	if ev := entry(t, d.Status, "dev").LastEvaluation; ev.Objects != 1 || ev.ObjectsWithStatus != 0 {
		t.Errorf("dev evaluation = %+v, want the Deployment only, without status", ev)
	}
	if got := entry(t, d.Status, "dev").Destinations; got != 1 {
		t.Errorf("dev destinations = %d, want 1", got)
	}

	// Two replicas: the seed's condition compares the string '1', so "2" does not satisfy it.
	w.report("dev", nginxDeployment, "2")
	w.tick(time.Second)
	checkSummary(t, w.step(), summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: []string{"dev=Active"},
		Reason: communityv1alpha1.ReasonConditionNotMet})

	// "1": dev succeeds, prod is activated and its BindingPolicy created; dev's stays.
	w.report("dev", nginxDeployment, "1")
	w.tick(time.Second)
	d = w.step()
	checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1, Stages: []string{"dev=Succeeded", "prod=Active"},
		Reason: communityv1alpha1.ReasonHandingOver, Events: []string{communityv1alpha1.ReasonStageSucceeded, communityv1alpha1.ReasonStageActivated},
		Writes: []string{"Create " + prod}, Commit: true, Promotion: true})
	if got := w.bps[prod].Spec.ClusterSelectors; !cmp.Equal(got, []metav1.LabelSelector{testutil.MatchLabels("env", "prod")}) {
		t.Errorf("prod selectors = %v", got)
	}

	// prod is not current yet: dev is kept.
	w.tick(time.Second)
	checkSummary(t, w.step(), summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1,
		Stages: []string{"dev=Succeeded", "prod=Active"}, Reason: communityv1alpha1.ReasonHandingOver})
	if w.bps[dev] == nil {
		t.Fatal("dev's BindingPolicy was deleted before prod's was current")
	}

	// prod is current: dev, and only dev, is deleted, with its UID as precondition.
	w.process()
	w.tick(time.Second)
	d = w.step()
	if want := []Delete{{Name: dev, UID: entry(t, d.Status, "dev").BindingPolicyUID}}; !cmp.Equal(d.Deletes, want) {
		t.Errorf("deletes = %+v, want %+v", d.Deletes, want)
	}

	// prod has no condition: it completes once every gated object (the Deployment and the Service, both
	// naming the collector) has status.
	w.report("prod", nginxDeployment, "1")
	w.tick(time.Second)
	checkSummary(t, w.step(), summary{Phase: communityv1alpha1.PhaseProgressing, Active: "prod", Index: 1,
		Stages: []string{"dev=Succeeded", "prod=Active"}, Reason: communityv1alpha1.ReasonAwaitingStatus})
	w.report("prod", nginxService, "0")
	w.tick(time.Second)
	checkSummary(t, w.step(), summary{Phase: communityv1alpha1.PhaseCompleted, Active: "prod", Index: 1,
		Stages: []string{"dev=Succeeded", "prod=Succeeded"}, Reason: string(communityv1alpha1.PhaseCompleted),
		Events: []string{communityv1alpha1.ReasonRolloutCompleted}, Commit: true, Promotion: true})
	if names := sortedKeys(w.bps); !cmp.Equal(names, []string{prod}) {
		t.Errorf("BindingPolicies after completion = %v, want prod's only", names)
	}
	if w.sbp.Status.ActiveStage != "prod" {
		t.Errorf("activeStage = %q, want prod (upstream's field names the last stage once completed)", w.sbp.Status.ActiveStage)
	}
}

// A CombinedStatus whose labels or name do not tie it to the active BindingPolicy and object is never
// counted: missing labels, another policy's BindingPolicy label, another object.
func TestDecideIgnoresMalformedCombinedStatuses(t *testing.T) {
	w := newWorld(t, twoStages().Obj())
	w.activate()
	uid := w.bps[devName].UID
	one := []controlv1alpha1.Value{testutil.NumberValue("1")}
	base := func() *testutil.CombinedStatusWrapper {
		return testutil.MakeCombinedStatus(nginxDeployment.uid, devName, uid).Created(w.now).Result(aggregator, []string{"count"}, one)
	}
	noLabels := base().Obj()
	noLabels.SetLabels(map[string]string{controlv1alpha1.LabelCombinedStatusBindingPolicy: devName})
	otherPolicy := base().Workload("apps/v1", "Deployment", "deployments", "nginx", "nginx-deployment").
		Label(controlv1alpha1.LabelCombinedStatusBindingPolicy, "other.stage.dev").Obj()
	otherObject := base().Workload("apps/v1", "Deployment", "deployments", "nginx", "other-deployment").Obj()
	otherGroup := base().Workload("extensions/v1beta1", "Deployment", "deployments", "nginx", "nginx-deployment").Obj()
	w.css = append(w.css, noLabels, otherPolicy, otherObject, otherGroup)
	d := w.pass()
	checkSummary(t, d, summary{Phase: communityv1alpha1.PhaseProgressing, Active: "dev", Index: 0, Stages: []string{"dev=Active"},
		Reason: communityv1alpha1.ReasonAwaitingStatus})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
