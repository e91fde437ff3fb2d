package stagedbindingpolicy

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// policyOfBindingPolicy maps a BindingPolicy name to the StagedBindingPolicy that generated it, through the
// BindingPolicy in the cache (its label, confirmed by its controller reference); "" for one drover did not
// make.
func policyOfBindingPolicy(ctx context.Context, reader client.Reader, name string) string {
	bp := &controlv1alpha1.BindingPolicy{}
	if name == "" || reader.Get(ctx, client.ObjectKey{Name: name}, bp) != nil {
		return ""
	}
	sbp := bp.Labels[communityv1alpha1.LabelStagedBindingPolicy]
	for _, ref := range bp.OwnerReferences {
		if ref.Kind == "StagedBindingPolicy" && ref.Name == sbp {
			return sbp
		}
	}
	return ""
}

// bindingHandler enqueues the policy of a Binding's BindingPolicy (same name) on every change: its
// destinations, workload entries and conditions all feed the gates.
func bindingHandler(reader client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return requestFor(policyOfBindingPolicy(ctx, reader, obj.GetName()))
	})
}

// namedBindingPolicyHandler enqueues, on every change of a BindingPolicy, the policies whose stages give
// their BindingPolicies its name but that do not control it: a stage waiting on someone else's BindingPolicy
// with its name (a conflict) goes on once that one is deleted, and one the stager left is adopted. The
// controlling policy comes through Owns.
func namedBindingPolicyHandler(reader client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list communityv1alpha1.StagedBindingPolicyList
		if err := reader.List(ctx, &list, client.MatchingFields{IndexPolicyBindingPolicyNames: obj.GetName()}); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			if c := metav1.GetControllerOfNoCopy(obj); c == nil || c.UID != list.Items[i].UID {
				out = append(out, requestFor(list.Items[i].Name)...)
			}
		}
		return out
	})
}

// combinedStatusHandler enqueues the policy of a CombinedStatus's BindingPolicy (its binding-policy label)
// when one is created or deleted or its results change (every change of results bumps its generation: the
// kind has no status subresource). Bursts coalesce in the workqueue: one pass per policy.
type combinedStatusHandler struct {
	reader client.Reader
}

var _ handler.EventHandler = combinedStatusHandler{}

func (h combinedStatusHandler) enqueue(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, req := range requestFor(policyOfBindingPolicy(ctx, h.reader, obj.GetLabels()[controlv1alpha1.LabelCombinedStatusBindingPolicy])) {
		q.Add(req)
	}
}

// Create enqueues the policy of a new CombinedStatus.
func (h combinedStatusHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, q)
}

// Update enqueues the policy when the results (the generation) or the labels changed.
func (h combinedStatusHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.ObjectOld.GetGeneration() == e.ObjectNew.GetGeneration() &&
		e.ObjectOld.GetLabels()[controlv1alpha1.LabelCombinedStatusBindingPolicy] == e.ObjectNew.GetLabels()[controlv1alpha1.LabelCombinedStatusBindingPolicy] {
		return
	}
	h.enqueue(ctx, e.ObjectNew, q)
	if old := e.ObjectOld.GetLabels()[controlv1alpha1.LabelCombinedStatusBindingPolicy]; old != e.ObjectNew.GetLabels()[controlv1alpha1.LabelCombinedStatusBindingPolicy] {
		h.enqueue(ctx, e.ObjectOld, q)
	}
}

// Delete enqueues the policy of a deleted CombinedStatus.
func (h combinedStatusHandler) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, q)
}

// Generic enqueues the policy of the object.
func (h combinedStatusHandler) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, q)
}

func requestFor(sbp string) []reconcile.Request {
	if sbp == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: sbp}}}
}
