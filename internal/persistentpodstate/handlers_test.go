package persistentpodstate

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/drover-dev/drover/internal/persistentpodstate/core"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
	"github.com/drover-dev/drover/internal/testutil"
)

// handlerPPS are the PPS the handler tests map events to: one per target kind named web or kv.
func handlerPPS() []client.Object {
	return []client.Object{
		testutil.MakePPS("web", testNS, "web").Required(zoneKey).PersistAnnotations(ipKey).
			State("web-0", "n1", map[string]string{zoneKey: "z1"}, map[string]string{ipKey: "10.0.0.1"}).Hub(),
		testutil.MakePPS("kruise-web", testNS, "web").Target("apps.kruise.io/v1beta1", "StatefulSet", "web").Required(zoneKey).Hub(),
		testutil.MakePPS("kv", testNS, "kv").Target("demo.drover.dev/v1alpha1", "KVStore", "kv").Required(zoneKey).Hub(),
		testutil.MakePPS("other", testNS, "other").Required(zoneKey).Hub(),
	}
}

// newMapper returns a mapper over a fake client holding the handler PPS, with KVStore whitelisted (its
// replicas at spec.size).
func newMapper(t *testing.T) mapper {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: handlerPPS(), Indexes: ppsindex.Indexes()})
	snap := kvWhitelist(t, "spec.size")
	return mapper{reader: fc.Client, whitelist: func() *whitelist.Snapshot { return snap }}
}

func names(reqs []reconcile.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.String())
	}
	return out
}

// basePod is web-0, not Ready, showing the recorded annotation value, at resourceVersion 1.
func basePod() *testutil.PodWrapper {
	return stsPod(0, "n1").Ready(false).Annotation(ipKey, "10.0.0.1").ResourceVersion("1")
}

// The pod handler enqueues the PPS of the pod's controller only on a change that can change a record: Ready
// false→true, terminating, finished, a persisted annotation changed. A live pod changing the recorded value
// of a key is noted for the annotation value rule; a change from another value is not.
func TestPodHandlerUpdate(t *testing.T) {
	observed := map[core.InLifeKey]string{{UID: "uid-web-0", Key: ipKey}: "10.0.0.2"}
	tests := map[string]struct {
		oldPod, newPod *corev1.Pod
		want           []string
		wantInLife     map[core.InLifeKey]string
	}{
		"Ready false→true": {oldPod: basePod().Obj(), newPod: basePod().Ready(true).ResourceVersion("2").Obj(),
			want: []string{"ns1/web"}},
		"Ready true→false": {oldPod: basePod().Ready(true).Obj(), newPod: basePod().ResourceVersion("2").Obj()},
		"deletion started": {oldPod: basePod().Obj(), newPod: basePod().Terminating().ResourceVersion("2").Obj(),
			want: []string{"ns1/web"}},
		"phase became Failed": {oldPod: basePod().Obj(), newPod: basePod().Phase(corev1.PodFailed).ResourceVersion("2").Obj(),
			want: []string{"ns1/web"}},
		"phase became Succeeded": {oldPod: basePod().Obj(), newPod: basePod().Phase(corev1.PodSucceeded).ResourceVersion("2").Obj(),
			want: []string{"ns1/web"}},
		"unrelated label change":      {oldPod: basePod().Ready(true).Obj(), newPod: basePod().Ready(true).Label("x", "y").ResourceVersion("2").Obj()},
		"unrelated annotation change": {oldPod: basePod().Obj(), newPod: basePod().Annotation("other", "v").ResourceVersion("2").Obj()},
		"unchanged resourceVersion":   {oldPod: basePod().Obj(), newPod: basePod().Ready(true).Obj()},
		"persisted annotation changed from the recorded value": {oldPod: basePod().Obj(),
			newPod: basePod().Annotation(ipKey, "10.0.0.2").ResourceVersion("2").Obj(), want: []string{"ns1/web"}, wantInLife: observed},
		"persisted annotation changed from another value": {oldPod: basePod().Annotation(ipKey, "10.0.0.9").Obj(),
			newPod: basePod().Annotation(ipKey, "10.0.0.2").ResourceVersion("2").Obj(), want: []string{"ns1/web"}},
		"persisted annotation added": {oldPod: stsPod(0, "n1").Ready(false).ResourceVersion("1").Obj(),
			newPod: basePod().ResourceVersion("2").Obj(), want: []string{"ns1/web"}},
		"persisted annotation removed": {oldPod: basePod().Obj(),
			newPod: stsPod(0, "n1").Ready(false).ResourceVersion("2").Obj(), want: []string{"ns1/web"}},
		"pod without a controller": {oldPod: testutil.MakePod("web-0", testNS).ResourceVersion("1").Obj(),
			newPod: testutil.MakePod("web-0", testNS).Ready(true).ResourceVersion("2").Obj()},
		"pod of a kind that is not a target": {
			oldPod: testutil.MakePod("web-0", testNS).ControlledBy("apps/v1", "ReplicaSet", "web", "rs").ResourceVersion("1").Obj(),
			newPod: testutil.MakePod("web-0", testNS).ControlledBy("apps/v1", "ReplicaSet", "web", "rs").Ready(true).ResourceVersion("2").Obj()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := podHandler{mapper: newMapper(t), watcher: watcherWith(true), inLife: newInLife()}
			q := &fakeQueue[reconcile.Request]{}
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: tc.oldPod, ObjectNew: tc.newPod}, q)
			if diff := cmp.Diff(tc.want, names(q.added)); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantInLife, h.inLife.forPods(map[types.UID]bool{"uid-web-0": true})); diff != "" {
				t.Errorf("in-life observations (-want +got):\n%s", diff)
			}
		})
	}
}

// A pod delete always enqueues the PPS of the pod's controller, whatever the pod's state, and forgets the
// pod's in-life observations (only that pod's).
func TestPodHandlerDelete(t *testing.T) {
	tests := map[string]struct {
		pod  *corev1.Pod
		want []string
	}{
		"Ready pod":                {pod: basePod().Ready(true).Obj(), want: []string{"ns1/web"}},
		"pending pod, no node":     {pod: basePod().Node("").Obj(), want: []string{"ns1/web"}},
		"pod without a controller": {pod: testutil.MakePod("web-0", testNS).UID("uid-web-0").Obj()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := podHandler{mapper: newMapper(t), watcher: watcherWith(true), inLife: newInLife()}
			h.inLife.observe("uid-web-0", ipKey, "a")
			h.inLife.observe("uid-web-1", ipKey, "b")
			q := &fakeQueue[reconcile.Request]{}
			h.Delete(context.Background(), event.DeleteEvent{Object: tc.pod}, q)
			if diff := cmp.Diff(tc.want, names(q.added)); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
			want := map[core.InLifeKey]string{{UID: "uid-web-1", Key: ipKey}: "b"}
			if diff := cmp.Diff(want, h.inLife.forPods(map[types.UID]bool{"uid-web-0": true, "uid-web-1": true})); diff != "" {
				t.Errorf("in-life observations (-want +got):\n%s", diff)
			}
		})
	}
}

// A pod created for a whitelisted kind that is not watched yet asks the watcher for that kind, with the
// version of the pod's ownerReference; nothing is enqueued.
func TestPodHandlerCreateRequestsWatch(t *testing.T) {
	kvPod := func(apiVersion, kind string) *corev1.Pod {
		return testutil.MakePod("kv-0", testNS).ControlledBy(apiVersion, kind, "kv", "kv-uid").Obj()
	}
	kvGK := kvGVK.GroupKind()
	tests := map[string]struct {
		pod     *corev1.Pod
		watcher *Watcher
		want    map[schema.GroupKind]string
	}{
		"whitelisted kind not watched":     {pod: kvPod("demo.drover.dev/v1beta2", "KVStore"), watcher: watcherWith(true), want: map[schema.GroupKind]string{kvGK: "v1beta2"}},
		"whitelisted kind already watched": {pod: kvPod("demo.drover.dev/v1alpha1", "KVStore"), watcher: watcherWith(true, kvGVK), want: map[schema.GroupKind]string{}},
		"native StatefulSet":               {pod: stsPod(0, "n1").Obj(), watcher: watcherWith(true), want: map[schema.GroupKind]string{}},
		"kind not whitelisted":             {pod: kvPod("demo.drover.dev/v1alpha1", "Other"), watcher: watcherWith(true), want: map[schema.GroupKind]string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := podHandler{mapper: newMapper(t), watcher: tc.watcher, inLife: newInLife()}
			q := &fakeQueue[reconcile.Request]{}
			h.Create(context.Background(), event.CreateEvent{Object: tc.pod}, q)
			if len(q.added) != 0 {
				t.Errorf("create enqueued %v, want nothing", names(q.added))
			}
			if diff := cmp.Diff(tc.want, tc.watcher.wanted); diff != "" {
				t.Errorf("watch requests (-want +got):\n%s", diff)
			}
		})
	}
}

func kruiseSTS(rv string, spec map[string]any) *unstructured.Unstructured {
	u := makeUnstructured(kruiseGVK, "web", "k-uid", spec)
	u.SetResourceVersion(rv)
	return u
}

func kvStore(rv string, spec map[string]any) *unstructured.Unstructured {
	u := makeUnstructured(kvGVK, "kv", "kv-uid", spec)
	u.SetResourceVersion(rv)
	return u
}

// A workload update enqueues its PPS when what decides the valid ordinals changed (replicas, at the
// whitelist's replicasPath for a custom kind; ordinals.start; reserveOrdinals) or its deletion started; not
// on other changes, nor on an event with an unchanged resourceVersion.
func TestWorkloadHandlerUpdate(t *testing.T) {
	sts := func(rv string, replicas int32) *testutil.StatefulSetWrapper {
		return testutil.MakeStatefulSet("web", testNS, replicas).UID(stsUID).ResourceVersion(rv)
	}
	tests := map[string]struct {
		gk       schema.GroupKind // empty: an unstructured watch
		old, new client.Object
		want     []string
	}{
		"replicas changed":          {gk: statefulSetGK, old: sts("1", 2).Obj(), new: sts("2", 3).Obj(), want: []string{"ns1/web"}},
		"ordinals.start changed":    {gk: statefulSetGK, old: sts("1", 2).Obj(), new: sts("2", 2).Start(1).Obj(), want: []string{"ns1/web"}},
		"deletion started":          {gk: statefulSetGK, old: sts("1", 2).Obj(), new: sts("2", 2).Deleting().Obj(), want: []string{"ns1/web"}},
		"annotation change only":    {gk: statefulSetGK, old: sts("1", 2).Obj(), new: sts("2", 2).Annotation(annAuto, "true").Obj()},
		"unchanged resourceVersion": {gk: statefulSetGK, old: sts("1", 2).Obj(), new: sts("1", 3).Obj()},
		"Advanced StatefulSet: reserveOrdinals changed": {
			old:  kruiseSTS("1", map[string]any{"replicas": int64(2)}),
			new:  kruiseSTS("2", map[string]any{"replicas": int64(2), "reserveOrdinals": []any{int64(1)}}),
			want: []string{"ns1/kruise-web"}},
		"Advanced StatefulSet: ordinals.start changed": {
			old:  kruiseSTS("1", map[string]any{"replicas": int64(2)}),
			new:  kruiseSTS("2", map[string]any{"replicas": int64(2), "ordinals": map[string]any{"start": int64(2)}}),
			want: []string{"ns1/kruise-web"}},
		"custom kind: value at replicasPath changed": {
			old: kvStore("1", map[string]any{"size": int64(1)}), new: kvStore("2", map[string]any{"size": int64(2)}),
			want: []string{"ns1/kv"}},
		"custom kind: spec.replicas is not its replicasPath": {
			old: kvStore("1", map[string]any{"size": int64(1), "replicas": int64(1)}),
			new: kvStore("2", map[string]any{"size": int64(1), "replicas": int64(4)})},
		"custom kind not whitelisted": {
			old: makeUnstructured(schema.GroupVersionKind{Group: "demo.drover.dev", Version: "v1", Kind: "Other"}, "kv", "", map[string]any{"size": int64(1)}),
			new: makeUnstructured(schema.GroupVersionKind{Group: "demo.drover.dev", Version: "v1", Kind: "Other"}, "kv", "", map[string]any{"size": int64(2)})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := workloadHandler{mapper: newMapper(t), gk: tc.gk}
			q := &fakeQueue[reconcile.Request]{}
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}, q)
			if diff := cmp.Diff(tc.want, names(q.added)); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
		})
	}
}

// Workload create and delete enqueue the PPS of exactly that kind: a native StatefulSet (read without its
// kind, as the informer delivers it) maps to the PPS targeting apps/StatefulSet, not to one targeting the
// Advanced StatefulSet of the same name.
func TestWorkloadHandlerCreateDelete(t *testing.T) {
	bare := testutil.MakeStatefulSet("web", testNS, 2).UID(stsUID).Obj()
	bare.TypeMeta = metav1.TypeMeta{}
	tests := map[string]struct {
		gk   schema.GroupKind
		obj  client.Object
		want []string
	}{
		"native StatefulSet":   {gk: statefulSetGK, obj: bare, want: []string{"ns1/web"}},
		"Advanced StatefulSet": {obj: kruiseSTS("1", map[string]any{"replicas": int64(1)}), want: []string{"ns1/kruise-web"}},
		"custom kind":          {obj: kvStore("1", map[string]any{"size": int64(1)}), want: []string{"ns1/kv"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := workloadHandler{mapper: newMapper(t), gk: tc.gk}
			created, deleted := &fakeQueue[reconcile.Request]{}, &fakeQueue[reconcile.Request]{}
			h.Create(context.Background(), event.CreateEvent{Object: tc.obj}, created)
			h.Delete(context.Background(), event.DeleteEvent{Object: tc.obj}, deleted)
			if diff := cmp.Diff(tc.want, names(created.added)); diff != "" {
				t.Errorf("create enqueued (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, names(deleted.added)); diff != "" {
				t.Errorf("delete enqueued (-want +got):\n%s", diff)
			}
		})
	}
}

// Every PPS of a target is enqueued, duplicates included.
func TestMapperEnqueuesEveryPPSOfATarget(t *testing.T) {
	objs := append(handlerPPS(), testutil.MakePPS("web-dup", testNS, "web").Target("apps/v2", "StatefulSet", "web").Hub(),
		testutil.MakePPS("web", "ns2", "web").Hub())
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: objs, Indexes: ppsindex.Indexes()})
	m := mapper{reader: fc.Client, whitelist: whitelist.Empty}
	q := &fakeQueue[reconcile.Request]{}
	m.enqueue(context.Background(), q, testNS, statefulSetGK, "web", 0)
	if diff := cmp.Diff([]string{"ns1/web", "ns1/web-dup"}, names(q.added)); diff != "" {
		t.Errorf("enqueued (-want +got):\n%s", diff)
	}
}
