package persistentpodstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
	"github.com/drover-dev/drover/internal/testutil"
)

const (
	annAuto      = kruisev1beta1.AnnotationAutoGeneratePersistentPodState
	annRequired  = kruisev1beta1.AnnotationRequiredPersistentTopology
	annPreferred = kruisev1beta1.AnnotationPreferredPersistentTopology
	annPersist   = kruisev1beta1.AnnotationPersistentPodAnnotations
	annRestore   = kruisev1beta1.AnnotationRestorePersistentPodAnnotations
)

var stsKey = WorkloadKey{Group: "apps", Kind: "StatefulSet", Namespace: testNS, Name: "web"}

// genFixture is a Generator over the shared fake client; KVStore is whitelisted and watched.
type genFixture struct {
	fc     *testutil.FakeClient
	g      *Generator
	finder *Finder
	rec    *recorder
}

func newGenFixture(t *testing.T, objs ...client.Object) *genFixture {
	t.Helper()
	return newGenFixtureWithHooks(t, interceptor.Funcs{}, objs...)
}

func newGenFixtureWithHooks(t *testing.T, hooks interceptor.Funcs, objs ...client.Object) *genFixture {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: objs, Indexes: ppsindex.Indexes(),
		StatusSubresource: []client.Object{&kruisev1beta1.PersistentPodState{}}, Hooks: hooks})
	snap := kvWhitelist(t, "")
	wl := func() *whitelist.Snapshot { return snap }
	rec := newRecorder()
	finder := &Finder{Reader: fc.Client, Whitelist: wl, Watcher: watcherWith(true, kvGVK), SyncTimeout: 100 * time.Millisecond}
	g := NewGenerator(GeneratorConfig{Client: fc.Client, Finder: finder, Whitelist: wl, Recorder: rec})
	return &genFixture{fc: fc, rec: rec, g: g, finder: finder}
}

func (f *genFixture) reconcile(t *testing.T, key WorkloadKey) {
	t.Helper()
	if res, err := f.g.Reconcile(context.Background(), key); err != nil || res != (ctrl.Result{}) {
		t.Fatalf("Reconcile(%v) = %+v, %v; want no requeue and no error", key, res, err)
	}
}

// pps returns the stored PPS name, or nil when there is none.
func (f *genFixture) pps(t *testing.T, name string) *kruisev1beta1.PersistentPodState {
	t.Helper()
	pps := &kruisev1beta1.PersistentPodState{}
	err := f.fc.Inner.Get(context.Background(), types.NamespacedName{Namespace: testNS, Name: name}, pps)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return pps
}

// generated is the part of a PPS the generator writes.
type generated struct {
	Owners      []metav1.OwnerReference
	Annotations map[string]string
	Spec        kruisev1beta1.PersistentPodStateSpec
}

func generatedOf(p *kruisev1beta1.PersistentPodState) *generated {
	if p == nil {
		return nil
	}
	return &generated{Owners: p.OwnerReferences, Annotations: p.Annotations, Spec: p.Spec}
}

// annotatedSTS is the StatefulSet web with the given annotations.
func annotatedSTS(ann map[string]string) *testutil.StatefulSetWrapper {
	w := testutil.MakeStatefulSet("web", testNS, 2).UID(stsUID)
	for k, v := range ann {
		w.Annotation(k, v)
	}
	return w
}

var fullAnnotations = map[string]string{annAuto: "true", annRequired: " " + zoneKey + " , ," + zoneKey,
	annPreferred: hostKey, annPersist: ipKey, annRestore: "true"}

// The generated PPS is named like the workload, owned by it through a controller reference without
// blockOwnerDeletion, targets it, and carries the annotations' keys (trimmed, deduplicated), a preferred
// term of weight 100 and the restore annotation. A second pass writes nothing.
func TestGeneratorCreates(t *testing.T) {
	wantSpec := func(apiVersion, kind, name string) kruisev1beta1.PersistentPodStateSpec {
		return kruisev1beta1.PersistentPodStateSpec{
			TargetRef:                  kruisev1beta1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name},
			RequiredPersistentTopology: &kruisev1beta1.NodeTopologyTerm{Keys: []string{zoneKey}},
			PreferredPersistentTopology: []kruisev1beta1.PreferredTopologyTerm{{Weight: 100,
				Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{hostKey}}}},
			PersistentPodAnnotations: []kruisev1beta1.PersistentPodAnnotation{{Key: ipKey}},
		}
	}
	kv := makeUnstructured(kvGVK, "kv", "kv-uid", map[string]any{"replicas": int64(1)})
	kv.SetAnnotations(fullAnnotations)
	tests := map[string]struct {
		workload   client.Object
		key        WorkloadKey
		want       *generated
		wantEvents []string
	}{
		"native StatefulSet": {workload: annotatedSTS(fullAnnotations).Obj(), key: stsKey,
			want: &generated{
				Owners:      []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: stsUID, Controller: ptr.To(true)}},
				Annotations: map[string]string{annRestore: "true"}, Spec: wantSpec("apps/v1", "StatefulSet", "web")},
			wantEvents: []string{"PersistentPodStateCreated on *v1.StatefulSet web"}},
		"whitelisted custom kind": {workload: kv,
			key: WorkloadKey{Group: kvGVK.Group, Kind: kvGVK.Kind, Namespace: testNS, Name: "kv"},
			want: &generated{
				Owners:      []metav1.OwnerReference{{APIVersion: "demo.drover.dev/v1alpha1", Kind: "KVStore", Name: "kv", UID: "kv-uid", Controller: ptr.To(true)}},
				Annotations: map[string]string{annRestore: "true"}, Spec: wantSpec("demo.drover.dev/v1alpha1", "KVStore", "kv")},
			wantEvents: []string{"PersistentPodStateCreated on *unstructured.Unstructured kv"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newGenFixture(t, tc.workload)
			f.reconcile(t, tc.key)
			if diff := cmp.Diff(tc.want, generatedOf(f.pps(t, tc.key.Name))); diff != "" {
				t.Errorf("generated PPS (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]int{"create PersistentPodState": 1}, f.fc.Writes.Take()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, f.rec.takeRegarding()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			f.reconcile(t, tc.key)
			if got := f.fc.Writes.Take(); len(got) != 0 {
				t.Errorf("the second pass wrote %v, want nothing", got)
			}
			if got := f.rec.take(); len(got) != 0 {
				t.Errorf("the second pass emitted %v, want nothing", got)
			}
		})
	}
}

// While auto-generation stays on, a generated PPS that a user deleted is created again.
func TestGeneratorRecreatesDeletedPPS(t *testing.T) {
	f := newGenFixture(t, annotatedSTS(fullAnnotations).Obj())
	f.reconcile(t, stsKey)
	if err := f.fc.Inner.Delete(context.Background(), f.pps(t, "web")); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, stsKey)
	if got := f.pps(t, "web"); got == nil || !ownedBy(got, stsUID) {
		t.Errorf("after a deletion the PPS is %v, want it generated again", got)
	}
}

// An update touches only the managed fields (topology terms, persisted annotation keys, the restore
// annotation): a hand-set retention policy, other annotations and the status survive.
func TestGeneratorUpdatesManagedFieldsOnly(t *testing.T) {
	existing := testutil.MakePPS("web", testNS, "web").ControlledBy("apps/v1", "StatefulSet", "web", stsUID).
		Required("old-key").Preferred(50, "other-key").Retention(kruisev1beta1.RetainWhenDeleted).
		Annotation("user", "keep").Annotation(annRestore, "true").
		State("web-0", "n1", map[string]string{"old-key": "v"}, nil).Hub()
	ann := map[string]string{annAuto: "true", annRequired: zoneKey}
	f := newGenFixture(t, annotatedSTS(ann).Obj(), existing)
	f.reconcile(t, stsKey)

	got := f.pps(t, "web")
	want := &generated{Owners: existing.OwnerReferences, Annotations: map[string]string{"user": "keep"},
		Spec: kruisev1beta1.PersistentPodStateSpec{TargetRef: existing.Spec.TargetRef,
			RequiredPersistentTopology:        &kruisev1beta1.NodeTopologyTerm{Keys: []string{zoneKey}},
			PersistentPodStateRetentionPolicy: kruisev1beta1.RetainWhenDeleted}}
	if diff := cmp.Diff(want, generatedOf(got)); diff != "" {
		t.Errorf("updated PPS (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(existing.Status, got.Status); diff != "" {
		t.Errorf("status changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"update PersistentPodState": 1}, f.fc.Writes.Take()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PersistentPodStateUpdated on *v1.StatefulSet web"}, f.rec.takeRegarding()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	f.reconcile(t, stsKey)
	if got := f.fc.Writes.Take(); len(got) != 0 {
		t.Errorf("the second pass wrote %v, want nothing", got)
	}
}

// Only a PPS the workload controls (a controller reference with its UID) is ever updated or deleted. A PPS
// of that name owned otherwise is left alone, with a PersistentPodStateNotOwned Warning on the workload
// while a PPS is wanted.
func TestGeneratorOwnership(t *testing.T) {
	owned := func() *testutil.PPSWrapper {
		return testutil.MakePPS("web", testNS, "web").ControlledBy("apps/v1", "StatefulSet", "web", stsUID).Required("old-key")
	}
	notController := owned().Hub()
	notController.OwnerReferences[0].Controller = nil
	tests := map[string]struct {
		annotations map[string]string
		existing    *kruisev1beta1.PersistentPodState
		wantGone    bool
		wantWrites  map[string]int
		wantEvents  []string
	}{
		"owned, auto-generation removed: deleted": {annotations: map[string]string{annRequired: zoneKey},
			existing: owned().Hub(), wantGone: true, wantWrites: map[string]int{"delete PersistentPodState": 1},
			wantEvents: []string{"PersistentPodStateDeleted on *v1.StatefulSet web"}},
		"owned, auto-generation not exactly true: deleted": {annotations: map[string]string{annAuto: "True", annRequired: zoneKey},
			existing: owned().Hub(), wantGone: true, wantWrites: map[string]int{"delete PersistentPodState": 1},
			wantEvents: []string{"PersistentPodStateDeleted on *v1.StatefulSet web"}},
		"owned, no topology key left: deleted with a Warning": {annotations: map[string]string{annAuto: "true", annPersist: ipKey},
			existing: owned().Hub(), wantGone: true, wantWrites: map[string]int{"delete PersistentPodState": 1},
			wantEvents: []string{"InvalidPersistentPodStateAnnotations on *v1.StatefulSet web", "PersistentPodStateDeleted on *v1.StatefulSet web"}},
		"owned by another workload, auto-generation on": {annotations: map[string]string{annAuto: "true", annRequired: zoneKey},
			existing:   testutil.MakePPS("web", testNS, "web").ControlledBy("apps/v1", "StatefulSet", "web", "old-uid").Required("old-key").Hub(),
			wantEvents: []string{"PersistentPodStateNotOwned on *v1.StatefulSet web"}},
		"no owner, auto-generation on": {annotations: map[string]string{annAuto: "true", annRequired: zoneKey},
			existing: testutil.MakePPS("web", testNS, "web").Required("old-key").Hub(), wantEvents: []string{"PersistentPodStateNotOwned on *v1.StatefulSet web"}},
		"owner reference that is not a controller, auto-generation on": {annotations: map[string]string{annAuto: "true", annRequired: zoneKey},
			existing: notController, wantEvents: []string{"PersistentPodStateNotOwned on *v1.StatefulSet web"}},
		"no owner, auto-generation off": {annotations: map[string]string{annRequired: zoneKey},
			existing: testutil.MakePPS("web", testNS, "web").Required("old-key").Hub()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newGenFixture(t, annotatedSTS(tc.annotations).Obj(), tc.existing)
			f.reconcile(t, stsKey)
			got := f.pps(t, "web")
			if gone := got == nil; gone != tc.wantGone {
				t.Fatalf("PPS deleted: %v, want %v", gone, tc.wantGone)
			}
			if got != nil {
				if diff := cmp.Diff(generatedOf(tc.existing), generatedOf(got)); diff != "" {
					t.Errorf("a PPS that is not owned changed (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantWrites, f.fc.Writes.Take(), cmpEmptyMaps); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, f.rec.takeRegarding()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpEmptyMaps treats a nil map and an empty one as equal.
var cmpEmptyMaps = cmp.FilterValues(func(a, b map[string]int) bool { return len(a) == 0 && len(b) == 0 },
	cmp.Comparer(func(a, b map[string]int) bool { return true }))

// Annotations that describe no valid PPS write nothing and emit an InvalidPersistentPodStateAnnotations
// Warning on the workload; an owned PPS is then left as it is rather than updated with an invalid spec.
func TestGeneratorInvalidAnnotations(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		existing    client.Object
	}{
		"auto-generation on, no topology annotation": {annotations: map[string]string{annAuto: "true"}},
		"auto-generation on, topology lists empty after trimming": {
			annotations: map[string]string{annAuto: "true", annRequired: " , ", annPreferred: ","}},
		"invalid label key":                {annotations: map[string]string{annAuto: "true", annRequired: "bad key!"}},
		"invalid persisted annotation key": {annotations: map[string]string{annAuto: "true", annPreferred: zoneKey, annPersist: "bad key!"}},
		"more topology keys than a PersistentPodState holds": {annotations: map[string]string{annAuto: "true",
			annRequired: manyKeys(kruisev1beta1.MaxTopologyKeys + 8)}},
		"more persisted annotations than a PersistentPodState holds": {annotations: map[string]string{annAuto: "true",
			annPreferred: zoneKey, annPersist: manyKeys(kruisev1beta1.MaxPersistentPodAnnotations + 1)}},
		"invalid label key with an owned PPS": {annotations: map[string]string{annAuto: "true", annRequired: "bad key!"},
			existing: testutil.MakePPS("web", testNS, "web").ControlledBy("apps/v1", "StatefulSet", "web", stsUID).Required(zoneKey).Hub()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := []client.Object{annotatedSTS(tc.annotations).Obj()}
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			f := newGenFixture(t, objs...)
			f.reconcile(t, stsKey)
			if got := f.fc.Writes.Take(); len(got) != 0 {
				t.Errorf("writes %v, want none", got)
			}
			if diff := cmp.Diff([]string{"InvalidPersistentPodStateAnnotations on *v1.StatefulSet web"}, f.rec.takeRegarding()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tc.existing == nil && f.pps(t, "web") != nil {
				t.Error("a PPS was created")
			}
		})
	}
}

// The generator does nothing for a workload that is gone or being deleted (garbage collection removes the
// owned PPS), whose kind is not supported, or that cannot be read yet.
func TestGeneratorSkips(t *testing.T) {
	kvKey := WorkloadKey{Group: kvGVK.Group, Kind: kvGVK.Kind, Namespace: testNS, Name: "kv"}
	kv := makeUnstructured(kvGVK, "kv", "kv-uid", map[string]any{"replicas": int64(1)})
	kv.SetAnnotations(fullAnnotations)
	tests := map[string]struct {
		objs    []client.Object
		key     WorkloadKey
		watcher *Watcher
	}{
		"workload gone":          {key: stsKey},
		"workload being deleted": {key: stsKey, objs: []client.Object{annotatedSTS(fullAnnotations).Deleting().Obj()}},
		"kind not supported": {key: WorkloadKey{Group: "apps", Kind: "Deployment", Namespace: testNS, Name: "web"},
			objs: []client.Object{annotatedSTS(fullAnnotations).Obj()}},
		"whitelisted kind not watched yet": {key: kvKey, objs: []client.Object{kv}, watcher: watcherWith(true)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newGenFixture(t, tc.objs...)
			if tc.watcher != nil {
				f.finder.Watcher = tc.watcher
			}
			f.reconcile(t, tc.key)
			if got := f.fc.Writes.Take(); len(got) != 0 {
				t.Errorf("writes %v, want none", got)
			}
			if got := f.rec.take(); len(got) != 0 {
				t.Errorf("events %v, want none", got)
			}
		})
	}
}

func TestDesiredPPS(t *testing.T) {
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: stsUID, Controller: ptr.To(true)}}
	base := func() *kruisev1beta1.PersistentPodState {
		return &kruisev1beta1.PersistentPodState{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: testNS, OwnerReferences: owner},
			Spec: kruisev1beta1.PersistentPodStateSpec{
				TargetRef: kruisev1beta1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}},
		}
	}
	with := func(f func(p *kruisev1beta1.PersistentPodState)) *kruisev1beta1.PersistentPodState {
		p := base()
		f(p)
		return p
	}
	required := func(keys ...string) *kruisev1beta1.NodeTopologyTerm {
		return &kruisev1beta1.NodeTopologyTerm{Keys: keys}
	}
	preferred := func(keys ...string) []kruisev1beta1.PreferredTopologyTerm {
		return []kruisev1beta1.PreferredTopologyTerm{{Weight: 100, Preference: kruisev1beta1.NodeTopologyTerm{Keys: keys}}}
	}
	tests := map[string]struct {
		annotations map[string]string
		want        *kruisev1beta1.PersistentPodState
		wantProblem bool
	}{
		"no annotations":                        {},
		"auto-generation off":                   {annotations: map[string]string{annAuto: "false", annRequired: zoneKey}},
		"auto-generation not exactly true":      {annotations: map[string]string{annAuto: "TRUE", annRequired: zoneKey}},
		"topology keys without auto-generation": {annotations: map[string]string{annRequired: zoneKey, annPreferred: hostKey}},
		"auto-generation without topology keys": {annotations: map[string]string{annAuto: "true", annPersist: ipKey}, wantProblem: true},
		"topology lists of blanks and commas":   {annotations: map[string]string{annAuto: "true", annRequired: " ,, ", annPreferred: " "}, wantProblem: true},
		"required only, trimmed and deduplicated": {annotations: map[string]string{annAuto: "true", annRequired: " b , a,,b "},
			want: with(func(p *kruisev1beta1.PersistentPodState) { p.Spec.RequiredPersistentTopology = required("b", "a") })},
		"preferred only, one term of weight 100": {annotations: map[string]string{annAuto: "true", annPreferred: "a, b"},
			want: with(func(p *kruisev1beta1.PersistentPodState) { p.Spec.PreferredPersistentTopology = preferred("a", "b") })},
		"everything": {annotations: map[string]string{annAuto: "true", annRequired: "a", annPreferred: "b", annPersist: " x, y ,x", annRestore: "true"},
			want: with(func(p *kruisev1beta1.PersistentPodState) {
				p.Spec.RequiredPersistentTopology = required("a")
				p.Spec.PreferredPersistentTopology = preferred("b")
				p.Spec.PersistentPodAnnotations = []kruisev1beta1.PersistentPodAnnotation{{Key: "x"}, {Key: "y"}}
				p.Annotations = map[string]string{annRestore: "true"}
			})},
		"restore annotation copied whatever its value": {annotations: map[string]string{annAuto: "true", annRequired: "a", annRestore: "false"},
			want: with(func(p *kruisev1beta1.PersistentPodState) {
				p.Spec.RequiredPersistentTopology = required("a")
				p.Annotations = map[string]string{annRestore: "false"}
			})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, problem := DesiredPPS(annotatedSTS(tc.annotations).Obj(), "apps/v1", "StatefulSet")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("desired PPS (-want +got):\n%s", diff)
			}
			if (problem != "") != tc.wantProblem {
				t.Errorf("problem %q, want one: %v", problem, tc.wantProblem)
			}
		})
	}
}

// A write that lost a race with another writer (a create whose name is taken before the cache shows the
// object, an update or a delete refused on a stale resourceVersion) is retried: the pass asks for another
// one. Nothing else brings the workload back: the event of the newer PPS version does not, when its managed
// fields are unchanged (a status write).
func TestGeneratorLostRacesAreRetried(t *testing.T) {
	gr := schema.GroupResource{Group: "apps.kruise.io", Resource: "persistentpodstates"}
	owned := testutil.MakePPS("web", testNS, "web").ControlledBy("apps/v1", "StatefulSet", "web", stsUID).Required("old-key").Hub()
	tests := map[string]struct {
		annotations map[string]string
		existing    client.Object
		hooks       interceptor.Funcs
	}{
		"create: name already taken": {annotations: fullAnnotations, hooks: interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewAlreadyExists(gr, "web")
			}}},
		"update: stale resourceVersion": {annotations: fullAnnotations, existing: owned, hooks: interceptor.Funcs{
			Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
				return apierrors.NewConflict(gr, "web", errors.New("the object has been modified"))
			}}},
		"delete: stale resourceVersion": {annotations: map[string]string{annRequired: zoneKey}, existing: owned, hooks: interceptor.Funcs{
			Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
				return apierrors.NewConflict(gr, "web", errors.New("the object has been modified"))
			}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := []client.Object{annotatedSTS(tc.annotations).Obj()}
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			f := newGenFixtureWithHooks(t, tc.hooks, objs...)
			res, err := f.g.Reconcile(context.Background(), stsKey)
			if err != nil || res.RequeueAfter <= 0 {
				t.Errorf("Reconcile = %+v, %v; want a requeue without an error", res, err)
			}
			if got := f.rec.take(); len(got) != 0 {
				t.Errorf("events %v for a write that did not happen, want none", got)
			}
		})
	}
}

// manyKeys is a comma list of n distinct label keys.
func manyKeys(n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("example.com/key-%d", i)
	}
	return strings.Join(keys, ",")
}

// A PersistentPodState the API server refuses for its content (its schema, or the webhook because another
// PersistentPodState already tracks the workload) is reported once with a warning event on the workload and
// not retried: the pass returns neither an error nor a requeue, so only a change of the workload's
// annotations (or the deletion of the PersistentPodState in its way) brings the generator back.
func TestGeneratorRefusalsAreReportedNotRetried(t *testing.T) {
	gr := schema.GroupResource{Group: "apps.kruise.io", Resource: "persistentpodstates"}
	gk := schema.GroupKind{Group: "apps.kruise.io", Kind: "PersistentPodState"}
	owned := testutil.MakePPS("web", testNS, "web").ControlledBy("apps/v1", "StatefulSet", "web", stsUID).Required("old-key").Hub()
	denied := apierrors.NewForbidden(gr, "web", errors.New(`admission webhook "vpersistentpodstate.drover.dev" denied the request: `+
		`spec.targetRef: Forbidden: PersistentPodState "claimed" already targets StatefulSet apps/v1 web in this namespace`))
	tests := map[string]struct {
		existing client.Object
		hooks    interceptor.Funcs
	}{
		"create: another PersistentPodState tracks the workload": {hooks: interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error { return denied }}},
		"create: the schema refuses": {hooks: interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewInvalid(gk, "web", nil)
			}}},
		"update: the schema refuses": {existing: owned, hooks: interceptor.Funcs{
			Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
				return apierrors.NewInvalid(gk, "web", nil)
			}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := []client.Object{annotatedSTS(fullAnnotations).Obj()}
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			f := newGenFixtureWithHooks(t, tc.hooks, objs...)
			f.reconcile(t, stsKey)
			if diff := cmp.Diff([]string{"PersistentPodStateRefused on *v1.StatefulSet web"}, f.rec.takeRegarding()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
