package persistentpodstate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
	"github.com/drover-dev/drover/internal/testutil"
)

// facts is what the tests check of a Workload; Valid lists the valid ordinals among 0–11.
type facts struct {
	APIVersion        string
	UID               types.UID
	Deleting          bool
	Replicas          int32
	ReplicasMalformed bool
	ReserveError      bool
	Valid             []int
}

func factsOf(w *Workload) *facts {
	if w == nil {
		return nil
	}
	f := &facts{APIVersion: w.APIVersion, UID: w.UID, Deleting: w.Deleting, Replicas: w.Replicas,
		ReplicasMalformed: w.ReplicasMalformed, ReserveError: w.ReserveError != nil}
	for o := range 12 {
		if w.Ordinals.Contains(o) {
			f.Valid = append(f.Valid, o)
		}
	}
	return f
}

// newFinder returns a finder over a fake client holding objs, with KVStore whitelisted (its replicas at
// replicasPath) and the given watcher.
func newFinder(t *testing.T, w *Watcher, replicasPath string, hooks interceptor.Funcs, objs ...client.Object) *Finder {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: objs, Indexes: ppsindex.Indexes(), Hooks: hooks})
	snap := kvWhitelist(t, replicasPath)
	return &Finder{Reader: fc.Client, Whitelist: func() *whitelist.Snapshot { return snap }, Watcher: w, SyncTimeout: 100 * time.Millisecond}
}

func TestFinderReadsEveryTargetKind(t *testing.T) {
	kruise := func(spec map[string]any) *unstructured.Unstructured {
		return makeUnstructured(kruiseGVK, "web", "u", spec)
	}
	kv := func(spec map[string]any) *unstructured.Unstructured { return makeUnstructured(kvGVK, "web", "u", spec) }
	const kruiseAV, kvAV = "apps.kruise.io/v1beta1", "demo.drover.dev/v1alpha1"
	tests := map[string]struct {
		obj          client.Object
		gk           schema.GroupKind
		replicasPath string
		want         *facts
	}{
		"native StatefulSet: unset replicas count as 1": {
			obj: testutil.MakeStatefulSet("web", testNS, 0).NoReplicas().UID("u").Obj(), gk: statefulSetGK,
			want: &facts{APIVersion: "apps/v1", UID: "u", Replicas: 1, Valid: []int{0}}},
		"native StatefulSet: ordinals begin at spec.ordinals.start": {
			obj: testutil.MakeStatefulSet("web", testNS, 3).Start(2).UID("u").Obj(), gk: statefulSetGK,
			want: &facts{APIVersion: "apps/v1", UID: "u", Replicas: 3, Valid: []int{2, 3, 4}}},
		"native StatefulSet being deleted": {
			obj: testutil.MakeStatefulSet("web", testNS, 2).UID("u").Deleting().Obj(), gk: statefulSetGK,
			want: &facts{APIVersion: "apps/v1", UID: "u", Deleting: true, Replicas: 2, Valid: []int{0, 1}}},
		"TApp: spec.replicas": {
			obj: testutil.MakeTApp("web", testNS).UID("u").Replicas(3).Obj(), gk: tappGK,
			want: &facts{APIVersion: "apps.tkestack.io/v1", UID: "u", Replicas: 3, Valid: []int{0, 1, 2}}},
		"TApp: unset replicas are 0": {
			obj: testutil.MakeTApp("web", testNS).UID("u").Obj(), gk: tappGK,
			want: &facts{APIVersion: "apps.tkestack.io/v1", UID: "u"}},
		"TApp being deleted": {
			obj: testutil.MakeTApp("web", testNS).UID("u").Replicas(1).Deleting().Obj(), gk: tappGK,
			want: &facts{APIVersion: "apps.tkestack.io/v1", UID: "u", Deleting: true, Replicas: 1, Valid: []int{0}}},
		"Advanced StatefulSet: missing replicas count as 1": {
			obj: kruise(map[string]any{}), gk: kruiseStatefulSetGK,
			want: &facts{APIVersion: kruiseAV, UID: "u", Replicas: 1, Valid: []int{0}}},
		"Advanced StatefulSet: replicas and ordinals.start": {
			obj: kruise(map[string]any{"replicas": int64(2), "ordinals": map[string]any{"start": int64(3)}}), gk: kruiseStatefulSetGK,
			want: &facts{APIVersion: kruiseAV, UID: "u", Replicas: 2, Valid: []int{3, 4}}},
		"Advanced StatefulSet: reserved ordinals are skipped": {
			obj: kruise(map[string]any{"replicas": int64(3), "reserveOrdinals": []any{int64(1), "3-4"}}), gk: kruiseStatefulSetGK,
			want: &facts{APIVersion: kruiseAV, UID: "u", Replicas: 3, Valid: []int{0, 2, 5}}},
		"Advanced StatefulSet: an invalid reserved item voids every reservation": {
			obj: kruise(map[string]any{"replicas": int64(3), "reserveOrdinals": []any{int64(1), "4-3"}}), gk: kruiseStatefulSetGK,
			want: &facts{APIVersion: kruiseAV, UID: "u", Replicas: 3, ReserveError: true, Valid: []int{0, 1, 2}}},
		"Advanced StatefulSet being deleted": {
			obj: deleting(kruise(map[string]any{"replicas": int64(1)})), gk: kruiseStatefulSetGK,
			want: &facts{APIVersion: kruiseAV, UID: "u", Deleting: true, Replicas: 1, Valid: []int{0}}},
		"custom kind: spec.replicas": {
			obj: kv(map[string]any{"replicas": int64(3)}), gk: kvGVK.GroupKind(),
			want: &facts{APIVersion: kvAV, UID: "u", Replicas: 3, Valid: []int{0, 1, 2}}},
		"custom kind: empty spec is 0, malformed": {
			obj: kv(map[string]any{}), gk: kvGVK.GroupKind(),
			want: &facts{APIVersion: kvAV, UID: "u", ReplicasMalformed: true}},
		"custom kind: no spec is 0, malformed": {
			obj: kv(nil), gk: kvGVK.GroupKind(),
			want: &facts{APIVersion: kvAV, UID: "u", ReplicasMalformed: true}},
		"custom kind: replicas of the wrong type are 0, malformed": {
			obj: kv(map[string]any{"replicas": "3"}), gk: kvGVK.GroupKind(),
			want: &facts{APIVersion: kvAV, UID: "u", ReplicasMalformed: true}},
		"custom kind: negative replicas are 0, malformed": {
			obj: kv(map[string]any{"replicas": int64(-2)}), gk: kvGVK.GroupKind(),
			want: &facts{APIVersion: kvAV, UID: "u", ReplicasMalformed: true}},
		"custom kind: the whitelist's replicasPath": {
			obj: kv(map[string]any{"size": int64(2), "replicas": int64(5)}), gk: kvGVK.GroupKind(), replicasPath: "spec.size",
			want: &facts{APIVersion: kvAV, UID: "u", Replicas: 2, Valid: []int{0, 1}}},
		"custom kind: nothing at the replicasPath is 0, malformed": {
			obj: kv(map[string]any{"replicas": int64(5)}), gk: kvGVK.GroupKind(), replicasPath: "spec.size",
			want: &facts{APIVersion: kvAV, UID: "u", ReplicasMalformed: true}},
		"custom kind being deleted": {
			obj: deleting(kv(map[string]any{"replicas": int64(1)})), gk: kvGVK.GroupKind(),
			want: &facts{APIVersion: kvAV, UID: "u", Deleting: true, Replicas: 1, Valid: []int{0}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFinder(t, watcherWith(true, kruiseGVK, kvGVK), tc.replicasPath, interceptor.Funcs{}, tc.obj)
			w, err := f.Find(context.Background(), testNS, tc.gk, "web", "")
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			if diff := cmp.Diff(tc.want, factsOf(w)); diff != "" {
				t.Errorf("workload (-want +got):\n%s", diff)
			}
			if w.Object.GetName() != "web" {
				t.Errorf("Object is %s, want the workload web", w.Object.GetName())
			}
		})
	}
}

// A replica count decoded from JSON may be a float: one with no fraction is used as is.
func TestUnstructuredReplicasNumbers(t *testing.T) {
	tests := map[string]struct {
		gk           schema.GroupKind
		spec         map[string]any
		replicasPath string
		want         *facts
	}{
		"custom kind: float with no fraction": {gk: kvGVK.GroupKind(), spec: map[string]any{"replicas": float64(3)},
			want: &facts{Replicas: 3, Valid: []int{0, 1, 2}}},
		"custom kind: float with a fraction is 0, malformed": {gk: kvGVK.GroupKind(), spec: map[string]any{"replicas": 2.5},
			want: &facts{ReplicasMalformed: true}},
		"custom kind: replicasPath through a non-object is 0, malformed": {gk: kvGVK.GroupKind(), replicasPath: "spec.size.value",
			spec: map[string]any{"size": int64(4)}, want: &facts{ReplicasMalformed: true}},
		"Advanced StatefulSet: float replicas and start": {gk: kruiseStatefulSetGK,
			spec: map[string]any{"replicas": float64(2), "ordinals": map[string]any{"start": float64(1)}},
			want: &facts{Replicas: 2, Valid: []int{1, 2}}},
		"Advanced StatefulSet: reserveOrdinals that is not a list is ignored": {gk: kruiseStatefulSetGK,
			spec: map[string]any{"replicas": int64(2), "reserveOrdinals": "1"},
			want: &facts{Replicas: 2, ReserveError: true, Valid: []int{0, 1}}},
		"Advanced StatefulSet: a numeric string in reserveOrdinals voids it": {gk: kruiseStatefulSetGK,
			spec: map[string]any{"replicas": int64(2), "reserveOrdinals": []any{"1"}},
			want: &facts{Replicas: 2, ReserveError: true, Valid: []int{0, 1}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": tc.spec}}
			if diff := cmp.Diff(tc.want, factsOf(unstructuredWorkload(u, tc.gk, whitelist.Entry{ReplicasPath: tc.replicasPath}.Replicas()))); diff != "" {
				t.Errorf("workload (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFinderUnavailableKinds(t *testing.T) {
	pending := func() *Watcher {
		w := watcherWith(true)
		w.kinds[kvGVK.GroupKind()] = &kindInfo{state: kindPending, gvk: kvGVK}
		return w
	}
	tests := map[string]struct {
		gk          schema.GroupKind
		watcher     *Watcher
		wantReason  string
		wantRequest bool // the finder asked the watcher for the kind
		minWait     time.Duration
	}{
		"kind neither built in nor whitelisted": {gk: schema.GroupKind{Group: "demo.drover.dev", Kind: "Other"},
			watcher: watcherWith(true), wantReason: ReasonKindNotAllowed},
		"whitelisted kind not watched yet": {gk: kvGVK.GroupKind(), watcher: watcherWith(true),
			wantReason: ReasonKindNotServed, wantRequest: true},
		"Advanced StatefulSet not watched yet": {gk: kruiseStatefulSetGK, watcher: watcherWith(true),
			wantReason: ReasonKindNotServed, wantRequest: true},
		"whitelisted kind whose CRD is not served": {gk: kvGVK.GroupKind(), watcher: pending(), wantReason: ReasonKindNotServed},
		"watched kind whose informer never syncs": {gk: kvGVK.GroupKind(), watcher: watcherWith(false, kvGVK),
			wantReason: ReasonTargetNotReadable, minWait: 100 * time.Millisecond},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFinder(t, tc.watcher, "", interceptor.Funcs{}, makeUnstructured(kvGVK, "web", "u", map[string]any{"replicas": int64(1)}))
			start := time.Now()
			w, err := f.Find(context.Background(), testNS, tc.gk, "web", "")
			elapsed := time.Since(start)
			var u *UnavailableError
			if !errors.As(err, &u) || w != nil {
				t.Fatalf("Find = %v, %v; want an *UnavailableError", w, err)
			}
			if u.Reason != tc.wantReason {
				t.Errorf("reason %q, want %q (%s)", u.Reason, tc.wantReason, u.Message)
			}
			if elapsed < tc.minWait || elapsed > tc.minWait+2*time.Second {
				t.Errorf("Find returned after %s, want about %s", elapsed, tc.minWait)
			}
			_, requested := tc.watcher.wanted[tc.gk]
			if requested != tc.wantRequest {
				t.Errorf("watch requested for %s: %v, want %v", tc.gk, requested, tc.wantRequest)
			}
		})
	}
}

func TestFinderLookup(t *testing.T) {
	cacheDown := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errors.New("cache unavailable")
	}}
	tests := map[string]struct {
		gk        schema.GroupKind
		name      string
		uid       types.UID
		hooks     interceptor.Funcs
		wantFound bool
		wantErr   bool
	}{
		"native StatefulSet without a UID": {gk: statefulSetGK, name: "web", wantFound: true},
		"native StatefulSet with its UID":  {gk: statefulSetGK, name: "web", uid: stsUID, wantFound: true},
		"native StatefulSet, UID mismatch": {gk: statefulSetGK, name: "web", uid: "other"},
		"custom kind, UID mismatch":        {gk: kvGVK.GroupKind(), name: "kv", uid: "other"},
		"custom kind with its UID":         {gk: kvGVK.GroupKind(), name: "kv", uid: "kv-uid", wantFound: true},
		"native StatefulSet not found":     {gk: statefulSetGK, name: "missing"},
		"custom kind not found":            {gk: kvGVK.GroupKind(), name: "missing"},
		"TApp not found":                   {gk: tappGK, name: "missing"},
		"cache error is returned to retry": {gk: statefulSetGK, name: "web", hooks: cacheDown, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFinder(t, watcherWith(true, kvGVK), "", tc.hooks,
				testutil.MakeStatefulSet("web", testNS, 1).UID(stsUID).Obj(),
				makeUnstructured(kvGVK, "kv", "kv-uid", map[string]any{"replicas": int64(1)}))
			w, err := f.Find(context.Background(), testNS, tc.gk, tc.name, tc.uid)
			var u *UnavailableError
			if gotErr := err != nil; gotErr != tc.wantErr || errors.As(err, &u) {
				t.Fatalf("Find error %v, want an error: %v (never an *UnavailableError)", err, tc.wantErr)
			}
			if found := w != nil; found != tc.wantFound {
				t.Errorf("found %v, want %v", found, tc.wantFound)
			}
		})
	}
}
