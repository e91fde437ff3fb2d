package yurtappdaemon

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/testutil"
)

// fakeQueue records what handlers enqueue; other queue methods are not used by handlers.
type fakeQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added, after []string
}

func (q *fakeQueue) Add(r reconcile.Request) { q.added = append(q.added, r.String()) }

func (q *fakeQueue) AddAfter(r reconcile.Request, d time.Duration) {
	if d != statusOnlyDelay {
		panic("unexpected delay " + d.String())
	}
	q.after = append(q.after, r.String())
}

func (q *fakeQueue) sorted() (added, after []string) {
	return slices.Sorted(slices.Values(q.added)), slices.Sorted(slices.Values(q.after))
}

// handlersFor returns the child and pool handlers of kind k over a fake client holding objs.
func handlersFor(k kindCase, objs ...client.Object) (child, pools handler.EventHandler) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	clock := newPoolClock()
	switch k.kind {
	case testutil.YurtAppDaemonKind:
		kind := yurtAppDaemonOwnerKind()
		return childHandler{gvk: kind.gvk}, poolHandler[*openyurtv1alpha1.YurtAppDaemon]{reader: c, kind: kind, clock: clock, now: time.Now}
	default:
		kind := unitedDaemonSetOwnerKind()
		return childHandler{gvk: kind.gvk}, poolHandler[*openyurtv1alpha1.UnitedDaemonSet]{reader: c, kind: kind, clock: clock, now: time.Now}
	}
}

func otherKind(k kindCase) string {
	if k.kind == testutil.YurtAppDaemonKind {
		return testutil.UnitedDaemonSetKind
	}
	return testutil.YurtAppDaemonKind
}

func TestPoolHandler(t *testing.T) {
	east, west := map[string]string{"region": "east"}, map[string]string{"region": "west"}
	owners := func(k kindCase) []client.Object {
		mk := func(kind, ns, name string) *testutil.OwnerWrapper[openyurtv1alpha1.Owner] {
			return testutil.MakeOwner(kind, name, ns).Deployment(testutil.DeploymentSpec(appLabels, "x"))
		}
		return []client.Object{
			mk(k.kind, "ns1", "sel-east").NodePoolSelectorLabels(east).Obj(),
			mk(k.kind, "ns2", "sel-west").NodePoolSelectorLabels(west).Obj(),
			mk(k.kind, "ns3", "all").NodePoolSelector(&metav1.LabelSelector{}).Obj(),
			mk(k.kind, "ns1", "none").Obj(), // no nodepoolSelector: selects nothing
			mk(otherKind(k), "ns1", "other-kind").NodePoolSelectorLabels(east).Obj(),
		}
	}
	eastPool := func() *testutil.NodePoolWrapper { return pool("p", east) }
	tests := map[string]struct {
		event func(h handler.EventHandler, q *fakeQueue)
		want  []string
	}{
		"create": {
			event: func(h handler.EventHandler, q *fakeQueue) {
				h.Create(context.Background(), event.CreateEvent{Object: eastPool().Obj()}, q)
			},
			want: []string{"ns1/sel-east", "ns3/all"},
		},
		"delete": {
			event: func(h handler.EventHandler, q *fakeQueue) {
				h.Delete(context.Background(), event.DeleteEvent{Object: pool("p", west).Obj()}, q)
			},
			want: []string{"ns2/sel-west", "ns3/all"},
		},
		"relabel: owners of the old and the new labels": {
			event: func(h handler.EventHandler, q *fakeQueue) {
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: eastPool().Obj(), ObjectNew: pool("p", west).Obj()}, q)
			},
			want: []string{"ns1/sel-east", "ns2/sel-west", "ns3/all"},
		},
		"taints": {
			event: func(h handler.EventHandler, q *fakeQueue) {
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: eastPool().Obj(), ObjectNew: eastPool().Taints(noSchedule("k")).Obj()}, q)
			},
			want: []string{"ns1/sel-east", "ns3/all"},
		},
		"deletion started": {
			event: func(h handler.EventHandler, q *fakeQueue) {
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: eastPool().Obj(), ObjectNew: eastPool().Deleting().Obj()}, q)
			},
			want: []string{"ns1/sel-east", "ns3/all"},
		},
		"status only: dropped": {
			event: func(h handler.EventHandler, q *fakeQueue) {
				newPool := eastPool().Obj()
				newPool.Status.ReadyNodeNum = 3
				newPool.Status.Nodes = []string{"a", "b", "c"}
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: eastPool().Obj(), ObjectNew: newPool}, q)
			},
		},
		"annotations and spec labels only: dropped": {
			event: func(h handler.EventHandler, q *fakeQueue) {
				newPool := eastPool().Labels(map[string]string{"pushed": "to-nodes"}).Obj()
				newPool.Annotations = map[string]string{"a": "b"}
				newPool.Generation = 2
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: eastPool().Obj(), ObjectNew: newPool}, q)
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			forEachKind(t, func(t *testing.T, k kindCase) {
				_, h := handlersFor(k, owners(k)...)
				q := &fakeQueue{}
				tc.event(h, q)
				added, after := q.sorted()
				if diff := cmp.Diff(tc.want, added); diff != "" {
					t.Errorf("enqueued (-want +got):\n%s", diff)
				}
				if len(after) != 0 {
					t.Errorf("delayed %v", after)
				}
			})
		})
	}
}

func TestPoolHandlerRecordsCreateTimes(t *testing.T) {
	clock := newPoolClock()
	h := poolHandler[*openyurtv1alpha1.YurtAppDaemon]{
		reader: fake.NewClientBuilder().WithScheme(scheme.New()).Build(), kind: yurtAppDaemonOwnerKind(), clock: clock,
		now: func() time.Time { return time.Unix(100, 0) },
	}
	q := &fakeQueue{}
	h.Create(context.Background(), event.CreateEvent{Object: pool("initial", nil).Obj(), IsInInitialList: true}, q)
	h.Create(context.Background(), event.CreateEvent{Object: pool("new", nil).Obj()}, q)
	if _, ok := clock.seen("initial"); ok {
		t.Error("a pool of the initial list was recorded as created")
	}
	if at, ok := clock.seen("new"); !ok || !at.Equal(time.Unix(100, 0)) {
		t.Errorf("new pool recorded at %v, %v", at, ok)
	}
	h.Delete(context.Background(), event.DeleteEvent{Object: pool("new", nil).Obj()}, q)
	if _, ok := clock.seen("new"); ok {
		t.Error("a deleted pool is still recorded")
	}
}

func TestChildHandler(t *testing.T) {
	deployment := func(refs ...metav1.OwnerReference) *appsv1.Deployment {
		d := child("dns-east", "east", refs...)
		d.Generation = 1
		return d
	}
	tests := map[string]struct {
		event     func(k kindCase, h handler.EventHandler, q *fakeQueue)
		wantAdded []string
		wantAfter []string
	}{
		"create maps to the controller owner of this kind": {
			event: func(k kindCase, h handler.EventHandler, q *fakeQueue) {
				h.Create(context.Background(), event.CreateEvent{Object: deployment(k.ref())}, q)
			},
			wantAdded: []string{"apps/dns"},
		},
		"delete maps to the controller owner of this kind": {
			event: func(k kindCase, h handler.EventHandler, q *fakeQueue) {
				h.Delete(context.Background(), event.DeleteEvent{Object: deployment(k.ref())}, q)
			},
			wantAdded: []string{"apps/dns"},
		},
		"a controller owner of the other kind is ignored": {
			event: func(k kindCase, h handler.EventHandler, q *fakeQueue) {
				ref := k.ref()
				ref.Kind = otherKind(k)
				h.Create(context.Background(), event.CreateEvent{Object: deployment(ref)}, q)
			},
		},
		"an owner that is not the controller is ignored": {
			event: func(k kindCase, h handler.EventHandler, q *fakeQueue) {
				ref := k.ref()
				ref.Controller = nil
				h.Create(context.Background(), event.CreateEvent{Object: deployment(ref)}, q)
			},
		},
		"a kind of the same name in another group is ignored": {
			event: func(k kindCase, h handler.EventHandler, q *fakeQueue) {
				ref := k.ref()
				ref.APIVersion = "example.com/v1"
				h.Create(context.Background(), event.CreateEvent{Object: deployment(ref)}, q)
			},
		},
		"a status-only update is delayed": {
			event: func(k kindCase, h handler.EventHandler, q *fakeQueue) {
				newObj := deployment(k.ref())
				newObj.Status.ReadyReplicas = 1
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: deployment(k.ref()), ObjectNew: newObj}, q)
			},
			wantAfter: []string{"apps/dns"},
		},
		"a label change is immediate": {
			event: func(k kindCase, h handler.EventHandler, q *fakeQueue) {
				newObj := deployment(k.ref())
				delete(newObj.Labels, openyurtv1alpha1.LabelPoolName)
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: deployment(k.ref()), ObjectNew: newObj}, q)
			},
			wantAdded: []string{"apps/dns"},
		},
		"a generation change is immediate": {
			event: func(k kindCase, h handler.EventHandler, q *fakeQueue) {
				newObj := deployment(k.ref())
				newObj.Generation = 2
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: deployment(k.ref()), ObjectNew: newObj}, q)
			},
			wantAdded: []string{"apps/dns"},
		},
		"an ownership change enqueues the old and the new owner": {
			event: func(k kindCase, h handler.EventHandler, q *fakeQueue) {
				other := k.ref()
				other.Name, other.UID = "dns2", "uid2"
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: deployment(k.ref()), ObjectNew: deployment(other)}, q)
			},
			wantAdded: []string{"apps/dns", "apps/dns2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			forEachKind(t, func(t *testing.T, k kindCase) {
				h, _ := handlersFor(k)
				q := &fakeQueue{}
				tc.event(k, h, q)
				added, after := q.sorted()
				if diff := cmp.Diff(tc.wantAdded, added); diff != "" {
					t.Errorf("enqueued (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantAfter, after); diff != "" {
					t.Errorf("delayed (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestChildWatchIgnoresForeignStatefulSets: when PersistentPodState has every StatefulSet of the cluster
// cached, one YurtAppDaemon does not own reaches neither the child watch (no pool label: the watch's
// predicate drops it) nor, were it labelled, a queue (no controller owner of the kind).
func TestChildWatchIgnoresForeignStatefulSets(t *testing.T) {
	foreign := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "apps",
		Labels: map[string]string{"app": "db"}}}
	if isPoolChild(foreign) {
		t.Error("a StatefulSet without apps.openyurt.io/pool-name passes the child watch's predicate")
	}
	owned := child("dns-east", "east")
	if !isPoolChild(owned) {
		t.Error("a child with apps.openyurt.io/pool-name does not pass the child watch's predicate")
	}
	forEachKind(t, func(t *testing.T, k kindCase) {
		h, _ := handlersFor(k)
		q := &fakeQueue{}
		labelled := foreign.DeepCopy()
		labelled.Labels[openyurtv1alpha1.LabelPoolName] = "east"
		h.Create(context.Background(), event.CreateEvent{Object: labelled}, q)
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: labelled, ObjectNew: labelled.DeepCopy()}, q)
		if added, after := q.sorted(); len(added)+len(after) > 0 {
			t.Errorf("a StatefulSet no owner controls was enqueued: %v %v", added, after)
		}
	})
}
