package yurtappdaemon

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

// TestPerPoolFailures: a failing pool blocks neither the other pools' creates nor the updates; a
// failed batch leaves the rest pending; a render failure leaves the pool's child unchanged.
func TestPerPoolFailures(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		owner := k.owner().Deployment(func() appsv1.DeploymentSpec {
			s := testutil.DeploymentSpec(appLabels, "dns:1")
			s.MinReadySeconds = 5
			return s
		}()).Tweaks(
			openyurtv1alpha1.WorkloadTweak{Pools: []string{"broken"}, Tweaks: openyurtv1alpha1.Tweaks{Patches: []openyurtv1alpha1.Patch{
				{Path: "/spec/minReadySeconds", Operation: openyurtv1alpha1.PatchRemove}}}},
			openyurtv1alpha1.WorkloadTweak{Pools: []string{"broken"}, Tweaks: openyurtv1alpha1.Tweaks{Patches: []openyurtv1alpha1.Patch{
				{Path: "/spec/minReadySeconds", Operation: openyurtv1alpha1.PatchReplace, Value: rawJSON("7")}}}},
		).Obj()
		failA := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() == "dns-a" {
				return apierrors.NewInternalError(errInjected)
			}
			return c.Create(ctx, obj, opts...)
		}}
		objs := []client.Object{owner, pool("a", edgeLabels).Obj(), pool("b", edgeLabels).Obj(), pool("c", edgeLabels).Obj(),
			pool("broken", edgeLabels).Obj(), pool("d", edgeLabels).Obj(),
			child("dns-d", "d", k.ref()), child("dns-broken", "broken", k.ref())}
		f := newFixture(t, k, objs, failA)
		if _, err := f.reconcile(); err == nil {
			t.Fatal("reconcile returned no error")
		}
		deps := f.deployments()
		if diff := cmp.Diff([]string{"dns-broken", "dns-d"}, mapKeysSlice(deps)); diff != "" {
			t.Errorf("deployments (-want +got):\n%s", diff)
		}
		if img := deps["dns-d"].Spec.Template.Spec.Containers[0].Image; img != "dns:1" {
			t.Errorf("dns-d image %q: the update was blocked by the failed create", img)
		}
		if img := deps["dns-broken"].Spec.Template.Spec.Containers[0].Image; img != "dns:0" {
			t.Errorf("dns-broken image %q: a pool that failed to render was written", img)
		}
		want := map[string]string{
			openyurtv1alpha1.WorkLoadProvisioned: "False/ProvisionFailed",
			openyurtv1alpha1.WorkLoadUpdated:     "False/RenderFailed",
			openyurtv1alpha1.WorkLoadFailure:     "True/RenderFailed",
		}
		if diff := cmp.Diff(want, f.conditions(1)); diff != "" {
			t.Errorf("conditions (-want +got):\n%s", diff)
		}
		msg := condition(f.ownerStatus(), openyurtv1alpha1.WorkLoadFailure).Message
		for _, s := range []string{"broken", "Creating workloads failed for a:", "2 pending after an earlier failure: b, c"} {
			if !strings.Contains(msg, s) {
				t.Errorf("failure message %q lacks %q", msg, s)
			}
		}
	})
}

// TestCreateConflicts: an owned child the cache does not show is found by the create and synced
// (a foreign object of that name is a NameConflict: see TestReconcileClassification).
func TestCreateConflicts(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		hidden := child("dns-east", "", k.ref()) // its pool label was removed by hand: not in the real cache
		hideDeployments := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*appsv1.DeploymentList); ok {
				return nil // the label-filtered cache holds none of them
			}
			return c.List(ctx, list, opts...)
		}}
		f := newFixture(t, k, []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), hidden}, hideDeployments)
		f.mustReconcile()
		if diff := cmp.Diff(map[string]int{"create Deployment": 1, "apply": 1},
			map[string]int{"create Deployment": f.writes.Get("create Deployment"), "apply": f.writes.Get("apply")}); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
		got := &appsv1.Deployment{}
		if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: "dns-east"}, got); err != nil {
			t.Fatal(err)
		}
		if got := got.Labels[openyurtv1alpha1.LabelPoolName]; got != "east" {
			t.Errorf("pool label %q: the owned child was not repaired", got)
		}
		if diff := cmp.Diff(allGood, f.conditions(1)); diff != "" {
			t.Errorf("conditions (-want +got):\n%s", diff)
		}
	})
}
