package nodepool

import (
	"context"
	"slices"

	"github.com/drover-dev/drover/internal/nodepool/membership"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

// poolPredicate lets through NodePool creates, deletes and updates that change the generation or start the
// deletion. The controller's own status writes change neither, so they do not retrigger it.
func poolPredicate() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldPool, okOld := e.ObjectOld.(*openyurtv1beta2.NodePool)
		newPool, okNew := e.ObjectNew.(*openyurtv1beta2.NodePool)
		return okOld && okNew && poolUpdateRelevant(oldPool, newPool)
	}}
}

func poolUpdateRelevant(oldPool, newPool *openyurtv1beta2.NodePool) bool {
	return oldPool.Generation != newPool.Generation ||
		oldPool.DeletionTimestamp.IsZero() != newPool.DeletionTimestamp.IsZero()
}

// nodeHandler maps Node events to the pools they concern.
type nodeHandler struct {
	// syncAttributes makes label, annotation and taint changes of a member enqueue its pool, so that
	// attributes removed by hand are put back.
	syncAttributes bool
}

var _ handler.EventHandler = nodeHandler{}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h nodeHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	if node, ok := e.Object.(*corev1.Node); ok {
		enqueue(q, poolsForNodeCreate(node))
	}
}

func (h nodeHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	oldNode, okOld := e.ObjectOld.(*corev1.Node)
	newNode, okNew := e.ObjectNew.(*corev1.Node)
	if okOld && okNew {
		enqueue(q, poolsForNodeUpdate(oldNode, newNode, h.syncAttributes))
	}
}

func (h nodeHandler) Delete(_ context.Context, e event.DeleteEvent, q queue) {
	if node, ok := e.Object.(*corev1.Node); ok {
		enqueue(q, poolsForNodeDelete(node))
	}
}

func (h nodeHandler) Generic(context.Context, event.GenericEvent, queue) {}

func enqueue(q queue, pools []string) {
	for _, p := range pools {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: p}})
	}
}

// poolsForNodeCreate: a new node concerns the pool it belongs to and the pool it asks to join.
func poolsForNodeCreate(node *corev1.Node) []string {
	return nonEmptyUnique(membership.PoolOf(node), membership.DesiredPoolOf(node))
}

// poolsForNodeDelete: a deleted node concerns the pool it belonged to.
func poolsForNodeDelete(node *corev1.Node) []string {
	return nonEmptyUnique(membership.PoolOf(node))
}

// poolsForNodeUpdate returns the pools an update concerns, or nothing for updates that change none of what the
// controller looks at (heartbeats above all):
//   - a membership change, a Ready status flip or (with attribute sync) a change of labels, annotations or
//     taints concerns the old and the new pool;
//   - a node that belongs to no pool and asks to join one concerns that pool when its labels for either
//     changed.
func poolsForNodeUpdate(oldNode, newNode *corev1.Node, syncAttributes bool) []string {
	membershipChanged := membership.PoolOf(oldNode) != membership.PoolOf(newNode)
	desiredChanged := membership.DesiredPoolOf(oldNode) != membership.DesiredPoolOf(newNode)
	relevant := membershipChanged || desiredChanged ||
		IsNodeReady(oldNode) != IsNodeReady(newNode) ||
		(syncAttributes && AttributesDiffer(oldNode, newNode))
	if !relevant {
		return nil
	}
	var joining string
	if membership.PoolOf(newNode) == "" && (membershipChanged || desiredChanged) {
		joining = membership.DesiredPoolOf(newNode)
	}
	return nonEmptyUnique(membership.PoolOf(oldNode), membership.PoolOf(newNode), joining)
}

func nonEmptyUnique(names ...string) []string {
	var out []string
	for _, n := range names {
		if n == "" || slices.Contains(out, n) {
			continue
		}
		out = append(out, n)
	}
	return out
}
