package persistentpodstate

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
	"github.com/drover-dev/drover/internal/testutil"
)

// The generator hears of a workload when it appears and when one of the five generator annotations (the
// four kruise.io ones and the restore annotation) is added, changed or removed; never on other changes, and
// never for a kind that is not a target.
func TestGeneratorWorkloadHandler(t *testing.T) {
	snap := kvWhitelist(t, "")
	wl := func() *whitelist.Snapshot { return snap }
	sts := func(ann map[string]string) client.Object { return annotatedSTS(ann).Obj() }
	base := map[string]string{annAuto: "true", annRequired: zoneKey, annPreferred: hostKey, annPersist: ipKey, annRestore: "true", "other": "x"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for bk, bv := range base {
			m[bk] = bv
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	kvKey := WorkloadKey{Group: kvGVK.Group, Kind: kvGVK.Kind, Namespace: testNS, Name: "kv"}
	kv := func(ann map[string]string) client.Object {
		u := makeUnstructured(kvGVK, "kv", "kv-uid", nil)
		u.SetAnnotations(ann)
		return u
	}
	tests := map[string]struct {
		gk       schema.GroupKind
		old, new client.Object
		want     []WorkloadKey
	}{
		"auto-generation changed":       {gk: statefulSetGK, old: sts(base), new: sts(with(annAuto, "false")), want: []WorkloadKey{stsKey}},
		"auto-generation removed":       {gk: statefulSetGK, old: sts(base), new: sts(with(annAuto, "")), want: []WorkloadKey{stsKey}},
		"required keys changed":         {gk: statefulSetGK, old: sts(base), new: sts(with(annRequired, hostKey)), want: []WorkloadKey{stsKey}},
		"preferred keys changed":        {gk: statefulSetGK, old: sts(base), new: sts(with(annPreferred, zoneKey)), want: []WorkloadKey{stsKey}},
		"persisted annotations changed": {gk: statefulSetGK, old: sts(base), new: sts(with(annPersist, "a,b")), want: []WorkloadKey{stsKey}},
		"restore annotation removed":    {gk: statefulSetGK, old: sts(base), new: sts(with(annRestore, "")), want: []WorkloadKey{stsKey}},
		"restore annotation added":      {gk: statefulSetGK, old: sts(with(annRestore, "")), new: sts(base), want: []WorkloadKey{stsKey}},
		"annotation added with an empty value": {gk: statefulSetGK, old: sts(with(annRestore, "")),
			new: annotatedSTS(with(annRestore, "")).Annotation(annRestore, "").Obj(), want: []WorkloadKey{stsKey}},
		"other annotation changed":        {gk: statefulSetGK, old: sts(base), new: sts(with("other", "y"))},
		"replicas changed":                {gk: statefulSetGK, old: sts(base), new: annotatedSTS(base).NoReplicas().Obj()},
		"custom kind, annotation changed": {old: kv(base), new: kv(with(annRequired, "k")), want: []WorkloadKey{kvKey}},
		"kind not a target": {gk: schema.GroupKind{Group: "apps", Kind: "Deployment"}, old: sts(base),
			new: sts(with(annAuto, "false"))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := generatorWorkloadHandler{gk: tc.gk, whitelist: wl}
			q := &fakeQueue[WorkloadKey]{}
			h.Update(context.Background(), event.TypedUpdateEvent[client.Object]{ObjectOld: tc.old, ObjectNew: tc.new}, q)
			if diff := cmp.Diff(tc.want, q.added); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("create enqueues, delete does not", func(t *testing.T) {
		h := generatorWorkloadHandler{gk: statefulSetGK, whitelist: wl}
		q := &fakeQueue[WorkloadKey]{}
		h.Create(context.Background(), event.TypedCreateEvent[client.Object]{Object: sts(nil)}, q)
		h.Delete(context.Background(), event.TypedDeleteEvent[client.Object]{Object: sts(nil)}, q)
		if diff := cmp.Diff([]WorkloadKey{stsKey}, q.added); diff != "" {
			t.Errorf("enqueued (-want +got):\n%s", diff)
		}
	})
}

// The generator hears of the owner of a PPS under a controller reference when the PPS is deleted or its
// managed fields change, so that it restores them while the annotations ask for them.
func TestGeneratorPPSHandler(t *testing.T) {
	owned := func() *testutil.PPSWrapper {
		return testutil.MakePPS("web", testNS, "web").ControlledBy("apps/v1", "StatefulSet", "web", stsUID).Required(zoneKey)
	}
	free := func() *testutil.PPSWrapper { return testutil.MakePPS("web", testNS, "web").Required(zoneKey) }
	tests := map[string]struct {
		old, new *kruisev1beta1.PersistentPodState
		want     []WorkloadKey
	}{
		"required keys changed":    {old: owned().Hub(), new: owned().Required(hostKey).Hub(), want: []WorkloadKey{stsKey}},
		"preferred term added":     {old: owned().Hub(), new: owned().Preferred(10, hostKey).Hub(), want: []WorkloadKey{stsKey}},
		"persisted keys changed":   {old: owned().Hub(), new: owned().PersistAnnotations(ipKey).Hub(), want: []WorkloadKey{stsKey}},
		"restore annotation added": {old: owned().Hub(), new: owned().Annotation(annRestore, "true").Hub(), want: []WorkloadKey{stsKey}},
		"retention policy changed": {old: owned().Hub(), new: owned().Retention(kruisev1beta1.RetainWhenDeleted).Hub()},
		"status changed":           {old: owned().Hub(), new: owned().State("web-0", "n1", nil, nil).Hub()},
		"other annotation changed": {old: owned().Hub(), new: owned().Annotation("user", "x").Hub()},
		"no controller, spec edit": {old: free().Hub(), new: free().Required(hostKey).Hub()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q := &fakeQueue[WorkloadKey]{}
			generatorPPSHandler{}.Update(context.Background(), event.TypedUpdateEvent[client.Object]{ObjectOld: tc.old, ObjectNew: tc.new}, q)
			if diff := cmp.Diff(tc.want, q.added); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
		})
	}

	deletes := map[string]struct {
		pps  *kruisev1beta1.PersistentPodState
		want []WorkloadKey
	}{
		"owned by a StatefulSet": {pps: owned().Hub(), want: []WorkloadKey{stsKey}},
		// The deleted PPS's target is asked about too: its own generated PPS may have been refused.
		"owned by a custom kind, targeting the StatefulSet": {pps: free().ControlledBy("demo.drover.dev/v1alpha1", "KVStore", "kv", "kv-uid").Hub(),
			want: []WorkloadKey{{Group: kvGVK.Group, Kind: kvGVK.Kind, Namespace: testNS, Name: "kv"}, stsKey}},
		"no controller": {pps: free().Hub(), want: []WorkloadKey{stsKey}},
	}
	for name, tc := range deletes {
		t.Run("delete, "+name, func(t *testing.T) {
			q := &fakeQueue[WorkloadKey]{}
			generatorPPSHandler{}.Create(context.Background(), event.TypedCreateEvent[client.Object]{Object: tc.pps}, q)
			if len(q.added) != 0 {
				t.Fatalf("create enqueued %v, want nothing", q.added)
			}
			generatorPPSHandler{}.Delete(context.Background(), event.TypedDeleteEvent[client.Object]{Object: tc.pps}, q)
			if diff := cmp.Diff(tc.want, q.added); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
		})
	}
}
