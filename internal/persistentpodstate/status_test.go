package persistentpodstate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/persistentpodstate/core"
	"github.com/drover-dev/drover/internal/testutil"
)

// patches captures the data of every status patch, and refuses those reject says to refuse.
type patches struct {
	mu     sync.Mutex
	data   []map[string]any
	reject func(data []byte) error
}

func (p *patches) hooks() interceptor.Funcs {
	return interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object,
		patch client.Patch, opts ...client.SubResourcePatchOption) error {
		raw, err := patch.Data(obj)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		p.mu.Lock()
		p.data = append(p.data, m)
		reject := p.reject
		p.mu.Unlock()
		if reject != nil {
			if err := reject(raw); err != nil {
				return err
			}
		}
		return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
	}}
}

func (p *patches) take() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.data
	p.data = nil
	return out
}

// The status write is one merge patch with a resourceVersion precondition, holding only what changed:
// removed entries and removed keys as null, new and changed entries, and no unchanged entry.
func TestStatusPatchHoldsOnlyChanges(t *testing.T) {
	p := &patches{}
	f := newFixture(t, fixtureOptions{hooks: p.hooks(), objs: []client.Object{
		testutil.MakePPS("web", testNS, "web").Required(zoneKey).ObservedGeneration(1).
			State("web-0", "n1", map[string]string{zoneKey: "z1"}, nil).
			State("web-1", "n1", map[string]string{zoneKey: "z1", "old-key": "v"}, nil).
			State("web-7", "n2", map[string]string{zoneKey: "z2"}, nil).Hub(),
		testutil.MakeStatefulSet("web", testNS, 3).UID(stsUID).Obj(),
		node("n1", map[string]string{zoneKey: "z1"}),
		node("n2", map[string]string{zoneKey: "z2"}),
		stsPod(0, "n1").Obj(), stsPod(1, "n1").Obj(), stsPod(2, "n2").Obj(),
	}})
	f.mustReconcile(t, "web")
	got := p.take()
	if len(got) != 1 {
		t.Fatalf("%d status patches, want 1", len(got))
	}
	if rv, _, _ := unstructuredString(got[0], "metadata", "resourceVersion"); rv == "" {
		t.Errorf("patch %v has no resourceVersion precondition", got[0])
	}
	wantStatus := map[string]any{"podStates": map[string]any{
		"web-1": map[string]any{"nodeTopologyLabels": map[string]any{"old-key": nil}},
		"web-2": map[string]any{"nodeName": "n2", "nodeTopologyLabels": map[string]any{zoneKey: "z2"}},
		"web-7": nil,
	}}
	if diff := cmp.Diff(wantStatus, got[0]["status"]); diff != "" {
		t.Errorf("patched status (-want +got):\n%s", diff)
	}
}

func unstructuredString(m map[string]any, path ...string) (string, bool, error) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return "", false, errors.New("not an object")
		}
		cur = mm[p]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// tooLargeFixture is a PPS whose new status (web-1 added) the API server refuses as too large: any status
// patch holding podStates is refused with refusal.
func tooLargeFixture(t *testing.T, refusal error) (*fixture, *patches, *kruisev1beta1.PersistentPodState) {
	t.Helper()
	p := &patches{reject: func(data []byte) error {
		if strings.Contains(string(data), "podStates") {
			return refusal
		}
		return nil
	}}
	pps := testutil.MakePPS("web", testNS, "web").Required(zoneKey).Generation(2).ObservedGeneration(2).
		State("web-0", "n1", map[string]string{zoneKey: "z1"}, nil).Hub()
	f := newFixture(t, fixtureOptions{hooks: p.hooks(), objs: []client.Object{pps,
		testutil.MakeStatefulSet("web", testNS, 2).UID(stsUID).Obj(),
		node("n1", map[string]string{zoneKey: "z1"}),
		stsPod(0, "n1").Obj(), stsPod(1, "n1").Obj(),
	}})
	return f, p, pps
}

// too413 is the API server's refusal of an object over its request size limit.
var too413 = apierrors.NewRequestEntityTooLargeError("limit is 3145728")

// A status the API server refuses as too large (413, or etcd's "request is too large") is replaced by a
// write of the StatusSizeLimitReached condition alone (reason WriteRejectedTooLarge, the records kept), and
// retried after TooLargeRetry without an error: never in a tight loop. A pass while the refusal lasts
// writes nothing but the refused patch.
func TestStatusWriteRejectedTooLarge(t *testing.T) {
	refusals := map[string]error{
		"413":                        too413,
		"etcd: request is too large": apierrors.NewInternalError(errors.New("etcdserver: request is too large")),
	}
	for name, refusal := range refusals {
		t.Run(name, func(t *testing.T) { testWriteRejectedTooLarge(t, refusal) })
	}
}

func testWriteRejectedTooLarge(t *testing.T, refusal error) {
	f, p, pps := tooLargeFixture(t, refusal)
	wantStatus := kruisev1beta1.PersistentPodStateStatus{ObservedGeneration: 2, PodStates: pps.Status.PodStates,
		Conditions: []metav1.Condition{{Type: kruisev1beta1.ConditionStatusSizeLimitReached, Status: metav1.ConditionTrue,
			Reason: ReasonWriteRejectedTooLarge, ObservedGeneration: 2}}}
	wantPatches := []int{2, 1} // the refused patch and the condition alone; then the refused patch only
	for pass := range 2 {
		res, err := f.reconcile(t, "web")
		if err != nil || res != (ctrl.Result{RequeueAfter: TooLargeRetry}) {
			t.Fatalf("pass %d: Reconcile = %+v, %v; want RequeueAfter %s and no error", pass, res, err, TooLargeRetry)
		}
		if diff := cmp.Diff(wantStatus, f.status(t, "web"), ignoreTransitionTime,
			cmpopts.IgnoreFields(metav1.Condition{}, "Message")); diff != "" {
			t.Errorf("pass %d: status (-want +got):\n%s", pass, diff)
		}
		got := p.take()
		if len(got) != wantPatches[pass] {
			t.Fatalf("pass %d: %d status patches, want %d", pass, len(got), wantPatches[pass])
		}
		if pass == 0 {
			if _, has := got[1]["status"].(map[string]any)["podStates"]; has {
				t.Errorf("the condition-only patch %v holds podStates", got[1])
			}
			if diff := cmp.Diff([]string{"Warning StatusSizeLimitReached"}, f.rec.take()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		}
	}
}

// The too-large Warning is emitted once per transition: a retry that is refused again while the condition
// already says so emits no second Warning.
func TestStatusTooLargeWarningOncePerTransition(t *testing.T) {
	f, _, _ := tooLargeFixture(t, too413)
	wantEvents := [][]string{{"Warning StatusSizeLimitReached"}, nil, nil}
	for pass := range wantEvents {
		if _, err := f.reconcile(t, "web"); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if diff := cmp.Diff(wantEvents[pass], f.rec.take()); diff != "" {
			t.Errorf("pass %d: events (-want +got):\n%s", pass, diff)
		}
	}
}

// With a small size limit, new entries are added in ascending ordinal order (web-10 after web-2) while the
// budget allows; the rest wait under StatusSizeLimitReached/SizeBudgetExceeded, with one Warning. When the
// workload scales down and every pod fits, the condition goes, with a Normal StatusSizeLimitCleared.
func TestStatusSizeGuard(t *testing.T) {
	sts := testutil.MakeStatefulSet("web", testNS, 11).UID(stsUID)
	f := newFixture(t, fixtureOptions{objs: []client.Object{
		testutil.MakePPS("web", testNS, "web").Required(zoneKey).Hub(),
		sts.Obj(),
		node("n1", map[string]string{zoneKey: "z1"}),
		stsPod(1, "n1").Obj(), stsPod(2, "n1").Obj(), stsPod(10, "n1").Obj(),
	}})
	entry := kruisev1beta1.PodState{NodeName: "n1", NodeTopologyLabels: map[string]string{zoneKey: "z1"}}
	two := map[string]kruisev1beta1.PodState{"web-1": entry, "web-2": entry}
	stored := &kruisev1beta1.PersistentPodState{}
	if err := f.fc.Inner.Get(context.Background(), types.NamespacedName{Namespace: testNS, Name: "web"}, stored); err != nil {
		t.Fatal(err)
	}
	f.reconfigure(func(c *Config) { c.SizeLimit = core.Estimate(stored, two) + 16 }) // room for two entries, not three

	wantCond := []metav1.Condition{{Type: kruisev1beta1.ConditionStatusSizeLimitReached, Status: metav1.ConditionTrue,
		Reason: ReasonSizeBudgetExceeded, ObservedGeneration: 1}}
	for pass := range 2 {
		f.mustReconcile(t, "web")
		st := f.status(t, "web")
		if diff := cmp.Diff(two, st.PodStates); diff != "" {
			t.Errorf("pass %d: podStates (-want +got):\n%s", pass, diff)
		}
		if diff := cmp.Diff(wantCond, st.Conditions, ignoreTransitionTime, cmpopts.IgnoreFields(metav1.Condition{}, "Message")); diff != "" {
			t.Errorf("pass %d: conditions (-want +got):\n%s", pass, diff)
		}
		if len(st.Conditions) == 1 && !strings.HasPrefix(st.Conditions[0].Message, "1 pods are not recorded") {
			t.Errorf("pass %d: message %q does not count the one pod left out", pass, st.Conditions[0].Message)
		}
		want := []string{"Warning StatusSizeLimitReached"}
		if pass == 1 {
			want = nil
		}
		if diff := cmp.Diff(want, f.rec.take()); diff != "" {
			t.Errorf("pass %d: events (-want +got):\n%s", pass, diff)
		}
	}

	// Scale down to 3: web-10 goes and every remaining pod is recorded.
	scaled := sts.Obj()
	if err := f.fc.Inner.Get(context.Background(), client.ObjectKeyFromObject(scaled), scaled); err != nil {
		t.Fatal(err)
	}
	scaled.Spec.Replicas = ptr.To[int32](3)
	if err := f.fc.Inner.Update(context.Background(), scaled); err != nil {
		t.Fatal(err)
	}
	if err := f.fc.Inner.Delete(context.Background(), stsPod(10, "n1").Obj()); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile(t, "web")
	want := kruisev1beta1.PersistentPodStateStatus{ObservedGeneration: 1, PodStates: two}
	if diff := cmp.Diff(want, f.status(t, "web")); diff != "" {
		t.Errorf("after the scale-down, status (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Normal StatusSizeLimitCleared"}, f.rec.take()); diff != "" {
		t.Errorf("after the scale-down, events (-want +got):\n%s", diff)
	}
}

// A conflict on the status write is a lost race: no error (no error log), a requeue after the conflict
// backoff, and no event (events follow a successful write only). Any other write error is returned.
func TestStatusWriteErrors(t *testing.T) {
	tests := map[string]struct {
		err       error
		wantErr   bool
		wantAfter time.Duration
	}{
		"conflict":       {err: apierrors.NewConflict(schema.GroupResource{Group: "apps.kruise.io", Resource: "persistentpodstates"}, "web", errors.New("changed")), wantAfter: kit.ConflictBaseDelay},
		"internal error": {err: apierrors.NewInternalError(errors.New("etcd down")), wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			p := &patches{reject: func([]byte) error { return tc.err }}
			f := newFixture(t, fixtureOptions{hooks: p.hooks(), objs: []client.Object{
				testutil.MakePPS("old", testNS, "web").UID("old-uid").Created(t0).Required(zoneKey).Hub(),
				testutil.MakePPS("web", testNS, "web").UID("new-uid").Created(t0.Add(time.Hour)).Required(zoneKey).Hub(),
				testutil.MakeStatefulSet("web", testNS, 1).UID(stsUID).Obj(),
				node("n1", map[string]string{zoneKey: "z1"}),
				stsPod(0, "n1").Obj(),
			}})
			res, err := f.reconcile(t, "web")
			if (err != nil) != tc.wantErr || res.RequeueAfter != tc.wantAfter {
				t.Errorf("Reconcile = %+v, %v; want RequeueAfter %s, an error: %v", res, err, tc.wantAfter, tc.wantErr)
			}
			if got := f.rec.take(); len(got) != 0 {
				t.Errorf("events %v after a failed write, want none", got)
			}
			if got := f.status(t, "web").PodStates; got != nil {
				t.Errorf("podStates %v, want the stored (none)", got)
			}
		})
	}
}

// A problem found in a pass whose status write lost a race is reported by the next pass that writes: the
// once-per-transition memory must not swallow an event that was never emitted.
func TestReconcileEventLostToConflictIsEmittedLater(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	conflicts := true
	p := &patches{reject: func([]byte) error {
		if conflicts {
			return apierrors.NewConflict(schema.GroupResource{Resource: "persistentpodstates"}, "web", errors.New("changed"))
		}
		return nil
	}}
	f := newFixture(t, fixtureOptions{hooks: p.hooks(), objs: []client.Object{
		testutil.MakePPS("old", testNS, "web").UID("old-uid").Created(t0).Required(zoneKey).Hub(),
		testutil.MakePPS("web", testNS, "web").UID("new-uid").Created(t0.Add(time.Hour)).Required(zoneKey).Hub(),
		testutil.MakeStatefulSet("web", testNS, 1).UID(stsUID).Obj(),
		node("n1", map[string]string{zoneKey: "z1"}),
		stsPod(0, "n1").Obj(),
	}})
	if _, err := f.reconcile(t, "web"); err != nil {
		t.Fatalf("conflicted pass: %v", err)
	}
	if got := f.rec.take(); len(got) != 0 {
		t.Fatalf("events %v after a conflicted write, want none", got)
	}
	conflicts = false
	f.mustReconcile(t, "web")
	if diff := cmp.Diff([]string{"Warning DuplicateTarget"}, f.rec.take()); diff != "" {
		t.Errorf("events of the pass that wrote (-want +got):\n%s", diff)
	}
}
