package tapp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/index"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/testutil"
)

// writeLog counts the API writes the reconciler made, by "<verb> <kind>" (verb: create, patch, delete,
// status for status-subresource patches).
type writeLog struct {
	mu     sync.Mutex
	counts map[string]int
}

func (w *writeLog) add(verb string, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	kind := "?"
	if gvk, err := apiutil.GVKForObject(obj, scheme.New()); err == nil {
		kind = gvk.Kind
	}
	w.counts[verb+" "+kind]++
}

// take returns the counts since the last take and resets them.
func (w *writeLog) take() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.counts
	w.counts = map[string]int{}
	return out
}

// uidSeq makes the UIDs the fake API server assigns unique.
var uidSeq atomic.Int64

// fixture is a Reconciler on a fake client built with the production indexes. The reconciler's client
// counts writes (and runs test hooks); the test itself plays users and kubelets through the inner client.
type fixture struct {
	t      *testing.T
	inner  client.WithWatch
	r      *Reconciler
	writes *writeLog
	events *events.FakeRecorder
	now    time.Time
}

func newFixture(t *testing.T, objs []client.Object, hooks interceptor.Funcs) *fixture {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithStatusSubresource(&tkestackv1.TApp{}, &corev1.Pod{})
	inner := index.WithIndexes(b, Indexes()).Build()
	f := &fixture{t: t, inner: inner, writes: &writeLog{counts: map[string]int{}}, events: events.NewFakeRecorder(1000), now: t0}
	counted := interceptor.NewClient(inner, countingFuncs(f.writes, hooks))
	f.r = NewReconciler(Config{
		Client: counted, APIReader: inner, Recorder: f.events, DeletePodAfterAppFinish: true,
		PodWriteConcurrency: 4, Now: func() time.Time { return f.now },
	})
	return f
}

// countingFuncs counts every write, then delegates to the hook or the client.
func countingFuncs(w *writeLog, hooks interceptor.Funcs) interceptor.Funcs {
	return interceptor.Funcs{
		Get:  hooks.Get,
		List: hooks.List,
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.add("create", obj)
			if obj.GetUID() == "" { // as the API server does (the fake client does not)
				obj.SetUID(types.UID(fmt.Sprintf("uid-%s-%d", obj.GetName(), uidSeq.Add(1))))
			}
			if hooks.Create != nil {
				return hooks.Create(ctx, c, obj, opts...)
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.add("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			w.add("patch", obj)
			if hooks.Patch != nil {
				return hooks.Patch(ctx, c, obj, p, opts...)
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.add("delete", obj)
			if hooks.Delete != nil {
				return hooks.Delete(ctx, c, obj, opts...)
			}
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			w.add(sub, obj)
			if hooks.SubResourcePatch != nil {
				return hooks.SubResourcePatch(ctx, c, sub, obj, p, opts...)
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.add(sub+"-update", obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
}

// reconcile runs one pass and advances the clock by a second.
func (f *fixture) reconcile() (ctrl.Result, error) {
	f.t.Helper()
	defer func() { f.now = f.now.Add(time.Second) }()
	return f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: testNS, Name: testName}})
}

// pass runs one pass that must succeed and returns the writes it made.
func (f *fixture) pass() map[string]int {
	f.t.Helper()
	f.writes.take()
	if _, err := f.reconcile(); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	return f.writes.take()
}

// settle runs passes, the kubelet acting after each, until a pass writes nothing (at most n passes).
func (f *fixture) settle(n int) {
	f.t.Helper()
	for range n {
		if w := f.pass(); len(w) == 0 {
			f.drainEvents()
			return
		}
		f.kubelet()
	}
	f.t.Fatalf("no quiet pass after %d passes", n)
}

func (f *fixture) app() *tkestackv1.TApp {
	f.t.Helper()
	app := &tkestackv1.TApp{}
	if err := f.inner.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: testName}, app); err != nil {
		f.t.Fatalf("getting the TApp: %v", err)
	}
	return app
}

func (f *fixture) updateApp(mutate func(*tkestackv1.TApp)) {
	f.t.Helper()
	app := f.app()
	mutate(app)
	app.Generation++
	if err := f.inner.Update(context.Background(), app); err != nil {
		f.t.Fatalf("updating the TApp: %v", err)
	}
}

// pods returns the pods of the namespace by name.
func (f *fixture) pods() map[string]*corev1.Pod {
	f.t.Helper()
	list := &corev1.PodList{}
	if err := f.inner.List(context.Background(), list, client.InNamespace(testNS)); err != nil {
		f.t.Fatalf("listing pods: %v", err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func (f *fixture) podNames() []string {
	var names []string
	for name := range f.pods() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// kubelet plays every node: pods run, report their spec images (a changed image gets a new imageID and
// restartCount+1), and Ready follows the gate, as a kubelet computes readiness from readiness gates.
func (f *fixture) kubelet() {
	f.t.Helper()
	for _, pod := range f.pods() {
		if pod.DeletionTimestamp != nil {
			continue
		}
		pod.Status.Phase = corev1.PodRunning
		for _, c := range pod.Spec.Containers {
			st := containerStatus(pod, c.Name, false)
			if st == nil {
				pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
					Name: c.Name, Image: c.Image, ImageID: "id-" + c.Image, ContainerID: "cid-0", Ready: true})
				continue
			}
			if st.Image != c.Image {
				st.Image, st.ImageID = c.Image, "id-"+c.Image
				st.RestartCount++
				st.ContainerID = fmt.Sprintf("cid-%d", st.RestartCount)
			}
		}
		ready := corev1.ConditionFalse
		if g := GateCondition(pod); g != nil && g.Status == corev1.ConditionTrue {
			ready = corev1.ConditionTrue
		}
		setCond(pod, corev1.PodReady, ready)
		if err := f.inner.Status().Update(context.Background(), pod); err != nil {
			f.t.Fatalf("kubelet updating pod %s: %v", pod.Name, err)
		}
	}
}

// drainEvents returns "<type> <reason>" of each event emitted so far.
func (f *fixture) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			fields := strings.Fields(e)
			out = append(out, strings.Join(fields[:min(2, len(fields))], " "))
		default:
			return out
		}
	}
}

// condition returns "<status>/<reason>" of a TApp condition, checking its observedGeneration.
func (f *fixture) condition(typ string) string {
	f.t.Helper()
	app := f.app()
	c := apimeta.FindStatusCondition(app.Status.Conditions, typ)
	if c == nil {
		return ""
	}
	if c.ObservedGeneration != app.Generation {
		f.t.Errorf("condition %s has observedGeneration %d, want %d", typ, c.ObservedGeneration, app.Generation)
	}
	return string(c.Status) + "/" + c.Reason
}

// webApp starts the standard TApp of these tests: web in ns, selector app=web, one nginx container.
func webApp(replicas int32) *testutil.TAppWrapper {
	return testutil.MakeTApp(testName, testNS).UID(testUID).Generation(1).Replicas(replicas).Template(tplWith(oldImage))
}

// countOf returns how many times an event "<type> <reason>" occurs.
func countOf(events []string, e string) int {
	n := 0
	for _, x := range events {
		if x == e {
			n++
		}
	}
	return n
}
