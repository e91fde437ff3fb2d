package tapp

import (
	"context"
	"testing"

	"github.com/drover-dev/drover/internal/tapp/core"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

func newQueue() queue {
	return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
}

func drain(q queue) []string {
	var out []string
	for q.Len() > 0 {
		req, _ := q.Get()
		out = append(out, req.String())
		q.Done(req)
	}
	return out
}

func TestPodHandler(t *testing.T) {
	app := newApp(2).Obj()
	owned := runningPod(core.NewPass(app, core.Options{}), 1)
	orphan := owned.DeepCopy()
	orphan.OwnerReferences = nil
	otherOwner := owned.DeepCopy()
	otherOwner.OwnerReferences[0].Name, otherOwner.OwnerReferences[0].UID = "other", "other-uid"
	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-3", Namespace: testNS}}
	unrelated := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-7d9f8-x2x4z", Namespace: testNS}}
	tests := map[string]struct {
		send func(h podHandler, q queue)
		want []string
	}{
		"an owned pod maps to its TApp": {
			send: func(h podHandler, q queue) { h.Create(context.Background(), event.CreateEvent{Object: owned}, q) },
			want: []string{"ns/web"},
		},
		"an adoptable orphan maps to the TApp of its name": {
			send: func(h podHandler, q queue) { h.Create(context.Background(), event.CreateEvent{Object: orphan}, q) },
			want: []string{"ns/web"},
		},
		"a change of controller enqueues both": {
			send: func(h podHandler, q queue) {
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: owned, ObjectNew: otherOwner}, q)
			},
			want: []string{"ns/other", "ns/web"},
		},
		"a deleted foreign pod named <tapp>-<id> frees a name": {
			send: func(h podHandler, q queue) { h.Delete(context.Background(), event.DeleteEvent{Object: foreign}, q) },
			want: []string{"ns/db"},
		},
		"other pods map to nothing": {
			send: func(h podHandler, q queue) {
				h.Create(context.Background(), event.CreateEvent{Object: foreign}, q)
				h.Delete(context.Background(), event.DeleteEvent{Object: unrelated}, q)
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q := newQueue()
			tc.send(podHandler{exp: newExpectations()}, q)
			got := drain(q)
			if diff := cmp.Diff(tc.want, got, cmpSorted); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodHandlerDeleteSatisfiesExpectations(t *testing.T) {
	app := newApp(1).Obj()
	pod := runningPod(core.NewPass(app, core.Options{}), 0)
	exp := newExpectations()
	key := types.NamespacedName{Namespace: testNS, Name: testName}
	exp.expect(key, testUID, 0, &expectation{kind: expectCreate, uid: pod.UID, rv: "99", at: t0})
	podHandler{exp: exp}.Delete(context.Background(), event.DeleteEvent{Object: pod}, newQueue())
	if got := exp.pending(key, testUID, core.Pods{}, t0); len(got) != 0 {
		t.Errorf("pending after the delete event: %v", got)
	}
}

func TestNodeHandler(t *testing.T) {
	app := newApp(2).Obj()
	p := core.NewPass(app, core.Options{})
	onLost := runningPod(p, 0)
	onLost.DeletionTimestamp, onLost.Finalizers, onLost.Spec.NodeName = &mt0, []string{"x"}, "n1"
	alive := runningPod(p, 1) // not terminating: not indexed
	alive.Spec.NodeName = "n1"
	f := newFixture(t, []client.Object{app, onLost, alive}, interceptor.Funcs{})
	h := nodeHandler{reader: f.inner}
	node := func(status corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
	}
	q := newQueue()
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: node("True"), ObjectNew: node("True")}, q)
	if got := drain(q); len(got) != 0 {
		t.Errorf("an update without a Ready change enqueued %v", got)
	}
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: node("True"), ObjectNew: node("Unknown")}, q)
	h.Delete(context.Background(), event.DeleteEvent{Object: node("Unknown")}, q)
	if diff := cmp.Diff([]string{"ns/web"}, drain(q)); diff != "" {
		t.Errorf("enqueued (-want +got):\n%s", diff)
	}
}

func TestIndexes(t *testing.T) {
	app := newApp(1).Obj()
	pod := runningPod(core.NewPass(app, core.Options{}), 0)
	if got := podControllerValues(pod); !cmp.Equal(got, []string{string(testUID)}) {
		t.Errorf("controller index of an owned pod = %v", got)
	}
	notTApp := pod.DeepCopy()
	notTApp.OwnerReferences[0].Kind = "StatefulSet"
	if got := podControllerValues(notTApp); got != nil {
		t.Errorf("controller index of a StatefulSet pod = %v", got)
	}
	orphan := pod.DeepCopy()
	orphan.OwnerReferences = nil
	if got := orphanPodValues(orphan); !cmp.Equal(got, []string{testName}) {
		t.Errorf("orphan index = %v", got)
	}
	orphan.Labels[tkestackv1.TAppInstanceKey] = "01"
	if got := orphanPodValues(orphan); got != nil {
		t.Errorf("orphan index with a non-canonical id = %v", got)
	}
}

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })
