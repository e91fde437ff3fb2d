package nodepool

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/testutil"
)

func TestPoolsForNodeUpdate(t *testing.T) {
	member := func() *testutil.NodeWrapper { return testutil.MakeNode("n").Pool("p").Ready(true) }
	heartbeat := func(n *corev1.Node) *corev1.Node {
		n = n.DeepCopy()
		n.ResourceVersion = "2"
		for i := range n.Status.Conditions {
			n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(n.Status.Conditions[i].LastHeartbeatTime.Add(10e9))
		}
		return n
	}
	tests := map[string]struct {
		old, new *corev1.Node
		sync     bool
		want     []string
	}{
		"heartbeat only is dropped": {old: member().Obj(), new: heartbeat(member().Obj()), sync: true},
		"ready reason change without status flip is dropped": {
			old: member().Obj(),
			new: func() *corev1.Node {
				n := member().Obj()
				n.Status.Conditions[0].Reason = "Other"
				return n
			}(),
			sync: true,
		},
		"ready flip enqueues the pool":         {old: member().Obj(), new: member().Ready(false).Obj(), want: []string{"p"}},
		"ready condition appearing enqueues":   {old: testutil.MakeNode("n").Pool("p").Obj(), new: member().Obj(), want: []string{"p"}},
		"ready flip of a node in no pool":      {old: testutil.MakeNode("n").Ready(true).Obj(), new: testutil.MakeNode("n").Ready(false).Obj()},
		"membership added":                     {old: testutil.MakeNode("n").Obj(), new: testutil.MakeNode("n").Pool("p").Obj(), want: []string{"p"}},
		"membership changed enqueues both":     {old: testutil.MakeNode("n").Pool("p").Obj(), new: testutil.MakeNode("n").Pool("q").Obj(), want: []string{"p", "q"}},
		"membership removed enqueues the pool": {old: testutil.MakeNode("n").Pool("p").Obj(), new: testutil.MakeNode("n").Obj(), want: []string{"p"}},
		"membership removed with a desired pool enqueues both": {
			old:  testutil.MakeNode("n").Pool("p").DesiredPool("q").Obj(),
			new:  testutil.MakeNode("n").DesiredPool("q").Obj(),
			want: []string{"p", "q"},
		},
		"desired label set on a free node enqueues the desired pool": {
			old: testutil.MakeNode("n").Obj(), new: testutil.MakeNode("n").DesiredPool("q").Obj(), want: []string{"q"},
		},
		"desired label changed on a member enqueues only its pool": {
			old:  testutil.MakeNode("n").Pool("p").DesiredPool("p").Obj(),
			new:  testutil.MakeNode("n").Pool("p").DesiredPool("q").Obj(),
			want: []string{"p"},
		},
		"label change of a member with sync": {
			old: member().Obj(), new: member().Label("x", "y").Obj(), sync: true, want: []string{"p"},
		},
		"label change of a member without sync is dropped": {old: member().Obj(), new: member().Label("x", "y").Obj()},
		"annotation change of a member with sync": {
			old: member().Obj(), new: member().Annotations(map[string]string{"x": "y"}).Obj(), sync: true, want: []string{"p"},
		},
		"taint change of a member with sync": {
			old: member().Obj(), new: member().Taints(taint("k", "", corev1.TaintEffectNoSchedule)).Obj(), sync: true,
			want: []string{"p"},
		},
		"label change of a node in no pool": {
			old: testutil.MakeNode("n").Obj(), new: testutil.MakeNode("n").Label("x", "y").Obj(), sync: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, poolsForNodeUpdate(tc.old, tc.new, tc.sync)); diff != "" {
				t.Errorf("pools (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPoolsForNodeCreateAndDelete(t *testing.T) {
	tests := map[string]struct {
		node                   *corev1.Node
		wantCreate, wantDelete []string
	}{
		"no pool labels":        {node: testutil.MakeNode("n").Obj()},
		"member":                {node: testutil.MakeNode("n").Pool("p").Obj(), wantCreate: []string{"p"}, wantDelete: []string{"p"}},
		"asks to join":          {node: testutil.MakeNode("n").DesiredPool("q").Obj(), wantCreate: []string{"q"}},
		"member of its desired": {node: testutil.MakeNode("n").Pool("p").DesiredPool("p").Obj(), wantCreate: []string{"p"}, wantDelete: []string{"p"}},
		"member wanting another": {
			node: testutil.MakeNode("n").Pool("p").DesiredPool("q").Obj(), wantCreate: []string{"p", "q"}, wantDelete: []string{"p"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantCreate, poolsForNodeCreate(tc.node)); diff != "" {
				t.Errorf("create pools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDelete, poolsForNodeDelete(tc.node)); diff != "" {
				t.Errorf("delete pools (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPoolPredicate(t *testing.T) {
	base := func() *testutil.NodePoolWrapper { return testutil.MakeNodePool("p").Generation(1) }
	tests := map[string]struct {
		old, new *openyurtv1beta2.NodePool
		want     bool
	}{
		"status only (our own write)": {
			old: base().Hub(), new: base().Status(openyurtv1beta1.NodePoolStatus{ReadyNodeNum: 1, Nodes: []string{"n"}}).Hub(),
		},
		"object labels only": {old: base().Hub(), new: base().ObjectLabels(map[string]string{"a": "b"}).Hub()},
		"generation changed": {old: base().Hub(), new: base().Generation(2).Hub(), want: true},
		"deletion started":   {old: base().Hub(), new: base().Deleting().Hub(), want: true},
		"already deleting":   {old: base().Deleting().Hub(), new: base().Deleting().Hub()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := poolPredicate().Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new})
			if got != tc.want {
				t.Errorf("update passes = %t, want %t", got, tc.want)
			}
		})
	}
	if !poolPredicate().Create(event.CreateEvent{Object: base().Hub()}) {
		t.Errorf("create is filtered out")
	}
	if !poolPredicate().Delete(event.DeleteEvent{Object: base().Hub()}) {
		t.Errorf("delete is filtered out")
	}
}

// drain returns the names queued in q.
func drain(q queue) []string {
	var names []string
	for q.Len() > 0 {
		req, _ := q.Get()
		names = append(names, req.Name)
		q.Done(req)
	}
	return names
}

func TestNodeHandler(t *testing.T) {
	ctx := context.Background()
	h := nodeHandler{syncAttributes: true}
	member := testutil.MakeNode("n").Pool("p").Ready(true)
	tests := map[string]struct {
		fire func(q queue)
		want []string
	}{
		"create": {fire: func(q queue) { h.Create(ctx, event.CreateEvent{Object: member.Obj()}, q) }, want: []string{"p"}},
		"delete": {fire: func(q queue) { h.Delete(ctx, event.DeleteEvent{Object: member.Obj()}, q) }, want: []string{"p"}},
		"update moved": {fire: func(q queue) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: member.Obj(), ObjectNew: testutil.MakeNode("n").Pool("q").Obj()}, q)
		}, want: []string{"p", "q"}},
		"update no-op":    {fire: func(q queue) { h.Update(ctx, event.UpdateEvent{ObjectOld: member.Obj(), ObjectNew: member.Obj()}, q) }},
		"generic ignored": {fire: func(q queue) { h.Generic(ctx, event.GenericEvent{Object: member.Obj()}, q) }},
		"not a node":      {fire: func(q queue) { h.Create(ctx, event.CreateEvent{Object: testutil.MakeNodePool("p").Hub()}, q) }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			tc.fire(q)
			if diff := cmp.Diff(tc.want, drain(q)); diff != "" {
				t.Errorf("queued pools (-want +got):\n%s", diff)
			}
		})
	}
}
