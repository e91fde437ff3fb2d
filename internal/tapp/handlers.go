package tapp

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// podHandler maps pod events to TApps: a pod controlled by a TApp to that TApp (on an update also the
// previous controller, for releases), an orphan carrying tapp_instance_key and named <tapp>-<id> to the TApp
// of that name (adoption). A deleted pod satisfies the expectations about it, and any deleted pod named
// <tapp>-<id> enqueues <tapp>: the name may have been held by a pod of another owner (PodNameConflict), whose
// deletion no other event announces.
type podHandler struct{ exp *expectations }

var _ handler.EventHandler = podHandler{}

func (h podHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	h.enqueue(q, e.Object)
}

func (h podHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	oldReq, oldOK := podTApp(e.ObjectOld)
	newReq, newOK := podTApp(e.ObjectNew)
	if newOK {
		q.Add(newReq)
	}
	if oldOK && (!newOK || oldReq != newReq) {
		q.Add(oldReq)
	}
}

func (h podHandler) Delete(_ context.Context, e event.DeleteEvent, q queue) {
	if e.Object == nil {
		return
	}
	if ref := tappControllerRef(e.Object); ref != nil {
		h.exp.deletionObserved(types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: ref.Name}, ref.UID, e.Object.GetUID(), time.Now())
	}
	if req, ok := podTApp(e.Object); ok {
		q.Add(req)
	} else if name, ok := tappNameOfPodName(e.Object.GetName()); ok {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: name}})
	}
}

// tappNameOfPodName returns <tapp> for a pod name <tapp>-<id> with a canonical id.
func tappNameOfPodName(podName string) (string, bool) {
	i := strings.LastIndexByte(podName, '-')
	if i <= 0 {
		return "", false
	}
	if _, ok := tkestackv1.ParseInstanceID(podName[i+1:]); !ok {
		return "", false
	}
	return podName[:i], true
}

func (h podHandler) Generic(_ context.Context, e event.GenericEvent, q queue) {
	h.enqueue(q, e.Object)
}

func (h podHandler) enqueue(q queue, obj client.Object) {
	if req, ok := podTApp(obj); ok {
		q.Add(req)
	}
}

// podTApp returns the TApp a pod event concerns: its controller if that is a TApp, else the TApp that could
// adopt it.
func podTApp(obj client.Object) (reconcile.Request, bool) {
	if obj == nil {
		return reconcile.Request{}, false
	}
	name := ""
	if ref := tappControllerRef(obj); ref != nil {
		name = ref.Name
	} else if n, ok := orphanTAppName(obj); ok {
		name = n
	}
	if name == "" {
		return reconcile.Request{}, false
	}
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}, true
}

// nodeHandler enqueues, when a node's Ready condition changes or the node is deleted, the TApps that
// control terminating pods on it: those may now be force-deleted.
type nodeHandler struct{ reader client.Reader }

var _ handler.EventHandler = nodeHandler{}

func (h nodeHandler) Create(context.Context, event.CreateEvent, queue) {}

func (h nodeHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	oldNode, okOld := e.ObjectOld.(*corev1.Node)
	newNode, okNew := e.ObjectNew.(*corev1.Node)
	if !okOld || !okNew || nodeReady(oldNode) == nodeReady(newNode) {
		return
	}
	h.enqueueOwners(ctx, q, newNode.Name)
}

func (h nodeHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	if e.Object != nil {
		h.enqueueOwners(ctx, q, e.Object.GetName())
	}
}

func (h nodeHandler) Generic(context.Context, event.GenericEvent, queue) {}

func (h nodeHandler) enqueueOwners(ctx context.Context, q queue, node string) {
	list := &corev1.PodList{}
	if err := h.reader.List(ctx, list, client.MatchingFields{IndexTerminatingPodNode: node}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing terminating TApp pods of a node failed", "node", node)
		return
	}
	for i := range list.Items {
		if req, ok := podTApp(&list.Items[i]); ok {
			q.Add(req)
		}
	}
}

// nodeReady returns the status of a node's Ready condition ("" when it has none).
func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
