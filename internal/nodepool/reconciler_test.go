package nodepool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/nodepool/membership"

	"github.com/google/go-cmp/cmp"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/testutil"
)

// fixture is a Reconciler on the shared fake client: the production indexes, every write counted.
type fixture struct {
	r      *Reconciler
	cfg    Config
	fake   *testutil.FakeClient
	events *events.FakeRecorder
}

// newFixture builds a fixture; hooks replace single client calls (to inject errors or block).
func newFixture(t *testing.T, sync bool, objs []client.Object, hooks interceptor.Funcs) *fixture {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{
		Objects:           objs,
		Indexes:           membership.Indexes(),
		StatusSubresource: []client.Object{&openyurtv1beta2.NodePool{}},
		Hooks:             hooks,
	})
	rec := events.NewFakeRecorder(100)
	cfg := Config{Client: fc.Client, Recorder: rec, SyncNodeAttributes: sync}
	return &fixture{r: NewReconciler(cfg), cfg: cfg, fake: fc, events: rec}
}

// reconfigure rebuilds the reconciler with the fixture's configuration changed by edit; a test calls it
// before its first pass.
func (f *fixture) reconfigure(edit func(*Config)) {
	edit(&f.cfg)
	f.r = NewReconciler(f.cfg)
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
	if err := f.fake.Inner.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatalf("getting node %s: %v", name, err)
	}
	return n
}

func (f *fixture) poolStatus(t *testing.T, name string) openyurtv1beta2.NodePoolStatus {
	t.Helper()
	p := &openyurtv1beta2.NodePool{}
	if err := f.fake.Inner.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
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
		wantStatus       *openyurtv1beta2.NodePoolStatus
		wantEvents       []string
		wantNodePatches  int
		wantStatusWrites int
	}{
		"members get the pool attributes and the status counts them": {
			objs: []client.Object{east().Hub(),
				member("a").Ready(true).Obj(), member("b").Ready(false).Obj(), member("c").Obj(),
				testutil.MakeNode("other").Ready(true).Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{
				"a":     eastNode("a", map[string]string{openyurtv1beta2.LabelCurrentNodePool: "east"}),
				"b":     eastNode("b", map[string]string{openyurtv1beta2.LabelCurrentNodePool: "east"}),
				"other": {},
			},
			wantStatus:       &openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, UnreadyNodeNum: 2, Nodes: []string{"a", "b", "c"}},
			wantNodePatches:  3,
			wantStatusWrites: 1,
		},
		"a node asking for the pool joins it and gets its attributes in one patch": {
			objs: []client.Object{east().Hub(), testutil.MakeNode("j").DesiredPool("east").Ready(true).Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{"j": eastNode("j", map[string]string{
				openyurtv1beta2.LabelCurrentNodePool: "east", openyurtv1beta2.LabelDesiredNodePool: "east"})},
			wantStatus:       &openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, Nodes: []string{"j"}},
			wantNodePatches:  1,
			wantStatusWrites: 1,
		},
		"a membership label is never overwritten from the desired label": {
			objs: []client.Object{east().Hub(), testutil.MakeNode("m").Pool("west").DesiredPool("east").Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{"m": {Labels: map[string]string{
				openyurtv1beta2.LabelCurrentNodePool: "west", openyurtv1beta2.LabelDesiredNodePool: "east"}}},
			wantStatus: &openyurtv1beta2.NodePoolStatus{},
		},
		"a missing pool: NodePoolNotFound on the nodes asking for it, nothing written": {
			objs: []client.Object{testutil.MakeNode("j").DesiredPool("nowhere").Obj(),
				testutil.MakeNode("m").Pool("west").DesiredPool("nowhere").Obj()},
			pool: "nowhere",
			wantNodes: map[string]nodeAttrs{"j": {Labels: map[string]string{
				openyurtv1beta2.LabelDesiredNodePool: "nowhere"}}},
			wantEvents: []string{"Warning NodePoolNotFound"},
		},
		"nodes that left a pool are stripped under the value guard": {
			objs: []client.Object{east().Status(openyurtv1beta1.NodePoolStatus{}).Hub(),
				testutil.MakeNode("gone").Labels(map[string]string{"region": "east", "own": "x"}).
					Taints(taint("edge", "true", ns)).Annotations(map[string]string{prevKey: eastPrev}).Obj(),
				testutil.MakeNode("edited").Labels(map[string]string{"region": "changed"}).
					Taints(taint("edge", "true", ns)).Annotations(map[string]string{prevKey: eastPrev}).Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{
				"gone":   {Labels: map[string]string{"own": "x"}},
				"edited": {Labels: map[string]string{"region": "changed"}},
			},
			wantStatus:      &openyurtv1beta2.NodePoolStatus{},
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
			objs: []client.Object{east().Deleting().Hub(), member("a").Ready(true).Obj(),
				testutil.MakeNode("j").DesiredPool("east").Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{
				"a": {Labels: map[string]string{openyurtv1beta2.LabelCurrentNodePool: "east"}},
				"j": {Labels: map[string]string{openyurtv1beta2.LabelDesiredNodePool: "east"}},
			},
			wantStatus:       &openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, Nodes: []string{"a"}},
			wantStatusWrites: 1,
		},
		// The cleanup of nodes that left a pool is not under the flag: what drover once wrote on them is
		// still removed.
		"without attribute sync: joins and leavers, members untouched": {
			objs: []client.Object{east().Hub(), member("a").Obj(), testutil.MakeNode("j").DesiredPool("east").Obj(),
				testutil.MakeNode("gone").Annotations(map[string]string{prevKey: eastPrev}).Obj()},
			pool:   "east",
			noSync: true,
			wantNodes: map[string]nodeAttrs{
				"a": {Labels: map[string]string{openyurtv1beta2.LabelCurrentNodePool: "east"}},
				"j": {Labels: map[string]string{
					openyurtv1beta2.LabelCurrentNodePool: "east", openyurtv1beta2.LabelDesiredNodePool: "east"}},
				"gone": {},
			},
			wantStatus:       &openyurtv1beta2.NodePoolStatus{UnreadyNodeNum: 2, Nodes: []string{"a", "j"}},
			wantNodePatches:  2,
			wantStatusWrites: 1,
		},
		"a hostNetwork pool labels its members": {
			objs:             []client.Object{testutil.MakeNodePool("hn").HostNetwork(true).Hub(), testutil.MakeNode("a").Pool("hn").Obj()},
			pool:             "hn",
			wantNodes:        map[string]nodeAttrs{"a": {Labels: map[string]string{openyurtv1beta2.LabelCurrentNodePool: "hn", openyurtv1beta2.LabelNodePoolHostNetwork: "true"}}},
			wantStatus:       &openyurtv1beta2.NodePoolStatus{UnreadyNodeNum: 1, Nodes: []string{"a"}},
			wantNodePatches:  1,
			wantStatusWrites: 1,
		},
		"an undecodable annotation is replaced, with a Warning": {
			objs: []client.Object{east().Hub(), member("a").Annotations(map[string]string{prevKey: "{oops"}).Obj()},
			pool: "east",
			wantNodes: map[string]nodeAttrs{
				"a": eastNode("a", map[string]string{openyurtv1beta2.LabelCurrentNodePool: "east"}),
			},
			wantStatus:       &openyurtv1beta2.NodePoolStatus{UnreadyNodeNum: 1, Nodes: []string{"a"}},
			wantEvents:       []string{"Warning InvalidPreviousAttributes"},
			wantNodePatches:  1,
			wantStatusWrites: 1,
		},
		"a converged pool makes no write": {
			objs: []client.Object{
				east().Status(openyurtv1beta1.NodePoolStatus{ReadyNodeNum: 1, Nodes: []string{"a"}}).Hub(),
				member("a").Ready(true).Labels(map[string]string{"region": "east"}).Taints(taint("edge", "true", ns)).
					Annotations(map[string]string{prevKey: eastPrev}).Obj(),
			},
			pool:       "east",
			wantStatus: &openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, Nodes: []string{"a"}},
			wantNodes: map[string]nodeAttrs{
				"a": eastNode("a", map[string]string{openyurtv1beta2.LabelCurrentNodePool: "east"}),
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
			want := map[string]int{}
			if tc.wantNodePatches > 0 {
				want["patch Node"] = tc.wantNodePatches
			}
			if tc.wantStatusWrites > 0 {
				want["status-update NodePool"] = tc.wantStatusWrites
			}
			if diff := cmp.Diff(want, f.fake.Writes.Take()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}

			// A second pass over what the first one wrote makes no write (the first pass ran: its
			// result and writes were checked above).
			if res, err := f.reconcile(t, tc.pool); err != nil || res != (ctrl.Result{}) {
				t.Fatalf("second Reconcile = %+v, %v; want a clean pass", res, err)
			}
			if got := f.fake.Writes.Take(); len(got) != 0 {
				t.Errorf("second pass wrote %v; want nothing", got)
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
			testutil.MakeNodePool("p").Labels(map[string]string{"x": "y"}).Hub(),
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
			hooks: interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
				return apierrors.NewConflict(schema.GroupResource{Resource: "nodepools"}, "p", errors.New("changed"))
			}},
			wantRequeue: true,
			wantMetrics: map[string]float64{patchSuccess: 2, patchConflict: 0, patchError: 0},
			wantPatched: []string{"a", "b"},
		},
		"a status error is returned": {
			hooks: interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
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
// Reconciler.NodeWriteConcurrency at a time (defaultNodeWriteConcurrency when unset).
func TestReconcilePatchesInParallelBounded(t *testing.T) {
	tests := map[string]struct{ set, want int }{
		"the default cap":         {set: 0, want: defaultNodeWriteConcurrency},
		"a cap of 3":              {set: 3, want: 3},
		"a cap above the default": {set: 20, want: 20},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { testPatchesInParallelBounded(t, tc.set, tc.want) })
	}
}

// testPatchesInParallelBounded reconciles a pool of 2*limit+3 nodes with NodeWriteConcurrency set to set.
// Every patch waits until limit are in flight (or no more can come), so a serial implementation, or one
// bounded below limit, never gets going, and one bounded above limit overshoots while the first wave runs.
func testPatchesInParallelBounded(t *testing.T, set, limit int) {
	total := 2*limit + 3
	objs := []client.Object{testutil.MakeNodePool("p").Labels(map[string]string{"x": "y"}).Hub()}
	for i := range total {
		objs = append(objs, testutil.MakeNode(fmt.Sprintf("n%02d", i)).Pool("p").Obj())
	}
	g := newPatchGate(limit, total)
	defer g.stop()
	f := newFixture(t, true, objs, interceptor.Funcs{Patch: g.patch})
	f.reconfigure(func(c *Config) { c.NodeWriteConcurrency = set })
	if _, err := f.reconcile(t, "p"); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	peak, timedOut := g.result()
	if timedOut {
		t.Fatalf("patches never reached %d in flight: they are not run in parallel up to the cap", limit)
	}
	if peak != limit {
		t.Errorf("peak concurrent patches = %d, want %d", peak, limit)
	}
	if p := f.fake.Writes.Get("patch Node"); p != total {
		t.Errorf("node patches = %d, want %d", p, total)
	}
}

// patchGate holds each node patch until limit patches are in flight or every patch has started, and records
// the peak number in flight. After 10 s it lets everything through and reports a timeout.
type patchGate struct {
	mu                            sync.Mutex
	cond                          *sync.Cond
	limit, total                  int
	inflight, started, peak, wave int
	timedOut                      bool
	cancel                        context.CancelFunc
}

func newPatchGate(limit, total int) *patchGate {
	g := &patchGate{limit: limit, total: total}
	g.cond = sync.NewCond(&g.mu)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	g.cancel = cancel
	go func() { // guard: a serial implementation would wait forever
		<-ctx.Done()
		g.mu.Lock()
		g.timedOut = ctx.Err() == context.DeadlineExceeded
		g.wave++
		g.cond.Broadcast()
		g.mu.Unlock()
	}()
	return g
}

func (g *patchGate) stop() { g.cancel() }

func (g *patchGate) patch(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	g.mu.Lock()
	g.started++
	g.inflight++
	g.peak = max(g.peak, g.inflight)
	if g.inflight >= g.limit || g.started == g.total {
		g.wave++
		g.cond.Broadcast()
	} else {
		for w := g.wave; w == g.wave && !g.timedOut; {
			g.cond.Wait()
		}
	}
	g.mu.Unlock()
	err := c.Patch(ctx, obj, p, opts...)
	g.mu.Lock()
	g.inflight--
	g.mu.Unlock()
	return err
}

func (g *patchGate) result() (peak int, timedOut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak, g.timedOut
}
