package nodepool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/controller/nodepool/membership"

	"github.com/drover-dev/drover/internal/index"

	"github.com/google/go-cmp/cmp"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/testutil"
)

// writes counts the API writes a fixture's client received.
type writes struct {
	mu           sync.Mutex
	nodePatches  int
	statusWrites int
	other        int
}

func (w *writes) add(field *int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	*field++
}

func (w *writes) snapshot() (nodePatches, statusWrites, other int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nodePatches, w.statusWrites, w.other
}

func (w *writes) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nodePatches, w.statusWrites, w.other = 0, 0, 0
}

// fixture is a Reconciler on a fake client built with the production indexes, counting writes.
type fixture struct {
	r      *Reconciler
	client client.Client
	writes *writes
	events *events.FakeRecorder
}

// newFixture builds a fixture. patch, if set, replaces the node Patch call (to inject errors or block);
// statusPatch likewise for status writes.
func newFixture(t *testing.T, sync bool, objs []client.Object, hooks interceptor.Funcs) *fixture {
	t.Helper()
	w := &writes{}
	b := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithStatusSubresource(&openyurtv1beta1.NodePool{})
	b = index.WithIndexes(b, membership.Indexes())
	b = b.WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Node); ok {
				w.add(&w.nodePatches)
			} else {
				w.add(&w.other)
			}
			if hooks.Patch != nil {
				return hooks.Patch(ctx, c, obj, p, opts...)
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			w.add(&w.statusWrites)
			if hooks.SubResourcePatch != nil {
				return hooks.SubResourcePatch(ctx, c, sub, obj, p, opts...)
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.add(&w.other)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.add(&w.other)
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.add(&w.other)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.add(&w.other) // status must be patched, not updated
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	cl := b.Build()
	rec := events.NewFakeRecorder(100)
	return &fixture{
		r:      &Reconciler{Client: cl, Recorder: rec, SyncNodeAttributes: sync},
		client: cl, writes: w, events: rec,
	}
}

func (f *fixture) reconcile(t *testing.T, pool string) (ctrl.Result, error) {
	t.Helper()
	return f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: pool}})
}

// eventReasons drains the recorder and returns "<type> <reason>" of each event.
func (f *fixture) eventReasons() []string {
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

func (f *fixture) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := f.client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatalf("getting node %s: %v", name, err)
	}
	return n
}

func (f *fixture) poolStatus(t *testing.T, name string) openyurtv1beta1.NodePoolStatus {
	t.Helper()
	p := &openyurtv1beta1.NodePool{}
	if err := f.client.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		t.Fatalf("getting pool %s: %v", name, err)
	}
	return p.Status
}

func patchCount(result string) float64 {
	return promtestutil.ToFloat64(nodePatches.WithLabelValues(result))
}

func TestReconcile(t *testing.T) {
	ns := corev1.TaintEffectNoSchedule
	east := func() *testutil.NodePoolWrapper {
		return testutil.MakeNodePool("east").Type(openyurtv1beta1.Edge).
			Labels(map[string]string{"region": "east"}).Taints(taint("edge", "true", ns))
	}
	eastPrev := `{"labels":{"region":"east"},"taints":[{"key":"edge","value":"true","effect":"NoSchedule"}]}`
	eastNode := func(name string, labels map[string]string) nodeAttrs {
		l := map[string]string{"region": "east"}
		for k, v := range labels {
			l[k] = v
		}
		return nodeAttrs{Labels: l, Annotations: map[string]string{prevKey: eastPrev}, Taints: []corev1.Taint{taint("edge", "true", ns)}}
	}
	member := func(name string) *testutil.NodeWrapper { return testutil.MakeNode(name).Pool("east") }

	tests := map[string]struct {
		objs             []client.Object
		pool             string
		noSync           bool
		wantNodes        map[string]nodeAttrs
		wantStatus       *openyurtv1beta1.NodePoolStatus
		wantEvents       []string
		wantNodePatches  int
		wantStatusWrites int
	}{
		"members get the pool attributes and the status counts them": {
			objs: []client.Object{east().Obj(),
				member("a").Ready(true).Obj(), member("b").Ready(false).Obj(), member("c").Obj(),
				testutil.MakeNode("other").Ready(true).Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{
				"a":     eastNode("a", map[string]string{openyurtv1beta1.LabelCurrentNodePool: "east"}),
				"b":     eastNode("b", map[string]string{openyurtv1beta1.LabelCurrentNodePool: "east"}),
				"other": {},
			},
			wantStatus:       &openyurtv1beta1.NodePoolStatus{ReadyNodeNum: 1, UnreadyNodeNum: 2, Nodes: []string{"a", "b", "c"}},
			wantNodePatches:  3,
			wantStatusWrites: 1,
		},
		"a node asking for the pool joins it and gets its attributes in one patch": {
			objs: []client.Object{east().Obj(), testutil.MakeNode("j").DesiredPool("east").Ready(true).Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{"j": eastNode("j", map[string]string{
				openyurtv1beta1.LabelCurrentNodePool: "east", openyurtv1beta1.LabelDesiredNodePool: "east"})},
			wantStatus:       &openyurtv1beta1.NodePoolStatus{ReadyNodeNum: 1, Nodes: []string{"j"}},
			wantNodePatches:  1,
			wantStatusWrites: 1,
		},
		"a membership label is never overwritten from the desired label": {
			objs: []client.Object{east().Obj(), testutil.MakeNode("m").Pool("west").DesiredPool("east").Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{"m": {Labels: map[string]string{
				openyurtv1beta1.LabelCurrentNodePool: "west", openyurtv1beta1.LabelDesiredNodePool: "east"}}},
			wantStatus: &openyurtv1beta1.NodePoolStatus{},
		},
		"a missing pool: NodePoolNotFound on the nodes asking for it, nothing written": {
			objs: []client.Object{testutil.MakeNode("j").DesiredPool("nowhere").Obj(),
				testutil.MakeNode("m").Pool("west").DesiredPool("nowhere").Obj()},
			pool: "nowhere",
			wantNodes: map[string]nodeAttrs{"j": {Labels: map[string]string{
				openyurtv1beta1.LabelDesiredNodePool: "nowhere"}}},
			wantEvents: []string{"Warning NodePoolNotFound"},
		},
		"nodes that left a pool are stripped under the value guard": {
			objs: []client.Object{east().Status(openyurtv1beta1.NodePoolStatus{}).Obj(),
				testutil.MakeNode("gone").Labels(map[string]string{"region": "east", "own": "x"}).
					Taints(taint("edge", "true", ns)).Annotations(map[string]string{prevKey: eastPrev}).Obj(),
				testutil.MakeNode("edited").Labels(map[string]string{"region": "changed"}).
					Taints(taint("edge", "true", ns)).Annotations(map[string]string{prevKey: eastPrev}).Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{
				"gone":   {Labels: map[string]string{"own": "x"}},
				"edited": {Labels: map[string]string{"region": "changed"}},
			},
			wantStatus:      &openyurtv1beta1.NodePoolStatus{},
			wantNodePatches: 2,
		},
		"a missing pool still strips nodes that left": {
			objs: []client.Object{testutil.MakeNode("gone").Labels(map[string]string{"region": "east"}).
				Annotations(map[string]string{prevKey: `{"labels":{"region":"east"}}`}).Obj()},
			pool:            "east",
			wantNodes:       map[string]nodeAttrs{"gone": {}},
			wantNodePatches: 1,
		},
		"a pool being deleted joins nobody and pushes nothing, but keeps its status": {
			objs: []client.Object{east().Deleting().Obj(), member("a").Ready(true).Obj(),
				testutil.MakeNode("j").DesiredPool("east").Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{
				"a": {Labels: map[string]string{openyurtv1beta1.LabelCurrentNodePool: "east"}},
				"j": {Labels: map[string]string{openyurtv1beta1.LabelDesiredNodePool: "east"}},
			},
			wantStatus:       &openyurtv1beta1.NodePoolStatus{ReadyNodeNum: 1, Nodes: []string{"a"}},
			wantStatusWrites: 1,
		},
		// NP-5 is not under the flag: what drover once wrote on a node that left is still removed.
		"without attribute sync: joins and leavers, members untouched": {
			objs: []client.Object{east().Obj(), member("a").Obj(), testutil.MakeNode("j").DesiredPool("east").Obj(),
				testutil.MakeNode("gone").Annotations(map[string]string{prevKey: eastPrev}).Obj()},
			pool:   "east",
			noSync: true,
			wantNodes: map[string]nodeAttrs{
				"a": {Labels: map[string]string{openyurtv1beta1.LabelCurrentNodePool: "east"}},
				"j": {Labels: map[string]string{
					openyurtv1beta1.LabelCurrentNodePool: "east", openyurtv1beta1.LabelDesiredNodePool: "east"}},
				"gone": {},
			},
			wantStatus:       &openyurtv1beta1.NodePoolStatus{UnreadyNodeNum: 2, Nodes: []string{"a", "j"}},
			wantNodePatches:  2,
			wantStatusWrites: 1,
		},
		"a hostNetwork pool labels its members": {
			objs:             []client.Object{testutil.MakeNodePool("hn").HostNetwork(true).Obj(), testutil.MakeNode("a").Pool("hn").Obj()},
			pool:             "hn",
			wantNodes:        map[string]nodeAttrs{"a": {Labels: map[string]string{openyurtv1beta1.LabelCurrentNodePool: "hn", openyurtv1beta1.LabelNodePoolHostNetwork: "true"}}},
			wantStatus:       &openyurtv1beta1.NodePoolStatus{UnreadyNodeNum: 1, Nodes: []string{"a"}},
			wantNodePatches:  1,
			wantStatusWrites: 1,
		},
		"an undecodable annotation is replaced, with a Warning": {
			objs: []client.Object{east().Obj(), member("a").Annotations(map[string]string{prevKey: "{oops"}).Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{
				"a": eastNode("a", map[string]string{openyurtv1beta1.LabelCurrentNodePool: "east"}),
			},
			wantStatus:       &openyurtv1beta1.NodePoolStatus{UnreadyNodeNum: 1, Nodes: []string{"a"}},
			wantEvents:       []string{"Warning InvalidPreviousAttributes"},
			wantNodePatches:  1,
			wantStatusWrites: 1,
		},
		"a converged pool makes no write": {
			objs: []client.Object{
				east().Status(openyurtv1beta1.NodePoolStatus{ReadyNodeNum: 1, Nodes: []string{"a"}}).Obj(),
				member("a").Ready(true).Labels(map[string]string{"region": "east"}).Taints(taint("edge", "true", ns)).
					Annotations(map[string]string{prevKey: eastPrev}).Obj(),
			},
			pool:       "east",
			wantStatus: &openyurtv1beta1.NodePoolStatus{ReadyNodeNum: 1, Nodes: []string{"a"}},
			wantNodes: map[string]nodeAttrs{
				"a": eastNode("a", map[string]string{openyurtv1beta1.LabelCurrentNodePool: "east"}),
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, !tc.noSync, tc.objs, interceptor.Funcs{})
			res, err := f.reconcile(t, tc.pool)
			if err != nil || res != (ctrl.Result{}) {
				t.Fatalf("Reconcile = %+v, %v; want a clean pass", res, err)
			}
			for n, want := range tc.wantNodes {
				if diff := cmp.Diff(want, attrsOf(f.node(t, n))); diff != "" {
					t.Errorf("node %s (-want +got):\n%s", n, diff)
				}
			}
			if tc.wantStatus != nil {
				if diff := cmp.Diff(*tc.wantStatus, f.poolStatus(t, tc.pool)); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantEvents, f.eventReasons()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			gotPatches, gotStatus, gotOther := f.writes.snapshot()
			if gotPatches != tc.wantNodePatches || gotStatus != tc.wantStatusWrites || gotOther != 0 {
				t.Errorf("writes: node patches %d, status writes %d, other %d; want %d, %d, 0",
					gotPatches, gotStatus, gotOther, tc.wantNodePatches, tc.wantStatusWrites)
			}

			// PF-3: a second identical pass makes zero writes.
			f.writes.reset()
			if _, err := f.reconcile(t, tc.pool); err != nil {
				t.Fatalf("second Reconcile: %v", err)
			}
			if p, s, o := f.writes.snapshot(); p+s+o != 0 {
				t.Errorf("second pass wrote: node patches %d, status writes %d, other %d; want none", p, s, o)
			}
		})
	}
}

// TestReconcileWriteFailures covers lost races (requeue, no error) and real errors (returned, NodeSyncFailed).
func TestReconcileWriteFailures(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "a", errors.New("changed"))
	boom := apierrors.NewInternalError(errors.New("boom"))
	failNode := func(name string, err error) interceptor.Funcs {
		return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if obj.GetName() == name {
				return err
			}
			return c.Patch(ctx, obj, p, opts...)
		}}
	}
	objs := func() []client.Object {
		return []client.Object{
			testutil.MakeNodePool("p").Labels(map[string]string{"x": "y"}).Obj(),
			testutil.MakeNode("a").Pool("p").Obj(), testutil.MakeNode("b").Pool("p").Obj(),
		}
	}
	tests := map[string]struct {
		hooks       interceptor.Funcs
		wantRequeue bool
		wantErr     bool
		wantEvents  []string
		wantMetrics map[string]float64 // deltas
		wantPatched []string           // nodes that got the pool label x
	}{
		"a node conflict requeues without an error": {
			hooks:       failNode("a", conflict),
			wantRequeue: true,
			wantMetrics: map[string]float64{patchSuccess: 1, patchConflict: 1, patchError: 0},
			wantPatched: []string{"b"},
		},
		"a vanished node requeues without an error": {
			hooks:       failNode("a", apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "a")),
			wantRequeue: true,
			wantMetrics: map[string]float64{patchSuccess: 1, patchConflict: 1, patchError: 0},
			wantPatched: []string{"b"},
		},
		"a failing node is returned and reported on the pool; the others proceed": {
			hooks:       failNode("a", boom),
			wantErr:     true,
			wantEvents:  []string{"Warning NodeSyncFailed"},
			wantMetrics: map[string]float64{patchSuccess: 1, patchConflict: 0, patchError: 1},
			wantPatched: []string{"b"},
		},
		"a status conflict requeues without an error": {
			hooks: interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return apierrors.NewConflict(schema.GroupResource{Resource: "nodepools"}, "p", errors.New("changed"))
			}},
			wantRequeue: true,
			wantMetrics: map[string]float64{patchSuccess: 2, patchConflict: 0, patchError: 0},
			wantPatched: []string{"a", "b"},
		},
		"a status error is returned": {
			hooks: interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return boom
			}},
			wantErr:     true,
			wantMetrics: map[string]float64{patchSuccess: 2, patchConflict: 0, patchError: 0},
			wantPatched: []string{"a", "b"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := map[string]float64{}
			for r := range tc.wantMetrics {
				before[r] = patchCount(r)
			}
			f := newFixture(t, true, objs(), tc.hooks)
			res, err := f.reconcile(t, "p")
			if (err != nil) != tc.wantErr {
				t.Errorf("Reconcile error = %v, want error %t", err, tc.wantErr)
			}
			if gotRequeue := res.RequeueAfter > 0; gotRequeue != tc.wantRequeue {
				t.Errorf("requeue = %t (%+v), want %t", gotRequeue, res, tc.wantRequeue)
			}
			if diff := cmp.Diff(tc.wantEvents, f.eventReasons()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			for r, delta := range tc.wantMetrics {
				if got := patchCount(r) - before[r]; got != delta {
					t.Errorf("node patches {result=%s} grew by %v, want %v", r, got, delta)
				}
			}
			var patched []string
			for _, n := range []string{"a", "b"} {
				if f.node(t, n).Labels["x"] == "y" {
					patched = append(patched, n)
				}
			}
			if diff := cmp.Diff(tc.wantPatched, patched); diff != "" {
				t.Errorf("patched nodes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReconcilePatchesInParallelBounded checks that a pool's nodes are patched concurrently, at most
// defaultNodeWriteConcurrency at a time. Every patch waits until that many are in flight (or no more can come), so
// a serial implementation never gets going and an unbounded one overshoots while the first wave runs.
func TestReconcilePatchesInParallelBounded(t *testing.T) {
	const total = 2*defaultNodeWriteConcurrency + 3
	objs := []client.Object{testutil.MakeNodePool("p").Labels(map[string]string{"x": "y"}).Obj()}
	for i := range total {
		objs = append(objs, testutil.MakeNode(fmt.Sprintf("n%02d", i)).Pool("p").Obj())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var (
		mu                            sync.Mutex
		cond                          = sync.NewCond(&mu)
		inflight, started, peak, wave int
		timedOut                      bool
	)
	go func() { // guard: a serial implementation would wait forever
		<-ctx.Done()
		mu.Lock()
		timedOut = ctx.Err() == context.DeadlineExceeded
		wave++
		cond.Broadcast()
		mu.Unlock()
	}()
	gate := interceptor.Funcs{Patch: func(pctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		mu.Lock()
		started++
		inflight++
		peak = max(peak, inflight)
		if inflight >= defaultNodeWriteConcurrency || started == total {
			wave++
			cond.Broadcast()
		} else {
			for w := wave; w == wave && !timedOut; {
				cond.Wait()
			}
		}
		mu.Unlock()
		err := c.Patch(pctx, obj, p, opts...)
		mu.Lock()
		inflight--
		mu.Unlock()
		return err
	}}

	f := newFixture(t, true, objs, gate)
	if _, err := f.reconcile(t, "p"); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if timedOut {
		t.Fatalf("patches never reached %d in flight: they are not run in parallel", defaultNodeWriteConcurrency)
	}
	if peak != defaultNodeWriteConcurrency {
		t.Errorf("peak concurrent patches = %d, want %d", peak, defaultNodeWriteConcurrency)
	}
	if p, _, _ := f.writes.snapshot(); p != total {
		t.Errorf("node patches = %d, want %d", p, total)
	}
}
