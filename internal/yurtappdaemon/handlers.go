package yurtappdaemon

import (
	"context"
	"maps"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

// statusOnlyDelay is how long a child update that changes only its status waits, so bursts coalesce.
const statusOnlyDelay = time.Second

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// childHandler maps Deployment and StatefulSet events to the child's controller owner, if that owner is of
// the controller's kind.
type childHandler struct{ gvk schema.GroupVersionKind }

var _ handler.EventHandler = childHandler{}

func (h childHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	h.enqueue(q, e.Object, 0)
}

func (h childHandler) Delete(_ context.Context, e event.DeleteEvent, q queue) {
	h.enqueue(q, e.Object, 0)
}

func (h childHandler) Generic(_ context.Context, e event.GenericEvent, q queue) {
	h.enqueue(q, e.Object, 0)
}

// Update enqueues at once on a change of generation, labels, annotations, ownerReferences or deletion (the
// old and the new controller owner), and after statusOnlyDelay otherwise (status updates).
func (h childHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return
	}
	if !childMetaChanged(e.ObjectOld, e.ObjectNew) {
		h.enqueue(q, e.ObjectNew, statusOnlyDelay)
		return
	}
	oldReq, oldOK := h.ownerOf(e.ObjectOld)
	if newReq, newOK := h.ownerOf(e.ObjectNew); newOK {
		q.Add(newReq)
		if oldOK && oldReq == newReq {
			return
		}
	}
	if oldOK {
		q.Add(oldReq)
	}
}

func (h childHandler) enqueue(q queue, obj client.Object, after time.Duration) {
	req, ok := h.ownerOf(obj)
	switch {
	case !ok:
	case after > 0:
		q.AddAfter(req, after)
	default:
		q.Add(req)
	}
}

// ownerOf returns the request of obj's controller owner, if that owner is of this kind.
func (h childHandler) ownerOf(obj client.Object) (reconcile.Request, bool) {
	if obj == nil {
		return reconcile.Request{}, false
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != h.gvk.Kind {
		return reconcile.Request{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != h.gvk.Group {
		return reconcile.Request{}, false
	}
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}}, true
}

// childMetaChanged reports whether an update changed what makes an immediate reconcile worth it.
func childMetaChanged(oldObj, newObj client.Object) bool {
	return oldObj.GetGeneration() != newObj.GetGeneration() ||
		!maps.Equal(oldObj.GetLabels(), newObj.GetLabels()) ||
		!maps.Equal(oldObj.GetAnnotations(), newObj.GetAnnotations()) ||
		!apiequality.Semantic.DeepEqual(oldObj.GetOwnerReferences(), newObj.GetOwnerReferences()) ||
		oldObj.GetDeletionTimestamp().IsZero() != newObj.GetDeletionTimestamp().IsZero()
}

// poolHandler maps NodePool events to the owners of one kind, in any namespace, whose nodepoolSelector
// matches the pool's old or new labels. Only creates, deletes and updates of labels, taints or the
// deletion timestamp count; status and annotation updates are dropped.
type poolHandler[T openyurtv1alpha1.Owner] struct {
	reader client.Reader
	kind   ownerKind[T]
	clock  *poolClock
	now    func() time.Time
}

var _ handler.EventHandler = poolHandler[*openyurtv1alpha1.YurtAppDaemon]{}

func (h poolHandler[T]) Create(ctx context.Context, e event.CreateEvent, q queue) {
	if e.Object == nil {
		return
	}
	if !e.IsInInitialList {
		h.clock.record(e.Object.GetName(), h.now())
	}
	h.enqueue(ctx, q, e.Object.GetLabels())
}

func (h poolHandler[T]) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	if e.Object == nil {
		return
	}
	h.clock.forget(e.Object.GetName())
	h.enqueue(ctx, q, e.Object.GetLabels())
}

func (h poolHandler[T]) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	oldPool, okOld := e.ObjectOld.(*openyurtv1beta1.NodePool)
	newPool, okNew := e.ObjectNew.(*openyurtv1beta1.NodePool)
	if !okOld || !okNew || !poolChangeRelevant(oldPool, newPool) {
		return
	}
	h.enqueue(ctx, q, oldPool.Labels, newPool.Labels)
}

func (h poolHandler[T]) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	if e.Object != nil {
		h.enqueue(ctx, q, e.Object.GetLabels())
	}
}

// poolChangeRelevant reports whether a NodePool update can change an owner's children: its labels (selection
// and tweaks), its taints (tolerations) or the start of its deletion.
func poolChangeRelevant(oldPool, newPool *openyurtv1beta1.NodePool) bool {
	return !maps.Equal(oldPool.Labels, newPool.Labels) ||
		!apiequality.Semantic.DeepEqual(oldPool.Spec.Taints, newPool.Spec.Taints) ||
		oldPool.DeletionTimestamp.IsZero() != newPool.DeletionTimestamp.IsZero()
}

func (h poolHandler[T]) enqueue(ctx context.Context, q queue, poolLabels ...map[string]string) {
	reqs, err := ownersSelecting(ctx, h.reader, h.kind, poolLabels...)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing owners for a NodePool event failed", "kind", h.kind.gvk.Kind)
		return
	}
	for _, req := range reqs {
		q.Add(req)
	}
}

// ownersSelecting lists the owners of a kind from the cache and returns those whose nodepoolSelector matches
// any of the label sets. An absent selector matches nothing; a selector that does not convert is skipped.
func ownersSelecting[T openyurtv1alpha1.Owner](ctx context.Context, reader client.Reader, kind ownerKind[T],
	poolLabels ...map[string]string) ([]reconcile.Request, error) {
	list := kind.newList()
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []reconcile.Request
	for _, owner := range kind.items(list) {
		ps := owner.DaemonSpec().NodePoolSelector
		if ps == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(ps)
		if err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("Skipping an owner whose nodepoolSelector does not convert",
				"owner", klog.KObj(owner), "error", err.Error())
			continue
		}
		for _, l := range poolLabels {
			if sel.Matches(labels.Set(l)) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(owner)})
				break
			}
		}
	}
	return out, nil
}

// poolClockTTL bounds how long a NodePool create time is remembered for pool_provision_seconds.
const poolClockTTL = 10 * time.Minute

// poolClock remembers when the controller saw NodePools created, for pool_provision_seconds.
type poolClock struct {
	mu      sync.Mutex
	created map[string]time.Time
}

func newPoolClock() *poolClock { return &poolClock{created: map[string]time.Time{}} }

func (c *poolClock) record(pool string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, seen := range c.created {
		if t.Sub(seen) > poolClockTTL {
			delete(c.created, p)
		}
	}
	if _, ok := c.created[pool]; !ok {
		c.created[pool] = t
	}
}

func (c *poolClock) seen(pool string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.created[pool]
	return t, ok
}

func (c *poolClock) forget(pool string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.created, pool)
}
