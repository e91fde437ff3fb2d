package yurtappdaemon

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// revisionData is the revision data of the standard owner of kind k.
func revisionData(t *testing.T, k kindCase) []byte {
	t.Helper()
	data, err := render.RevisionData(k.owner().Obj().DaemonSpec())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// revisionName is the name of the revision of data with the given collision count.
func revisionName(data []byte, collisions *int32) string {
	return render.RevisionName(ownerName, render.RevisionHash(data, collisions))
}

// revision builds a ControllerRevision; owned ones have the controller ownerReference of kind k.
func revision(k kindCase, name string, number int64, data string, owned bool) *appsv1.ControllerRevision {
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": "dns"}},
		Data:     runtime.RawExtension{Raw: []byte(data)},
		Revision: number,
	}
	if owned {
		cr.OwnerReferences = []metav1.OwnerReference{k.ref()}
	}
	return cr
}

func TestRevisions(t *testing.T) {
	type state struct {
		Current        string
		CollisionCount *int32
		Numbers        map[string]int64 // revision name → number, every revision in the namespace
	}
	tests := map[string]struct {
		objs  func(k kindCase, data []byte) []client.Object
		hooks func() interceptor.Funcs
		want  func(data []byte) state
		// wantRevisionWrites counts creates, patches and deletes of ControllerRevisions.
		wantRevisionWrites int
	}{
		"an owned revision with equal data is reused": {
			objs: func(k kindCase, data []byte) []client.Object {
				return []client.Object{revision(k, "dns-same", 1, string(data), true)}
			},
			want: func([]byte) state { return state{Current: "dns-same", Numbers: map[string]int64{"dns-same": 1}} },
		},
		"a rollback renumbers the reused revision as the newest": {
			objs: func(k kindCase, data []byte) []client.Object {
				return []client.Object{revision(k, "dns-a", 1, string(data), true), revision(k, "dns-b", 2, `{"b":1}`, true)}
			},
			want: func([]byte) state {
				return state{Current: "dns-a", Numbers: map[string]int64{"dns-a": 3, "dns-b": 2}}
			},
			wantRevisionWrites: 1,
		},
		"a template change creates the newest revision": {
			objs: func(k kindCase, _ []byte) []client.Object {
				return []client.Object{revision(k, "dns-old", 4, `{"old":1}`, true)}
			},
			want: func(data []byte) state {
				return state{Current: revisionName(data, nil), Numbers: map[string]int64{"dns-old": 4, revisionName(data, nil): 5}}
			},
			wantRevisionWrites: 1,
		},
		"an orphan with equal data is adopted, not counted as a collision": {
			objs: func(k kindCase, data []byte) []client.Object {
				return []client.Object{revision(k, revisionName(data, nil), 7, string(data), false)}
			},
			want: func(data []byte) state {
				return state{Current: revisionName(data, nil), Numbers: map[string]int64{revisionName(data, nil): 7}}
			},
			wantRevisionWrites: 1,
		},
		"AlreadyExists with equal data reuses the revision": {
			objs: func(k kindCase, data []byte) []client.Object {
				return []client.Object{revision(k, revisionName(data, nil), 1, string(data), true)}
			},
			hooks: hideRevisionLists,
			want: func(data []byte) state {
				return state{Current: revisionName(data, nil), Numbers: map[string]int64{revisionName(data, nil): 1}}
			},
			wantRevisionWrites: 1, // the failed create
		},
		"AlreadyExists with different data counts a collision": {
			objs: func(k kindCase, data []byte) []client.Object {
				return []client.Object{revision(k, revisionName(data, nil), 1, `{"other":1}`, true)}
			},
			want: func(data []byte) state {
				one := int32(1)
				return state{Current: revisionName(data, &one), CollisionCount: &one,
					Numbers: map[string]int64{revisionName(data, nil): 1, revisionName(data, &one): 2}}
			},
			wantRevisionWrites: 2, // the failed create and the retry
		},
		"AlreadyExists with a foreign object of equal data counts a collision": {
			objs: func(k kindCase, data []byte) []client.Object {
				foreign := revision(k, revisionName(data, nil), 1, string(data), false)
				foreign.Labels = map[string]string{"app": "other"} // not selected, so not adoptable
				return []client.Object{foreign}
			},
			want: func(data []byte) state {
				one := int32(1)
				return state{Current: revisionName(data, &one), CollisionCount: &one,
					Numbers: map[string]int64{revisionName(data, nil): 1, revisionName(data, &one): 1}}
			},
			wantRevisionWrites: 2,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			forEachKind(t, func(t *testing.T, k kindCase) {
				data := revisionData(t, k)
				objs := append([]client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj()}, tc.objs(k, data)...)
				hooks := interceptor.Funcs{}
				if tc.hooks != nil {
					hooks = tc.hooks()
				}
				f := newFixture(t, k, objs, hooks)
				f.mustReconcile()
				got := state{Numbers: map[string]int64{}}
				st := f.ownerStatus()
				got.Current, got.CollisionCount = st.CurrentRevision, st.CollisionCount
				for n, cr := range f.revisions() {
					got.Numbers[n] = cr.Revision
					if n == st.CurrentRevision && !isControlledBy(cr, ownerUID) {
						t.Errorf("current revision %s is not owned", n)
					}
				}
				want := tc.want(data)
				if want.CollisionCount == nil {
					want.CollisionCount = new(int32) // the status always says how many collided
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("revisions (-want +got):\n%s", diff)
				}
				n := f.writes.Get("create ControllerRevision") + f.writes.Get("patch ControllerRevision") + f.writes.Get("delete ControllerRevision")
				if n != tc.wantRevisionWrites {
					t.Errorf("%d revision writes, want %d: %v", n, tc.wantRevisionWrites, f.writes.Take())
				}
				if got := f.deployments()["dns-east"].Labels[openyurtv1alpha1.LabelControllerRevisionHash]; got != st.CurrentRevision {
					t.Errorf("child revision label %q, want %q", got, st.CurrentRevision)
				}

				// A second pass changes nothing, the collision count included.
				f.writes.Reset()
				f.mustReconcile()
				if n := f.writes.Get("total"); n != 0 {
					t.Errorf("second pass made %d writes: %v", n, f.writes.Take())
				}
			})
		})
	}
}

// hideRevisionLists makes ControllerRevision lists come back empty: the cache has not seen them yet.
func hideRevisionLists() interceptor.Funcs {
	hidden := true
	return interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*appsv1.ControllerRevisionList); ok && hidden {
			hidden = false
			return nil
		}
		return c.List(ctx, list, opts...)
	}}
}

// TestRevisionHistory: the oldest revisions beyond the limit are deleted after the status write,
// never the current one nor one a child still names.
func TestRevisionHistory(t *testing.T) {
	tests := map[string]struct {
		limit *int32
		want  []string // old revisions left besides the current one
	}{
		"nil keeps 10":                    {limit: nil, want: []string{"dns-r1", "dns-r2", "dns-r3", "dns-r4"}},
		"0 keeps only current and live":   {limit: ptr.To[int32](0), want: []string{"dns-r2"}},
		"2 keeps the two newest and live": {limit: ptr.To[int32](2), want: []string{"dns-r2", "dns-r3", "dns-r4"}},
		"1 keeps the newest and live":     {limit: ptr.To[int32](1), want: []string{"dns-r2", "dns-r4"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			forEachKind(t, func(t *testing.T, k kindCase) {
				w := k.owner()
				if tc.limit != nil {
					w = w.RevisionHistoryLimit(*tc.limit)
				}
				live := child("dns-east", "east", k.ref())
				live.Labels[openyurtv1alpha1.LabelControllerRevisionHash] = "dns-r2"
				objs := []client.Object{w.Obj(), pool("east", edgeLabels).Obj(), live,
					revision(k, "dns-r1", 1, `{"r":1}`, true), revision(k, "dns-r2", 2, `{"r":2}`, true),
					revision(k, "dns-r3", 3, `{"r":3}`, true), revision(k, "dns-r4", 4, `{"r":4}`, true),
					revision(k, "dns-foreign", 1, `{"r":0}`, false)}
				f := newFixture(t, k, objs, interceptor.Funcs{})
				f.mustReconcile()
				current := f.ownerStatus().CurrentRevision
				var got []string
				for n := range f.revisions() {
					if n != current && n != "dns-foreign" {
						got = append(got, n)
					}
				}
				slices.Sort(got)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("old revisions left (-want +got):\n%s", diff)
				}
				if _, ok := f.revisions()["dns-foreign"]; !ok {
					t.Error("a revision that is not owned was deleted")
				}
				if _, ok := f.revisions()[current]; !ok {
					t.Errorf("current revision %s was deleted", current)
				}
			})
		})
	}
}

func TestRevisionsToDelete(t *testing.T) {
	crs := func(names ...string) []*appsv1.ControllerRevision {
		var out []*appsv1.ControllerRevision
		for i, n := range names {
			out = append(out, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: n}, Revision: int64(len(names) - i)})
		}
		return out
	}
	owned := crs("e", "d", "c", "b", "a") // a is the oldest (revision 1)
	names := func(in []*appsv1.ControllerRevision) []string {
		var out []string
		for _, cr := range in {
			out = append(out, cr.Name)
		}
		return out
	}
	tests := map[string]struct {
		limit int
		want  []string
	}{
		"limit above the count": {limit: 10},
		"limit 0":               {limit: 0, want: []string{"a", "c", "d"}},
		"limit 2":               {limit: 2, want: []string{"a"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := names(revisionsToDelete(owned, "e", setOf("b"), tc.limit))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRevisionNotCachedYetIsNoFailure: a revision create that finds the name taken while the cache does not
// show the revision yet (the owner's own create of a moment ago) requeues quietly: no RevisionFailed
// condition, no Warning, no status write, no child touched.
func TestRevisionNotCachedYetIsNoFailure(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		hooks := interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*appsv1.ControllerRevision); ok {
					return apierrors.NewAlreadyExists(appsv1.Resource("controllerrevisions"), obj.GetName())
				}
				return c.Create(ctx, obj, opts...)
			},
		}
		f := newFixture(t, k, []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj()}, hooks)
		res, err := f.reconcile()
		if err != nil || res.RequeueAfter != kit.ConflictBaseDelay {
			t.Fatalf("result %+v, error %v; want a quiet requeue after %s", res, err, kit.ConflictBaseDelay)
		}
		if n := f.writes.Get("total") - f.writes.Get("create ControllerRevision"); n != 0 {
			t.Errorf("%d writes besides the revision create: %v", n, f.writes.Take())
		}
		if ev := f.eventReasons(); len(ev) != 0 {
			t.Errorf("events %v, want none", ev)
		}
	})
}
