package persistentpodstate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
	"github.com/drover-dev/drover/internal/testutil"
)

const (
	testNS        = "ns1"
	zoneKey       = "topology.kubernetes.io/zone"
	hostKey       = "kubernetes.io/hostname"
	ipKey         = "example.com/ip"
	stsUID        = types.UID("sts-uid")
	retryInterval = 30 * time.Second
)

// The unstructured kinds of the tests: the Kruise Advanced StatefulSet and a whitelisted custom kind.
var (
	kruiseGVK = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "StatefulSet"}
	kvGVK     = schema.GroupVersionKind{Group: "demo.drover.dev", Version: "v1alpha1", Kind: "KVStore"}
)

// kvWhitelist whitelists KVStore, its replica count at replicasPath ("" for spec.replicas).
func kvWhitelist(t *testing.T, replicasPath string) *whitelist.Snapshot {
	t.Helper()
	snap, err := whitelist.Parse(fmt.Sprintf(`{"workloads":[{"Group":%q,"Version":%q,"Kind":%q,"replicasPath":%q}]}`,
		kvGVK.Group, kvGVK.Version, kvGVK.Kind, replicasPath))
	if err != nil || !snap.Allowed(kvGVK.GroupKind()) {
		t.Fatalf("building the whitelist: %v", err)
	}
	return snap
}

// watcherWith returns a Watcher that reports the kinds of gvks as watched, their informers synced or not,
// as the running watcher does once it added their watches.
func watcherWith(synced bool, gvks ...schema.GroupVersionKind) *Watcher {
	w := &Watcher{}
	w.init()
	for _, gvk := range gvks {
		w.kinds[gvk.GroupKind()] = &kindInfo{state: kindWatched, gvk: gvk, synced: func() bool { return synced }}
	}
	return w
}

// makeUnstructured builds an unstructured workload in testNS; spec nil leaves spec out.
func makeUnstructured(gvk schema.GroupVersionKind, name string, uid types.UID, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(testNS)
	u.SetName(name)
	u.SetUID(uid)
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

// deleting marks an unstructured object as being deleted (with a finalizer, as the fake client requires).
func deleting(u *unstructured.Unstructured) *unstructured.Unstructured {
	now := metav1.Now()
	u.SetDeletionTimestamp(&now)
	u.SetFinalizers([]string{"drover.dev/test"})
	return u
}

// recorder is an events.FakeRecorder that also notes the object each event regards.
type recorder struct {
	*events.FakeRecorder
	mu        sync.Mutex
	regarding []string
}

func newRecorder() *recorder { return &recorder{FakeRecorder: events.NewFakeRecorder(100)} }

func (r *recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	name := ""
	if m, ok := regarding.(metav1.Object); ok {
		name = m.GetName()
	}
	r.mu.Lock()
	r.regarding = append(r.regarding, fmt.Sprintf("%s on %T %s", reason, regarding, name))
	r.mu.Unlock()
	r.FakeRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// take drains the events emitted so far and returns "<type> <reason>" of each.
func (r *recorder) take() []string {
	r.mu.Lock()
	r.regarding = nil
	r.mu.Unlock()
	var out []string
	for {
		select {
		case e := <-r.Events:
			f := strings.Fields(e)
			out = append(out, strings.Join(f[:min(2, len(f))], " "))
		default:
			return out
		}
	}
}

// takeRegarding drains the events emitted so far and returns "<reason> on <type> <name>" of each.
func (r *recorder) takeRegarding() []string {
	r.mu.Lock()
	out := r.regarding
	r.mu.Unlock()
	r.take()
	return out
}

// fixture is a Reconciler over the shared fake client with the production indexes.
type fixture struct {
	fc  *testutil.FakeClient
	r   *Reconciler
	cfg Config
	rec *recorder
	wl  *whitelist.Snapshot // the whitelist the reconciler and its finder read; a test may replace it
}

type fixtureOptions struct {
	objs      []client.Object
	hooks     interceptor.Funcs
	whitelist *whitelist.Snapshot
	watcher   *Watcher
	sizeLimit int
}

func newFixture(t *testing.T, o fixtureOptions) *fixture {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: o.objs, Indexes: ppsindex.Indexes(),
		StatusSubresource: []client.Object{&kruisev1beta1.PersistentPodState{}}, Hooks: o.hooks})
	f := &fixture{fc: fc, rec: newRecorder(), wl: o.whitelist}
	if f.wl == nil {
		f.wl = whitelist.Empty()
	}
	if o.watcher == nil {
		o.watcher = watcherWith(true)
	}
	if o.sizeLimit == 0 {
		o.sizeLimit = 1_400_000
	}
	snap := func() *whitelist.Snapshot { return f.wl }
	f.cfg = Config{Client: fc.Client,
		Finder:    &Finder{Reader: fc.Client, Whitelist: snap, Watcher: o.watcher, SyncTimeout: 100 * time.Millisecond},
		Whitelist: snap, Recorder: f.rec, SizeLimit: o.sizeLimit, RetryInterval: retryInterval}
	f.r = NewReconciler(f.cfg)
	return f
}

// reconfigure rebuilds the reconciler with the fixture's configuration changed by edit; a test calls it
// before its first pass.
func (f *fixture) reconfigure(edit func(*Config)) {
	edit(&f.cfg)
	f.r = NewReconciler(f.cfg)
}

func (f *fixture) reconcile(t *testing.T, name string) (ctrl.Result, error) {
	t.Helper()
	return f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: testNS, Name: name}})
}

// mustReconcile runs a pass that must succeed with no requeue.
func (f *fixture) mustReconcile(t *testing.T, name string) {
	t.Helper()
	res, err := f.reconcile(t, name)
	if err != nil || res != (ctrl.Result{}) {
		t.Fatalf("Reconcile(%s) = %+v, %v; want no requeue and no error", name, res, err)
	}
}

// status returns the stored status of a PPS.
func (f *fixture) status(t *testing.T, name string) kruisev1beta1.PersistentPodStateStatus {
	t.Helper()
	pps := &kruisev1beta1.PersistentPodState{}
	if err := f.fc.Inner.Get(context.Background(), types.NamespacedName{Namespace: testNS, Name: name}, pps); err != nil {
		t.Fatalf("getting PPS %s: %v", name, err)
	}
	return pps.Status
}

// node builds a node with labels.
func node(name string, labels map[string]string) *corev1.Node {
	return testutil.MakeNode(name).Labels(labels).Obj()
}

// stsPod builds pod web-<ordinal> of the native StatefulSet web, Ready on nodeName.
func stsPod(ordinal int, nodeName string) *testutil.PodWrapper {
	name := fmt.Sprintf("web-%d", ordinal)
	return testutil.MakePod(name, testNS).UID(types.UID("uid-"+name)).
		ControlledBy("apps/v1", "StatefulSet", "web", stsUID).Node(nodeName).Ready(true)
}

// fakeQueue records what an event handler adds; handlers use no other queue method.
type fakeQueue[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	added []T
}

func (q *fakeQueue[T]) Add(item T) { q.added = append(q.added, item) }

// AddAfter records item as added: the handlers' batching delay does not change what they ask for.
func (q *fakeQueue[T]) AddAfter(item T, _ time.Duration) { q.added = append(q.added, item) }
