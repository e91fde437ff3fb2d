package yurtappdaemon

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// TestReplicasHandoff: the live count is handed to drover-replicas-handoff before an apply
// that stops managing replicas, and it is unchanged afterwards.
func TestReplicasHandoff(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		var applies []string
		record := interceptor.Funcs{Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			o := &client.ApplyOptions{}
			o.ApplyOptions(opts)
			if u, ok := applyConfigObject(obj); ok {
				applies = append(applies, u.GetKind()+" "+u.GetName()+" by "+o.FieldManager)
			}
			return c.Apply(ctx, obj, opts...)
		}}
		f := newFixture(t, k, []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj()}, record)
		// The child as an earlier apply left it, with template replicas 5 (scaled since to 6 by someone else).
		earlier := k.owner().Deployment(func() appsv1.DeploymentSpec {
			s := testutil.DeploymentSpec(appLabels, "dns:0")
			s.Replicas = ptr.To[int32](5)
			return s
		}()).Obj()
		res, err := render.Render(render.Input{
			Owner:     render.OwnerRef{APIVersion: openyurtv1alpha1.GroupVersion.String(), Kind: k.kind, Name: ownerName, UID: ownerUID},
			Namespace: testNS, Spec: earlier.DaemonSpec(), Pool: render.Pool{Name: "east"}, Revision: "dns-old", Name: "dns-east",
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := f.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(res.Body), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		d := &appsv1.Deployment{}
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: "dns-east"}, d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Replicas = ptr.To[int32](6)
		if err := f.c.Update(ctx, d, client.FieldOwner("hpa")); err != nil {
			t.Fatal(err)
		}
		applies = nil

		f.mustReconcile()
		want := []string{"Deployment dns-east by " + HandoffFieldManager, "Deployment dns-east by " + FieldManager}
		if diff := cmp.Diff(want, applies); diff != "" {
			t.Errorf("applies (-want +got):\n%s", diff)
		}
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: "dns-east"}, d); err != nil {
			t.Fatal(err)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 6 {
			t.Errorf("replicas = %v, want the live 6", d.Spec.Replicas)
		}
		if _, ok := d.Annotations[openyurtv1alpha1.AnnotationAppliedReplicas]; ok {
			t.Errorf("annotation %s is still set", openyurtv1alpha1.AnnotationAppliedReplicas)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "dns:1" {
			t.Errorf("image = %q, want dns:1", img)
		}
	})
}

// TestCreatedFieldsMoveToApply: fields a create set are handed to the apply manager, so a key drover stops
// rendering is removed by the next apply.
func TestCreatedFieldsMoveToApply(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		handOvers := 0
		refresh := interceptor.Funcs{
			Create: createReturnsStored,
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if schemeKind(obj) == "Deployment" && patch.Type() == types.JSONPatchType {
					handOvers++
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
		}
		owner := k.owner().TemplateMetadata(map[string]string{"team": "dns", "stage": "beta"}, nil)
		f := newManagedFieldsFixture(t, k, []client.Object{owner.Obj(), pool("east", edgeLabels).Obj()}, refresh)
		f.mustReconcile()
		if got := f.deployments()["dns-east"].Labels["stage"]; got != "beta" {
			t.Fatalf("label stage = %q after create", got)
		}
		if handOvers != 1 {
			t.Errorf("%d managed-field patches after the create, want 1", handOvers)
		}
		updated := owner.TemplateMetadata(map[string]string{"team": "dns"}, nil).Generation(2).Obj()
		current := k.owner().Obj()
		if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(current), current); err != nil {
			t.Fatal(err)
		}
		updated.SetResourceVersion(current.GetResourceVersion())
		if err := f.c.Update(context.Background(), updated); err != nil {
			t.Fatal(err)
		}
		f.mustReconcile()
		labels := f.deployments()["dns-east"].Labels
		if _, ok := labels["stage"]; ok || labels["team"] != "dns" {
			t.Errorf("labels = %v, want team kept and stage removed", labels)
		}
	})
}

// TestManagedFieldsUpgradeRetriesLostRace covers the race after a create: the workload's controller writes
// status first, the upgrade patch's resourceVersion precondition fails, and a fresh read lets it succeed.
func TestManagedFieldsUpgradeRetriesLostRace(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		conflicts := 0
		funcs := interceptor.Funcs{
			Create: createReturnsStored,
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if patch.Type() == types.JSONPatchType && conflicts == 0 {
					conflicts++
					return apierrors.NewConflict(appsv1.Resource("deployments"), obj.GetName(), errors.New("the object has been modified"))
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
		}
		owner := k.owner().TemplateMetadata(map[string]string{"team": "dns", "stage": "beta"}, nil)
		f := newManagedFieldsFixture(t, k, []client.Object{owner.Obj(), pool("east", edgeLabels).Obj()}, funcs)
		f.mustReconcile()
		if conflicts != 1 {
			t.Fatalf("%d conflicts injected, want 1", conflicts)
		}
		d := &appsv1.Deployment{}
		if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: "dns-east"}, d); err != nil {
			t.Fatal(err)
		}
		for _, mf := range d.ManagedFields {
			if mf.Manager == FieldManager && mf.Operation != metav1.ManagedFieldsOperationApply {
				t.Errorf("manager %s still has a %s entry after the retry", FieldManager, mf.Operation)
			}
		}
	})
}

// TestLoopGuard: a child whose apply result still differs from the body is not written again
// for the same rendering and generation.
func TestLoopGuard(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		normalize := interceptor.Funcs{Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := c.Apply(ctx, obj, opts...); err != nil {
				return err
			}
			// The API server "normalizes" the image: the stored object and the response differ from the body.
			u, _ := applyConfigObject(obj)
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, d); err != nil {
				return err
			}
			d.Spec.Template.Spec.Containers[0].Image = "docker.io/library/dns:1"
			if err := c.Update(ctx, d); err != nil {
				return err
			}
			return unstructuredNestedSet(u, "docker.io/library/dns:1")
		}}
		f := newFixture(t, k, []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), child("dns-east", "east", k.ref())}, normalize)
		f.mustReconcile()
		if n := f.writes.Get("apply"); n != 1 {
			t.Fatalf("first pass: %d applies, want 1", n)
		}
		before := promValue(normalizationMismatches.WithLabelValues(k.kind))
		f.writes.Reset()
		f.mustReconcile()
		if n := f.writes.Get("apply"); n != 0 {
			t.Errorf("second pass: %d applies, want 0 (the loop guard holds the child)", n)
		}
		if after := promValue(normalizationMismatches.WithLabelValues(k.kind)); after != before {
			t.Errorf("mismatches counted again on the second pass: %v → %v", before, after)
		}
	})
}

// TestFailedHandOverIsRedoneByTheNextApply: when every hand-over attempt after the create fails, the next
// apply of the child (after a template change) sees drover's Update entry in the API server's answer, hands
// the fields over and applies again, so a key drover stopped rendering is removed after all.
func TestFailedHandOverIsRedoneByTheNextApply(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		failHandOver, handOvers := true, 0
		funcs := interceptor.Funcs{
			Create: createReturnsStored,
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if patch.Type() == types.JSONPatchType {
					handOvers++
					if failHandOver {
						return apierrors.NewInternalError(errInjected)
					}
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
		}
		owner := k.owner().TemplateMetadata(map[string]string{"team": "dns", "stage": "beta"}, nil)
		f := newManagedFieldsFixture(t, k, []client.Object{owner.Obj(), pool("east", edgeLabels).Obj()}, funcs)
		f.mustReconcile()
		failHandOver = false

		updated := owner.TemplateMetadata(map[string]string{"team": "dns"}, nil).Generation(2).Obj()
		current := k.owner().Obj()
		if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(current), current); err != nil {
			t.Fatal(err)
		}
		updated.SetResourceVersion(current.GetResourceVersion())
		if err := f.c.Update(context.Background(), updated); err != nil {
			t.Fatal(err)
		}
		handOvers = 0
		f.mustReconcile()
		if handOvers != 1 {
			t.Errorf("%d hand-over patches, want 1", handOvers)
		}
		labels := f.deployments()["dns-east"].Labels
		if _, ok := labels["stage"]; ok || labels["team"] != "dns" {
			t.Errorf("labels = %v, want team kept and stage removed", labels)
		}
	})
}

// TestLoopGuardMismatchOncePerRenderingAndGeneration: a mismatch is new once per (child, rendered hash,
// generation), and the guard keeps holding the child when the cache shows a view older than the apply that
// recorded it (a status write that preceded the apply, at a lower generation), instead of applying again.
func TestLoopGuardMismatchOncePerRenderingAndGeneration(t *testing.T) {
	const uid = types.UID("child")
	view := func(rv string, generation int64) client.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: rv, Generation: generation}}
	}
	g := newLoopGuard()
	// A pass applies the rendering h2 from resourceVersion 10 (generation 1); the result, at generation 2,
	// still differs from the rendering.
	g.settle(uid, "h2", "10")
	if !g.recordMismatch(uid, "h2", 2) {
		t.Fatal("the first mismatch is not new")
	}
	steps := []struct {
		name string
		live client.Object
		hash string
		want bool
	}{
		{"the cache has not seen the apply yet", view("10", 1), "h2", true},
		{"a status write that preceded the apply", view("11", 1), "h2", true},
		{"the apply and later status writes", view("12", 2), "h2", true},
		{"another status write", view("13", 2), "h2", true},
	}
	for _, s := range steps {
		if got := g.holds(s.live, s.hash); got != s.want {
			t.Errorf("%s: holds = %t, want %t", s.name, got, s.want)
		}
	}
	if g.recordMismatch(uid, "h2", 2) {
		t.Error("the same mismatch is new again")
	}
	if g.holds(view("14", 3), "h2") {
		t.Error("a new generation of the child (someone else's spec write) is still held")
	}
	if !g.recordMismatch(uid, "h2", 3) {
		t.Error("the mismatch at a new generation is not new")
	}
	if g.holds(view("15", 3), "h3") {
		t.Error("a new rendering is still held")
	}
	if !g.recordMismatch(uid, "h3", 3) {
		t.Error("the mismatch of a new rendering is not new")
	}
}

// TestLoopGuardHoldsThroughAStaleView: after an apply that bumped the child's generation and still differs
// from the rendering, a pass that sees an older view of the child (the cache delivering a status write that
// preceded the apply) writes nothing and counts no new mismatch.
func TestLoopGuardHoldsThroughAStaleView(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		var stale *appsv1.Deployment
		funcs := interceptor.Funcs{
			Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				if err := c.Apply(ctx, obj, opts...); err != nil {
					return err
				}
				// The API server "normalizes" the image, and the new template bumps the generation to 2.
				u, _ := applyConfigObject(obj)
				d := &appsv1.Deployment{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, d); err != nil {
					return err
				}
				d.Spec.Template.Spec.Containers[0].Image = "docker.io/library/dns:1"
				d.Generation = 2
				if err := c.Update(ctx, d); err != nil {
					return err
				}
				u.SetGeneration(2)
				return unstructuredNestedSet(u, "docker.io/library/dns:1")
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if err := c.List(ctx, list, opts...); err != nil {
					return err
				}
				if l, ok := list.(*appsv1.DeploymentList); ok && stale != nil && len(l.Items) == 1 {
					l.Items[0] = *stale.DeepCopy()
				}
				return nil
			},
		}
		old := child("dns-east", "east", k.ref())
		old.Generation = 1
		f := newFixture(t, k, []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), old}, funcs)
		f.mustReconcile()
		if n := f.writes.Get("apply"); n != 1 {
			t.Fatalf("first pass: %d applies, want 1", n)
		}
		// The next pass sees the child as it was before the apply, at another resourceVersion.
		stale = f.deployments()["dns-east"].DeepCopy()
		stale.Spec.Template.Spec.Containers[0].Image = "dns:0"
		stale.Generation = 1
		stale.ResourceVersion = "5" // neither the seeded child's (999) nor a later one
		before := promValue(normalizationMismatches.WithLabelValues(k.kind))
		f.writes.Reset()
		f.mustReconcile()
		if n := f.writes.Get("apply"); n != 0 {
			t.Errorf("pass on a stale view: %d applies, want 0 (the loop guard holds the child)", n)
		}
		if after := promValue(normalizationMismatches.WithLabelValues(k.kind)); after != before {
			t.Errorf("mismatches counted again on a stale view: %v → %v", before, after)
		}
	})
}

// createReturnsStored creates obj and reads it back, as the API server answers a create with the stored
// object, managedFields included.
func createReturnsStored(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	if err := c.Create(ctx, obj, opts...); err != nil {
		return err
	}
	return c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}
