package nodepool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/testutil"
)

// TestReconcileConflictsBackOff checks that a pool whose node patch keeps losing races is retried after 1 s,
// then 2 s, then 4 s, without an error, and that a clean pass starts the count again at 1 s.
func TestReconcileConflictsBackOff(t *testing.T) {
	var mu sync.Mutex
	conflicting := true
	hooks := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		mu.Lock()
		defer mu.Unlock()
		if conflicting {
			return apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, obj.GetName(), errors.New("changed"))
		}
		return c.Patch(ctx, obj, p, opts...)
	}}
	setConflicting := func(b bool) {
		mu.Lock()
		defer mu.Unlock()
		conflicting = b
	}
	f := newFixture(t, true, []client.Object{
		testutil.MakeNodePool("p").Labels(map[string]string{"x": "y"}).Hub(), testutil.MakeNode("a").Pool("p").Obj(),
	}, hooks)

	step := func(want time.Duration) {
		t.Helper()
		res, err := f.reconcile(t, "p")
		if err != nil || res != (ctrl.Result{RequeueAfter: want}) {
			t.Fatalf("Reconcile = %+v, %v; want a requeue after %v and no error", res, err, want)
		}
	}
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		step(want)
	}
	setConflicting(false)
	step(0) // the patch goes through: a clean pass
	if got := f.node(t, "a").Labels["x"]; got != "y" {
		t.Fatalf("node a label x = %q after the clean pass, want y", got)
	}

	// Another race after the clean pass waits 1 s again. Removing the label makes the next pass patch.
	n := f.node(t, "a")
	delete(n.Labels, "x")
	if err := f.fake.Inner.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	setConflicting(true)
	step(time.Second)
}

// TestReconcileMissingPoolConflictsBackOff checks that the cleanup done under the key of a pool that does
// not exist backs off like any pass: a node that keeps changing under its patch is retried after 1 s, then 2 s.
func TestReconcileMissingPoolConflictsBackOff(t *testing.T) {
	f := newFixture(t, true, []client.Object{
		testutil.MakeNode("gone").Labels(map[string]string{"region": "east"}).
			Annotations(map[string]string{prevKey: `{"labels":{"region":"east"}}`}).Obj(),
	}, interceptor.Funcs{Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
		return apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, obj.GetName(), errors.New("changed"))
	}})
	for _, want := range []time.Duration{time.Second, 2 * time.Second} {
		res, err := f.reconcile(t, "east")
		if err != nil || res != (ctrl.Result{RequeueAfter: want}) {
			t.Fatalf("Reconcile = %+v, %v; want a requeue after %v and no error", res, err, want)
		}
	}
}

// TestReconcileStatusOfDeletedPool checks that a status write answered NotFound (the pool was deleted
// meanwhile) is no error and asks for no retry: the pool's deletion ends the matter.
func TestReconcileStatusOfDeletedPool(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "apps.openyurt.io", Resource: "nodepools"}, "p")
	f := newFixture(t, true, []client.Object{
		testutil.MakeNodePool("p").Hub(), testutil.MakeNode("a").Pool("p").Obj(),
	}, interceptor.Funcs{
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return notFound
		},
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return notFound
		},
	})
	res, err := f.reconcile(t, "p")
	if err != nil || res != (ctrl.Result{}) {
		t.Errorf("Reconcile = %+v, %v; want no error and no requeue", res, err)
	}
	if got := f.fake.Writes.Get("status-update NodePool") + f.fake.Writes.Get("status-patch NodePool"); got != 1 {
		t.Errorf("status writes = %d, want 1 (the pass must have tried to write the status)", got)
	}
}

// TestReconcileEventsAfterStatus checks that the events of a pass are recorded after its status write, so a
// reader of an event finds the status that goes with it.
func TestReconcileEventsAfterStatus(t *testing.T) {
	var (
		mu    sync.Mutex
		order []string
	)
	log := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	boom := apierrors.NewInternalError(errors.New("boom"))
	f := newFixture(t, true, []client.Object{
		testutil.MakeNodePool("p").Labels(map[string]string{"x": "y"}).Hub(),
		testutil.MakeNode("bad").Pool("p").Annotations(map[string]string{prevKey: "{oops"}).Obj(),
		testutil.MakeNode("failing").Pool("p").Obj(),
	}, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if obj.GetName() == "failing" {
				return boom
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			log("status")
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			log("status")
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	f.reconfigure(func(c *Config) { c.Recorder = orderRecorder{EventRecorder: c.Recorder, log: log} })

	if _, err := f.reconcile(t, "p"); err == nil {
		t.Fatal("Reconcile: no error, want the failed patch of node failing")
	}
	want := []string{"status", "event " + openyurtv1beta2.ReasonInvalidPreviousAttributes, "event " + openyurtv1beta2.ReasonNodeSyncFailed}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order of the status write and the events (-want +got):\n%s", diff)
	}
}

// TestReconcileNoEventsAfterFailedStatus checks that a pass whose status write fails emits none of its
// events: the retry decides again and emits what still holds.
func TestReconcileNoEventsAfterFailedStatus(t *testing.T) {
	boom := apierrors.NewInternalError(errors.New("boom"))
	statusFails := true
	f := newFixture(t, true, []client.Object{
		testutil.MakeNodePool("p").Labels(map[string]string{"x": "y"}).Hub(),
		testutil.MakeNode("bad").Pool("p").Annotations(map[string]string{prevKey: "{oops"}).Obj(),
		testutil.MakeNode("failing").Pool("p").Obj(),
	}, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if obj.GetName() == "failing" {
				return boom
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if statusFails {
				return boom
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	if _, err := f.reconcile(t, "p"); err == nil {
		t.Fatal("Reconcile: no error, want the failed status write")
	}
	if got := f.fake.Writes.Get("status-update NodePool"); got != 1 {
		t.Fatalf("status writes = %d, want 1 (the pass must have tried to write the status)", got)
	}
	if got := f.eventReasons(); len(got) != 0 {
		t.Errorf("events after a failed status write: %v; want none", got)
	}

	// The retry writes the status and reports the node that still fails. Node bad had its annotation
	// rewritten by the first pass: nothing is invalid any more.
	statusFails = false
	if _, err := f.reconcile(t, "p"); err == nil {
		t.Fatal("Reconcile: no error, want the failed patch of node failing")
	}
	if diff := cmp.Diff([]string{"Warning " + openyurtv1beta2.ReasonNodeSyncFailed}, f.eventReasons()); diff != "" {
		t.Errorf("events of the retry (-want +got):\n%s", diff)
	}
}

// orderRecorder logs the reason of each event before passing it on.
type orderRecorder struct {
	events.EventRecorder
	log func(string)
}

func (r orderRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.log("event " + reason)
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
