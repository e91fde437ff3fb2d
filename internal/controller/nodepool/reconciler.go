package nodepool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-dev/drover/internal/controller/nodepool/membership"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

// conflictRequeueDelay is how soon a pool is retried after a write lost a race (a conflict, or a node that
// vanished): long enough for the cache to catch up.
const conflictRequeueDelay = time.Second

// +kubebuilder:rbac:groups=apps.openyurt.io,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.openyurt.io,resources=nodepools/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles one NodePool: nodes joining it (NP-3), its attributes on its members (NP-4), the
// cleanup of nodes that left a pool (NP-5) and its status (NP-6).
type Reconciler struct {
	// Client reads from the manager's cache, with the indexes of SetupIndexes.
	Client client.Client
	// Recorder emits events.k8s.io events.
	Recorder events.EventRecorder
	// SyncNodeAttributes propagates pool labels, annotations and taints to members and strips them from nodes
	// that left a pool.
	SyncNodeAttributes bool
	// NodeWriteConcurrency bounds the node patches of one pass in flight (8 when not positive).
	NodeWriteConcurrency int
}

// Reconcile is keyed by the pool name.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool, err := r.getPool(ctx, req.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if pool == nil {
		return r.reconcileMissingPool(ctx, req.Name)
	}
	obs, err := r.observe(ctx, pool.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	changes := planNodeChanges(pool, obs, r.SyncNodeAttributes)
	outcomes := r.patchNodes(ctx, changes)

	status := ComputeStatus(membersAfter(obs.members, changes, outcomes))
	statusErr := r.writeStatus(ctx, pool, status)

	r.emitNodeEvents(pool, changes, outcomes)
	return result(append(outcomes, statusOutcome(statusErr)))
}

// getPool reads the pool from the cache; nil means it does not exist.
func (r *Reconciler) getPool(ctx context.Context, name string) (*openyurtv1beta1.NodePool, error) {
	pool := &openyurtv1beta1.NodePool{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting NodePool %s: %w", name, err)
	}
	return pool, nil
}

// reconcileMissingPool handles a key whose pool does not exist: nodes asking to join it get a Warning
// NodePoolNotFound (the pool's creation will trigger the join), and nodes that left a pool are still cleaned.
func (r *Reconciler) reconcileMissingPool(ctx context.Context, name string) (ctrl.Result, error) {
	waiting, err := r.joiners(ctx, name)
	if err != nil {
		return ctrl.Result{}, err
	}
	stale, err := r.listNodes(ctx, membership.IndexNodeStaleAttributes, membership.StaleAttributesValue)
	if err != nil {
		return ctrl.Result{}, err
	}
	changes := planLeavers(stale)
	outcomes := r.patchNodes(ctx, changes)
	r.emitNodeEvents(nil, changes, outcomes)
	for _, n := range waiting {
		r.Recorder.Eventf(n, nil, corev1.EventTypeWarning, ReasonNodePoolNotFound, actionJoin,
			"NodePool %s named by label %s does not exist; the node joins it once it is created",
			name, openyurtv1beta1.LabelDesiredNodePool)
	}
	return result(outcomes)
}

// membersAfter returns the pool's members once the changes are written: the observed members plus the nodes
// that joined.
func membersAfter(members []*corev1.Node, changes []nodeChange, outcomes []patchOutcome) []*corev1.Node {
	out := members
	for i, c := range changes {
		if c.join && outcomes[i].result == patchSuccess {
			out = append(out[:len(out):len(out)], c.target)
		}
	}
	return out
}

// writeStatus writes the status through the status subresource, only if it changed, with the observed
// resourceVersion as precondition.
func (r *Reconciler) writeStatus(ctx context.Context, pool *openyurtv1beta1.NodePool, status openyurtv1beta1.NodePoolStatus) error {
	if StatusEqual(pool.Status, status) {
		return nil
	}
	updated := pool.DeepCopy()
	updated.Status = status
	patch := client.MergeFromWithOptions(pool, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Status().Patch(ctx, updated, patch); err != nil {
		return fmt.Errorf("writing status of NodePool %s: %w", pool.Name, err)
	}
	return nil
}

// statusOutcome turns the status write error into an outcome like a node patch's.
func statusOutcome(err error) patchOutcome {
	switch {
	case err == nil:
		return patchOutcome{result: patchSuccess}
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return patchOutcome{result: patchConflict, err: err}
	default:
		return patchOutcome{result: patchError, err: err}
	}
}

// emitNodeEvents emits, after the writes, Warning InvalidPreviousAttributes on each node whose annotation did
// not decode and, on the pool, one Warning NodeSyncFailed naming the nodes whose patch failed.
func (r *Reconciler) emitNodeEvents(pool *openyurtv1beta1.NodePool, changes []nodeChange, outcomes []patchOutcome) {
	var failed []string
	for i, c := range changes {
		if c.invalidPrev != nil {
			r.Recorder.Eventf(c.base, nil, corev1.EventTypeWarning, ReasonInvalidPreviousAttributes, actionSyncAttributes,
				"Annotation %s does not decode and was treated as empty: %v", openyurtv1beta1.AnnotationPrevAttrs, c.invalidPrev)
		}
		if outcomes[i].result == patchError {
			failed = append(failed, c.base.Name)
		}
	}
	if len(failed) > 0 && pool != nil {
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, ReasonNodeSyncFailed, actionSyncAttributes,
			"Patching %d node(s) failed: %s", len(failed), nameList(failed))
	}
}

// result turns the outcomes of a pass into its return: errors are returned (joined) so the pool is retried
// with backoff; lost races only requeue, without an error log.
func result(outcomes []patchOutcome) (ctrl.Result, error) {
	var errs []error
	conflict := false
	for _, o := range outcomes {
		switch o.result {
		case patchError:
			errs = append(errs, o.err)
		case patchConflict:
			conflict = true
		}
	}
	if len(errs) > 0 {
		return ctrl.Result{}, errors.Join(errs...)
	}
	if conflict {
		return ctrl.Result{RequeueAfter: conflictRequeueDelay}, nil
	}
	return ctrl.Result{}, nil
}
