package yurtappdaemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

// TestCreatesRunInSlowStartBatches: the creates of a pass run concurrently in batches of 1, 2, 4, … capped
// at MaxBatch (4 in the fixture): the first create runs alone, and later ones overlap up to the cap. A
// serial implementation never overlaps; an unbatched one starts with more than one.
func TestCreatesRunInSlowStartBatches(t *testing.T) {
	k := ownerKindCases[0]
	// Each create stays in flight until the cap has been reached once (at most 1 s for the batches of 1 and 2).
	probe := testutil.NewConcurrencyProbe(4, time.Second)
	hooks := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*openyurtv1alpha1.YurtAppDaemon); ok {
			return c.Create(ctx, obj, opts...)
		}
		probe.Call()
		return c.Create(ctx, obj, opts...)
	}}
	objs := []client.Object{k.owner().Obj()}
	for i := range 11 { // batches 1, 2, 4, 4
		objs = append(objs, pool(fmt.Sprintf("p%02d", i), edgeLabels).Obj())
	}
	f := newFixture(t, k, objs, hooks)
	f.mustReconcile()
	if n := len(f.deployments()); n != 11 {
		t.Fatalf("%d deployments, want 11", n)
	}
	if peak := probe.Peak(); peak != 4 {
		t.Errorf("peak concurrent creates %d, want the cap 4", peak)
	}
	// The first create is the revision's, not a workload; the first workload create runs alone.
	if first := probe.InFlightAtEntry()[1]; first != 1 {
		t.Errorf("the first workload create ran with %d in flight, want alone", first)
	}
}

// TestConflictsBackOff: a pass that loses a race requeues without an error after 1 s, then 2 s, then 4 s
// while it keeps losing; a clean pass resets the delay.
func TestConflictsBackOff(t *testing.T) {
	k := ownerKindCases[0]
	conflict := true
	hooks := interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if conflict {
			return apierrors.NewConflict(schema.GroupResource{Group: "apps.openyurt.io", Resource: "yurtappdaemons"},
				obj.GetName(), errors.New("the object has been modified"))
		}
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}}
	f := newFixture(t, k, []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj()}, hooks)
	pass := func(want time.Duration) {
		t.Helper()
		before := f.writes.Get("status-update")
		res, err := f.reconcile()
		if err != nil || res.RequeueAfter != want {
			t.Fatalf("result %+v, error %v; want a requeue after %s without an error", res, err, want)
		}
		if f.writes.Get("status-update") != before+1 {
			t.Fatal("the pass did not write the status")
		}
	}
	pass(time.Second)
	pass(2 * time.Second)
	pass(4 * time.Second)
	conflict = false
	pass(0)
	// The status is now current: nudge it so the next pass writes again, and loses again.
	conflict = true
	o := k.owner().Obj()
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
	o.DaemonStatus().NodePools = nil
	if err := f.c.Status().Update(context.Background(), o); err == nil {
		t.Fatal("the hook let a status update through")
	}
	conflict = false
	if err := f.c.Status().Update(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	conflict = true
	pass(time.Second)
}

// namespaceTerminating is the API server's refusal of a create in a namespace being deleted.
func namespaceTerminating(obj client.Object) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: fmt.Sprintf("unable to create new content in namespace %s because it is being terminated", obj.GetNamespace()),
		Details: &metav1.StatusDetails{Name: obj.GetName(), Causes: []metav1.StatusCause{{
			Type: corev1.NamespaceTerminatingCause, Message: "namespace " + obj.GetNamespace() + " is being terminated",
			Field: "metadata.namespace",
		}}},
	}}
}

// TestCreateInTerminatingNamespaceIsHarmless: creates refused because the namespace is being deleted are no
// failure: no error, no retry, no Warning; the namespace's deletion removes the owner too.
func TestCreateInTerminatingNamespaceIsHarmless(t *testing.T) {
	k := ownerKindCases[0]
	hooks := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*appsv1.ControllerRevision); ok {
			return c.Create(ctx, obj, opts...)
		}
		return namespaceTerminating(obj)
	}}
	objs := []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), pool("west", edgeLabels).Obj(), pool("north", edgeLabels).Obj()}
	f := newFixture(t, k, objs, hooks)
	res, err := f.reconcile()
	if err != nil || res.RequeueAfter != 0 {
		t.Errorf("result %+v, error %v; want neither a requeue nor an error", res, err)
	}
	if n := f.writes.Get("create Deployment"); n == 0 {
		t.Fatal("no create was attempted")
	}
	if n := f.writes.Get("status-update"); n != 1 {
		t.Errorf("%d status writes, want 1", n)
	}
	for _, e := range f.eventReasons() {
		if strings.HasPrefix(e, corev1.EventTypeWarning) {
			t.Errorf("event %q, want no Warning", e)
		}
	}
	if c := condition(f.ownerStatus(), openyurtv1alpha1.WorkLoadFailure); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("WorkLoadFailure = %+v, want False", c)
	}
}

// TestEventsFollowTheStatusWrite: a pass's events are emitted after its status write, so a reader who sees
// an event finds the status that explains it.
func TestEventsFollowTheStatusWrite(t *testing.T) {
	k := ownerKindCases[0]
	var f *fixture
	emittedBefore := -1
	hooks := interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		emittedBefore = len(f.events.Events)
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}}
	f = newFixture(t, k, []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj()}, hooks)
	f.mustReconcile()
	if emittedBefore != 0 {
		t.Errorf("%d events emitted before the status write, want 0", emittedBefore)
	}
	if ev := f.eventReasons(); len(ev) == 0 {
		t.Error("no event after the status write: the pass under test emitted nothing")
	}
}
