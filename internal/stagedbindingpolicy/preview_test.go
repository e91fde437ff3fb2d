package stagedbindingpolicy

import (
	"context"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
	"github.com/drover-dev/drover/internal/testutil"
)

// stagerPolicy is a two-stage policy whose stages have no gate, with the status the stager writes once it
// moved to prod: activeStage only.
func stagerPolicy() *communityv1alpha1.StagedBindingPolicy {
	sbp := testutil.MakeSBP(testSBP).UID(testSBPUID).Downsync(testutil.ObjectsLabelled("app", "web")).
		Stage("dev", testutil.MatchLabels("env", "dev")).
		Stage("prod", testutil.MatchLabels("env", "prod")).Obj()
	sbp.Status = communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: "prod"}
	return sbp
}

// stagerBindingPolicy is stage i's BindingPolicy as the stager creates it (a plain owner reference, the
// policy's downsync and the stage's selectors), processed by KubeStellar (its finalizer, observed
// generation), with its Binding placing one object on one cluster.
func stagerBindingPolicy(sbp *communityv1alpha1.StagedBindingPolicy, i int, uid string) (*controlv1alpha1.BindingPolicy, *controlv1alpha1.Binding) {
	name := stager.BindingPolicyName(sbp.Name, sbp.Spec.Stages[i].Name)
	bp := testutil.MakeBindingPolicy(name).UID(types.UID(uid)).OwnedBy(sbp.Name, sbp.UID).Finalizer(controlv1alpha1.FinalizerBindingPolicy).
		Downsync(sbp.Spec.Downsync...).ClusterSelectors(sbp.Spec.Stages[i].ClusterSelectors...).ObservedGeneration(1).Obj()
	binding := testutil.MakeBinding(name).ControlledBy(name, bp.UID).Destinations("cluster-"+sbp.Spec.Stages[i].Name).
		NamespaceObject("apps", "v1", "deployments", "default", "web").Obj()
	return bp, binding
}

func runPreview(t *testing.T, objs ...client.Object) preview.Report {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: objs})
	reports, err := Preview(context.Background(), fc.Client, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 {
		t.Fatalf("%d reports, want 1: %+v", len(reports), reports)
	}
	return reports[0]
}

func effects(r preview.Report) map[string]preview.Effect {
	out := map[string]preview.Effect{}
	for _, it := range r.Items {
		out[it.Object] = it.Effect
	}
	return out
}

func why(r preview.Report, object string) string {
	for _, it := range r.Items {
		if it.Object == object {
			return it.Why
		}
	}
	return ""
}

// The state the stager leaves mid-rollout: drover continues at prod, adopts prod's BindingPolicy with
// nothing else changed, creates and deletes nothing, and its next pass completes the ungated rollout.
func TestPreviewStagerMidRollout(t *testing.T) {
	sbp := stagerPolicy()
	bp, binding := stagerBindingPolicy(sbp, 1, "prod-uid")
	r := runPreview(t, sbp, bp, binding)
	want := map[string]preview.Effect{"status": preview.Status, "BindingPolicy " + prodBP: preview.Adopt}
	if got := effects(r); !maps.Equal(got, want) {
		t.Fatalf("effects = %v, want %v (%+v)", got, want, r)
	}
	if len(r.Restarting()) != 0 {
		t.Errorf("restarting = %+v, want none", r.Restarting())
	}
	if w := why(r, "status"); !strings.Contains(w, "activeStage prod as the stager wrote it") || !strings.Contains(w, "continues at prod (index 1)") {
		t.Errorf("status: %q", w)
	}
	if w := why(r, "BindingPolicy "+prodBP); !strings.Contains(w, "spec, UID, finalizers and Binding unchanged") {
		t.Errorf("adoption: %q", w)
	}
	if n := strings.Join(r.Notices, "\n"); !strings.Contains(n, "then: the next pass leaves the rollout at stage prod, Completed") ||
		!strings.Contains(n, "prod Succeeded") {
		t.Errorf("notices: %q", n)
	}
	var out strings.Builder
	if err := preview.Write(&out, []preview.Report{r}, false); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if !strings.HasSuffix(out.String(), "1 owner(s): nothing restarts.\n") {
		t.Errorf("output ends %q", out.String())
	}
}

// What else a stager-left state can hold, and what drover does with it.
func TestPreviewStagerLeftovers(t *testing.T) {
	sbp := stagerPolicy()
	prod, prodBinding := stagerBindingPolicy(sbp, 1, "prod-uid")
	dev, devBinding := stagerBindingPolicy(sbp, 0, "dev-uid")
	edited := prod.DeepCopy()
	edited.Spec.ClusterSelectors = []metav1.LabelSelector{testutil.MatchLabels("env", "staging")}
	mine := testutil.WrapBindingPolicy(dev).ControlledBy(sbp.Name, sbp.UID).Obj()
	foreign := prod.DeepCopy()
	foreign.OwnerReferences = nil
	fresh := stagerPolicy()
	fresh.Status = communityv1alpha1.StagedBindingPolicyStatus{}
	cases := map[string]struct {
		objs    []client.Object
		want    map[string]preview.Effect
		why     string // in the item of the BindingPolicy named by whyOf
		whyOf   string
		restart bool
	}{
		"the active stage's spec was edited after the stager created its BindingPolicy": {
			objs: []client.Object{sbp, edited, prodBinding},
			want: map[string]preview.Effect{"status": preview.Status, "BindingPolicy " + prodBP: preview.Update},
			why:  "clusterSelectors differ", whyOf: prodBP, restart: true,
		},
		"an earlier stage's BindingPolicy the stager left behind is kept": {
			objs: []client.Object{sbp, prod, prodBinding, dev, devBinding},
			want: map[string]preview.Effect{"status": preview.Status, "BindingPolicy " + prodBP: preview.Adopt, "BindingPolicy " + devBP: preview.Keep},
			why:  "neither adopts nor deletes it", whyOf: devBP,
		},
		"someone else's BindingPolicy with the active stage's name is left alone": {
			objs: []client.Object{sbp, foreign, prodBinding},
			want: map[string]preview.Effect{"status": preview.Status, "BindingPolicy " + prodBP: preview.Keep},
			why:  "never modified or deleted", whyOf: prodBP,
		},
		"drover's own BindingPolicy of an earlier stage leaves once the active one is current": {
			objs: []client.Object{sbp, prod, prodBinding, mine, devBinding},
			want: map[string]preview.Effect{"status": preview.Status, "BindingPolicy " + prodBP: preview.Adopt, "BindingPolicy " + devBP: preview.Delete},
			why:  "handover", whyOf: devBP, restart: true,
		},
		"a policy the stager never acted on starts at its first stage": {
			objs: []client.Object{fresh},
			want: map[string]preview.Effect{"status": preview.Status, "BindingPolicy " + devBP: preview.Create},
			why:  "drover creates it", whyOf: devBP,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := runPreview(t, tc.objs...)
			if got := effects(r); !maps.Equal(got, tc.want) {
				t.Fatalf("effects = %v, want %v (%+v)", got, tc.want, r)
			}
			if w := why(r, "BindingPolicy "+tc.whyOf); !strings.Contains(w, tc.why) {
				t.Errorf("why of %s = %q, want it to contain %q", tc.whyOf, w, tc.why)
			}
			if got := len(r.Restarting()) > 0; got != tc.restart {
				t.Errorf("restarting = %+v, want some: %v", r.Restarting(), tc.restart)
			}
		})
	}
}
