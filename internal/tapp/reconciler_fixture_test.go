package tapp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/tapp/core"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/testutil"
)

// fixture is a Reconciler on testutil's fake client with the production indexes. The reconciler's client
// counts writes (and runs test hooks); the test itself plays users and kubelets through the inner client.
type fixture struct {
	t      *testing.T
	inner  client.WithWatch
	r      *Reconciler
	writes *testutil.Writes
	events *events.FakeRecorder
	clock  *clocktesting.FakePassiveClock
}

func newFixture(t *testing.T, objs []client.Object, hooks interceptor.Funcs) *fixture {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{
		Objects: objs, Indexes: Indexes(), Hooks: hooks,
		StatusSubresource: []client.Object{&tkestackv1.TApp{}, &corev1.Pod{}},
	})
	f := &fixture{t: t, inner: fc.Inner, writes: fc.Writes, events: events.NewFakeRecorder(1000),
		clock: clocktesting.NewFakePassiveClock(t0)}
	f.r = NewReconciler(Config{
		Client: fc.Client, APIReader: fc.Inner, Recorder: f.events, DeletePodAfterAppFinish: true,
		PodWriteConcurrency: 4, Clock: f.clock,
	})
	return f
}

// reconcile runs one pass and advances the clock by a second.
func (f *fixture) reconcile() (ctrl.Result, error) {
	f.t.Helper()
	defer func() { f.clock.SetTime(f.clock.Now().Add(time.Second)) }()
	return f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: testNS, Name: testName}})
}

// pass runs one pass that must succeed and returns the writes it made.
func (f *fixture) pass() map[string]int {
	f.t.Helper()
	f.writes.Take()
	if _, err := f.reconcile(); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	return f.writes.Take()
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
			st := containerStatus(pod, c.Name)
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
		if g := core.GateCondition(pod); g != nil && g.Status == corev1.ConditionTrue {
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
	out := f.drainEventLines()
	for i, e := range out {
		fields := strings.Fields(e)
		out[i] = strings.Join(fields[:min(2, len(fields))], " ")
	}
	return out
}

// drainEventLines returns "<type> <reason> <note>" of each event emitted so far.
func (f *fixture) drainEventLines() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
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
