package persistentpodstate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/persistentpodstate/core"
	"github.com/drover-dev/drover/internal/testutil"
)

// ignoreTransitionTime leaves out the one condition field the tests cannot predict.
var ignoreTransitionTime = cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")

// A Ready pod on a node is recorded with its node name and the node's values of the tracked keys only (a
// key the node lacks is left out); a pod that is not Ready is not recorded. A second identical pass makes
// no API write at all.
func TestReconcileRecordsReadyPodsThenWritesNothing(t *testing.T) {
	f := newFixture(t, fixtureOptions{objs: []client.Object{
		testutil.MakePPS("web", testNS, "web").Required(zoneKey).Preferred(50, hostKey).Generation(3).Hub(),
		testutil.MakeStatefulSet("web", testNS, 3).UID(stsUID).Obj(),
		node("n1", map[string]string{zoneKey: "z1", hostKey: "n1", "other": "x"}),
		node("n2", map[string]string{zoneKey: "z2", "other": "y"}),
		stsPod(0, "n1").Obj(),
		stsPod(1, "n2").Obj(),
		stsPod(2, "n1").Ready(false).Obj(),
	}})
	f.mustReconcile(t, "web")
	want := kruisev1beta1.PersistentPodStateStatus{ObservedGeneration: 3, PodStates: map[string]kruisev1beta1.PodState{
		"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{zoneKey: "z1", hostKey: "n1"}},
		"web-1": {NodeName: "n2", NodeTopologyLabels: map[string]string{zoneKey: "z2"}},
	}}
	if diff := cmp.Diff(want, f.status(t, "web")); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"status-patch PersistentPodState": 1}, f.fc.Writes.Take()); diff != "" {
		t.Errorf("writes of the first pass (-want +got):\n%s", diff)
	}

	f.mustReconcile(t, "web")
	if got := f.fc.Writes.Take(); len(got) != 0 {
		t.Errorf("a second identical pass wrote %v, want no write", got)
	}
	if got := f.rec.take(); len(got) != 0 {
		t.Errorf("events %v, want none", got)
	}
}

// A target that is not found or is being deleted removes every record, whatever the retention policy.
func TestReconcileTargetGoneClearsRecords(t *testing.T) {
	tests := map[string]struct {
		retention kruisev1beta1.PersistentPodStateRetentionPolicyType
		target    client.Object
	}{
		"not found, WhenScaled":        {retention: kruisev1beta1.RetainWhenScaled},
		"not found, WhenDeleted":       {retention: kruisev1beta1.RetainWhenDeleted},
		"being deleted, WhenScaled":    {retention: kruisev1beta1.RetainWhenScaled, target: testutil.MakeStatefulSet("web", testNS, 2).UID(stsUID).Deleting().Obj()},
		"being deleted, WhenDeleted":   {retention: kruisev1beta1.RetainWhenDeleted, target: testutil.MakeStatefulSet("web", testNS, 2).UID(stsUID).Deleting().Obj()},
		"only another workload exists": {target: testutil.MakeStatefulSet("other", testNS, 2).UID(stsUID).Obj()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := []client.Object{
				testutil.MakePPS("web", testNS, "web").Required(zoneKey).Retention(tc.retention).Generation(2).ObservedGeneration(1).
					State("web-0", "n1", map[string]string{zoneKey: "z1"}, nil).Hub(),
				node("n1", map[string]string{zoneKey: "z1"}),
				stsPod(0, "n1").Obj(),
			}
			if tc.target != nil {
				objs = append(objs, tc.target)
			}
			f := newFixture(t, fixtureOptions{objs: objs})
			f.mustReconcile(t, "web")
			if diff := cmp.Diff(kruisev1beta1.PersistentPodStateStatus{ObservedGeneration: 2}, f.status(t, "web")); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// A target that cannot be read leaves the records as they are, sets TargetUnavailable with the reason,
// emits one Warning for the transition (not one per pass) and retries after the retry interval.
func TestReconcileTargetUnavailable(t *testing.T) {
	kv := makeUnstructured(kvGVK, "kv", "kv-uid", map[string]any{"replicas": int64(1)})
	tests := map[string]struct {
		fixture     fixtureOptions
		wantReason  string
		wantMessage string // a part of the condition's message
	}{
		"kind not whitelisted": {wantReason: ReasonKindNotAllowed, wantMessage: "whitelist"},
		"whitelisted kind not served": {wantReason: ReasonKindNotServed,
			fixture: fixtureOptions{whitelist: kvWhitelist(t, "")}},
		"watched kind not readable, the likely missing permission named": {wantReason: ReasonTargetNotReadable,
			wantMessage: kruisev1beta1.LabelAggregateToManager,
			fixture:     fixtureOptions{whitelist: kvWhitelist(t, ""), watcher: watcherWith(false, kvGVK)}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pps := testutil.MakePPS("kv", testNS, "kv").Target("demo.drover.dev/v1alpha1", "KVStore", "kv").Required(zoneKey).
				Generation(2).ObservedGeneration(1).State("kv-0", "n1", map[string]string{zoneKey: "z1"}, nil).Hub()
			tc.fixture.objs = []client.Object{pps, kv, node("n1", map[string]string{zoneKey: "z9"})}
			f := newFixture(t, tc.fixture)
			for pass := 1; pass <= 2; pass++ {
				res, err := f.reconcile(t, "kv")
				if err != nil || res != (ctrl.Result{RequeueAfter: retryInterval}) {
					t.Fatalf("pass %d: Reconcile = %+v, %v; want RequeueAfter %s and no error", pass, res, err, retryInterval)
				}
				got := f.status(t, "kv")
				if diff := cmp.Diff(pps.Status.PodStates, got.PodStates); diff != "" {
					t.Errorf("pass %d: podStates changed (-want +got):\n%s", pass, diff)
				}
				wantConds := []metav1.Condition{{Type: kruisev1beta1.ConditionTargetUnavailable, Status: metav1.ConditionTrue,
					Reason: tc.wantReason, ObservedGeneration: 2}}
				if diff := cmp.Diff(wantConds, got.Conditions, ignoreTransitionTime, cmpopts.IgnoreFields(metav1.Condition{}, "Message")); diff != "" {
					t.Errorf("pass %d: conditions (-want +got):\n%s", pass, diff)
				}
				if len(got.Conditions) == 1 && !strings.Contains(got.Conditions[0].Message, tc.wantMessage) {
					t.Errorf("pass %d: message %q does not mention %q", pass, got.Conditions[0].Message, tc.wantMessage)
				}
				wantEvents := []string{"Warning TargetUnavailable"}
				if pass == 2 {
					wantEvents = nil
				}
				if diff := cmp.Diff(wantEvents, f.rec.take()); diff != "" {
					t.Errorf("pass %d: events (-want +got):\n%s", pass, diff)
				}
				if n := f.fc.Writes.Get("total"); pass == 2 && n != 1 {
					t.Errorf("%d writes after two passes, want only the first pass's", n)
				}
			}
		})
	}
}

// Once the target can be read again, TargetUnavailable is removed and recording resumes.
func TestReconcileTargetAvailableAgain(t *testing.T) {
	f := newFixture(t, fixtureOptions{watcher: watcherWith(true, kvGVK), objs: []client.Object{
		testutil.MakePPS("kv", testNS, "kv").Target("demo.drover.dev/v1alpha1", "KVStore", "kv").Required(zoneKey).Hub(),
		makeUnstructured(kvGVK, "kv", "kv-uid", map[string]any{"replicas": int64(1)}),
		node("n1", map[string]string{zoneKey: "z1"}),
		testutil.MakePod("kv-0", testNS).ControlledBy("demo.drover.dev/v1alpha1", "KVStore", "kv", "kv-uid").Node("n1").Ready(true).Obj(),
	}})
	if res, err := f.reconcile(t, "kv"); err != nil || res.RequeueAfter != retryInterval {
		t.Fatalf("Reconcile = %+v, %v; want a retry after %s", res, err, retryInterval)
	}
	f.wl = kvWhitelist(t, "")
	f.rec.take()
	f.mustReconcile(t, "kv")
	want := kruisev1beta1.PersistentPodStateStatus{ObservedGeneration: 1, PodStates: map[string]kruisev1beta1.PodState{
		"kv-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{zoneKey: "z1"}}}}
	if diff := cmp.Diff(want, f.status(t, "kv")); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// Of two PPS for one target, the newer gets one DuplicateTarget Warning; both are reconciled.
func TestReconcileDuplicateTarget(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	f := newFixture(t, fixtureOptions{objs: []client.Object{
		testutil.MakePPS("old", testNS, "web").UID("old-uid").Created(t0).Required(zoneKey).Hub(),
		testutil.MakePPS("new", testNS, "web").UID("new-uid").Created(t0.Add(time.Hour)).Required(zoneKey).Hub(),
		testutil.MakeStatefulSet("web", testNS, 1).UID(stsUID).Obj(),
		node("n1", map[string]string{zoneKey: "z1"}),
		stsPod(0, "n1").Obj(),
	}})
	wantEvents := map[string][]string{"old": nil, "new": {"DuplicateTarget on *v1beta1.PersistentPodState new"}}
	for pass := 1; pass <= 2; pass++ {
		for _, name := range []string{"old", "new"} {
			f.mustReconcile(t, name)
			want := wantEvents[name]
			if pass == 2 {
				want = nil
			}
			if diff := cmp.Diff(want, f.rec.takeRegarding()); diff != "" {
				t.Errorf("pass %d of %s: events (-want +got):\n%s", pass, name, diff)
			}
			if got := f.status(t, name).PodStates["web-0"].NodeName; got != "n1" {
				t.Errorf("pass %d of %s: web-0 recorded on %q, want n1", pass, name, got)
			}
		}
	}
}

// A custom kind whose replica count cannot be read counts as 0 replicas (every record goes) and gets one
// ReplicasUnreadable Warning, not one per pass.
func TestReconcileReplicasUnreadable(t *testing.T) {
	f := newFixture(t, fixtureOptions{whitelist: kvWhitelist(t, "spec.size"), watcher: watcherWith(true, kvGVK), objs: []client.Object{
		testutil.MakePPS("kv", testNS, "kv").Target("demo.drover.dev/v1alpha1", "KVStore", "kv").Required(zoneKey).
			State("kv-0", "n1", map[string]string{zoneKey: "z1"}, nil).Hub(),
		makeUnstructured(kvGVK, "kv", "kv-uid", map[string]any{"replicas": int64(1)}),
	}})
	for pass := 1; pass <= 2; pass++ {
		f.mustReconcile(t, "kv")
		want := []string{"Warning ReplicasUnreadable"}
		if pass == 2 {
			want = nil
		}
		if diff := cmp.Diff(want, f.rec.take()); diff != "" {
			t.Errorf("pass %d: events (-want +got):\n%s", pass, diff)
		}
	}
	if got := f.status(t, "kv").PodStates; got != nil {
		t.Errorf("podStates %v, want nil with 0 replicas", got)
	}
}

// The annotation value rule, through the reconciler: the first recorded value of an identity is kept
// (with one PersistedAnnotationMismatch Warning) unless the same pod instance was seen changing it from the
// recorded value while it lived; such an observation is consumed once the record holds it.
func TestReconcileAnnotationPolicy(t *testing.T) {
	tests := map[string]struct {
		observed   string // the in-life observation of web-0's ip; "" for none
		wantIP     string
		wantEvents []string
		wantLeft   map[core.InLifeKey]string
	}{
		"a live change from the recorded value is followed": {observed: "10.0.0.2", wantIP: "10.0.0.2"},
		"a recreated pod with another value keeps the record": {wantIP: "10.0.0.1",
			wantEvents: []string{"Warning PersistedAnnotationMismatch"}},
		"an observation that changed again meanwhile is not applied": {observed: "10.0.0.3", wantIP: "10.0.0.1",
			wantEvents: []string{"Warning PersistedAnnotationMismatch"},
			wantLeft:   map[core.InLifeKey]string{{UID: "uid-web-0", Key: ipKey}: "10.0.0.3"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{objs: []client.Object{
				testutil.MakePPS("web", testNS, "web").Required(zoneKey).PersistAnnotations(ipKey).
					State("web-0", "n1", map[string]string{zoneKey: "z1"}, map[string]string{ipKey: "10.0.0.1"}).Hub(),
				testutil.MakeStatefulSet("web", testNS, 1).UID(stsUID).Obj(),
				node("n1", map[string]string{zoneKey: "z1"}),
				stsPod(0, "n1").Annotation(ipKey, "10.0.0.2").Obj(),
			}})
			if tc.observed != "" {
				f.r.inLife.observe("uid-web-0", ipKey, tc.observed)
			}
			for pass := range 2 {
				f.mustReconcile(t, "web")
				if got := f.status(t, "web").PodStates["web-0"].Annotations[ipKey]; got != tc.wantIP {
					t.Errorf("pass %d: recorded %s=%q, want %q", pass, ipKey, got, tc.wantIP)
				}
				want := tc.wantEvents
				if pass == 1 {
					want = nil
				}
				if diff := cmp.Diff(want, f.rec.take()); diff != "" {
					t.Errorf("pass %d: events (-want +got):\n%s", pass, diff)
				}
			}
			if diff := cmp.Diff(tc.wantLeft, f.r.inLife.forPods(map[types.UID]bool{"uid-web-0": true})); diff != "" {
				t.Errorf("in-life observations left (-want +got):\n%s", diff)
			}
		})
	}
}

// A PPS being deleted is left alone: no write.
func TestReconcilePPSBeingDeleted(t *testing.T) {
	pps := testutil.MakePPS("web", testNS, "web").Required(zoneKey).Generation(2).Hub()
	pps.DeletionTimestamp = ptr.To(metav1.Now())
	pps.Finalizers = []string{"drover.dev/test"}
	f := newFixture(t, fixtureOptions{objs: []client.Object{pps,
		testutil.MakeStatefulSet("web", testNS, 1).UID(stsUID).Obj(), node("n1", map[string]string{zoneKey: "z1"}), stsPod(0, "n1").Obj()}})
	f.mustReconcile(t, "web")
	if got := f.fc.Writes.Get("total"); got != 0 {
		t.Errorf("%d writes, want none", got)
	}
	f.mustReconcile(t, "missing") // a PPS that is gone is no error
}

// Each target kind's valid ordinals decide which records go on scale-down: a record outside them without an
// active pod is removed, one inside them is kept with its pod gone, and every Ready pod is recorded.
func TestReconcileTargetKinds(t *testing.T) {
	tests := map[string]struct {
		apiVersion, kind string
		target           client.Object
		whitelist        bool
		states           []string // recorded names, none with a pod
		want             []string
	}{
		"native StatefulSet starting at 1": {apiVersion: "apps/v1", kind: "StatefulSet",
			target: testutil.MakeStatefulSet("web", testNS, 2).Start(1).UID(stsUID).Obj(),
			states: []string{"web-0", "web-2", "web-3", "web"}, want: []string{"web", "web-1", "web-2"}},
		"TApp": {apiVersion: "apps.tkestack.io/v1", kind: "TApp",
			target: testutil.MakeTApp("web", testNS).UID(stsUID).Replicas(3).Obj(),
			states: []string{"web-2", "web-3"}, want: []string{"web-1", "web-2"}},
		"Advanced StatefulSet with a reserved ordinal": {apiVersion: "apps.kruise.io/v1beta1", kind: "StatefulSet",
			target: makeUnstructured(kruiseGVK, "web", stsUID, map[string]any{"replicas": int64(2), "reserveOrdinals": []any{int64(1)}}),
			states: []string{"web-0", "web-2", "web-3"}, want: []string{"web-0", "web-1", "web-2"}},
		"whitelisted custom kind": {apiVersion: "demo.drover.dev/v1alpha1", kind: "KVStore", whitelist: true,
			target: makeUnstructured(kvGVK, "web", stsUID, map[string]any{"replicas": int64(1)}),
			states: []string{"web-0", "web-3"}, want: []string{"web-0", "web-1"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pps := testutil.MakePPS("web", testNS, "web").Target(tc.apiVersion, tc.kind, "web").Required(zoneKey)
			for _, s := range tc.states {
				pps.State(s, "n1", map[string]string{zoneKey: "z1"}, nil)
			}
			opts := fixtureOptions{watcher: watcherWith(true, kruiseGVK, kvGVK), objs: []client.Object{pps.Hub(), tc.target,
				node("n1", map[string]string{zoneKey: "z1"}),
				// web-1 is Ready and recorded whatever the ordinals (an out-of-range pod still running keeps its record).
				testutil.MakePod("web-1", testNS).ControlledBy(tc.apiVersion, tc.kind, "web", stsUID).Node("n1").Ready(true).Obj(),
			}}
			if tc.whitelist {
				opts.whitelist = kvWhitelist(t, "")
			}
			f := newFixture(t, opts)
			f.mustReconcile(t, "web")
			var got []string
			for n := range f.status(t, "web").PodStates {
				got = append(got, n)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("recorded names (-want +got):\n%s", diff)
			}
		})
	}
}
