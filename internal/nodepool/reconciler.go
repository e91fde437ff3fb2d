package nodepool

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/nodepool/membership"
)

// +kubebuilder:rbac:groups=apps.openyurt.io,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.openyurt.io,resources=nodepools/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Config holds what a Reconciler needs.
type Config struct {
	// Client reads from the manager's cache, with the indexes of membership.Indexes.
	Client client.Client
	// Recorder emits events.k8s.io events.
	Recorder events.EventRecorder
	// SyncNodeAttributes propagates pool labels, annotations and taints to members and strips them from nodes
	// that left a pool (--nodepool-sync-node-attributes).
	SyncNodeAttributes bool
	// NodeWriteConcurrency bounds the node patches of one pass in flight (--nodepool-node-write-concurrency;
	// defaultNodeWriteConcurrency when not positive).
	NodeWriteConcurrency int
}

// Reconciler reconciles one NodePool: nodes asking to join it get its membership label, its members get its
// attributes, nodes that left a pool lose the attributes drover wrote on them, and its status counts its
// members.
type Reconciler struct {
	cfg Config
	// backoff spaces the retries of pools whose writes lose races.
	backoff *kit.Backoff
}

// NewReconciler returns a Reconciler with its defaults filled and its conflict backoff.
func NewReconciler(cfg Config) *Reconciler {
	if cfg.NodeWriteConcurrency <= 0 {
		cfg.NodeWriteConcurrency = defaultNodeWriteConcurrency
	}
	return &Reconciler{cfg: cfg, backoff: kit.NewBackoff()}
}

// pass is what one reconcile comes to: its outcome and the events it emits once its writes are done.
type pass struct {
	out    kit.Outcome
	events kit.Events
}

// Reconcile is keyed by the pool name.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var p pass
	pool, err := r.getPool(ctx, req.Name)
	switch {
	case err != nil:
		p.out.Error(err)
	case pool == nil:
		r.reconcileMissingPool(ctx, req.Name, &p)
	default:
		r.reconcilePool(ctx, pool, &p)
	}
	return r.backoff.Result(req.NamespacedName, &p.out)
}

// getPool reads the pool from the cache; nil means it does not exist.
func (r *Reconciler) getPool(ctx context.Context, name string) (*openyurtv1beta2.NodePool, error) {
	pool := &openyurtv1beta2.NodePool{}
	if err := r.cfg.Client.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting NodePool %s: %w", name, err)
	}
	return pool, nil
}

// reconcilePool writes the node changes of an existing pool, then its status, then emits the events of the
// pass if the status write succeeded.
func (r *Reconciler) reconcilePool(ctx context.Context, pool *openyurtv1beta2.NodePool, p *pass) {
	obs, err := r.observe(ctx, pool.Name)
	if err != nil {
		p.out.Error(err)
		return
	}
	changes := planNodeChanges(pool, obs, r.cfg.SyncNodeAttributes)
	outcomes := r.patchNodes(ctx, changes)
	p.recordPatches(pool, changes, outcomes)

	status := withMembers(pool.Status, ComputeStatus(membersAfter(obs.members, changes, outcomes)))
	_, err = p.events.EmitAfter(r.cfg.Recorder, pool, func() (bool, error) {
		return kit.WriteStatus(ctx, r.cfg.Client, pool, poolStatus, &status, statusEqual)
	})
	p.out.Error(err)
}

// reconcileMissingPool handles a key whose pool does not exist: nodes asking to join it get a Warning
// NodePoolNotFound (the pool's creation will trigger the join), and nodes that left a pool are still cleaned.
// There is no status to write: the events are emitted after the node writes.
func (r *Reconciler) reconcileMissingPool(ctx context.Context, name string, p *pass) {
	waiting, err := r.joiners(ctx, name)
	if err != nil {
		p.out.Error(err)
		return
	}
	stale, err := r.listNodes(ctx, membership.IndexNodeStaleAttributes, membership.StaleAttributesValue)
	if err != nil {
		p.out.Error(err)
		return
	}
	changes := planLeavers(stale)
	p.recordPatches(nil, changes, r.patchNodes(ctx, changes))
	for _, n := range waiting {
		p.events.On(n).Warning(openyurtv1beta2.ReasonNodePoolNotFound, actionJoin, nil,
			"NodePool %s named by label %s does not exist; the node joins it once it is created",
			name, openyurtv1beta2.LabelDesiredNodePool)
	}
	p.events.Emit(r.cfg.Recorder, nil) // each event names its node
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

// poolStatus and statusEqual give kit.WriteStatus the pool's status and its comparison.
func poolStatus(pool *openyurtv1beta2.NodePool) *openyurtv1beta2.NodePoolStatus { return &pool.Status }

func statusEqual(a, b *openyurtv1beta2.NodePoolStatus) bool { return StatusEqual(*a, *b) }

// recordPatches folds the node patches into the pass: a lost race (a conflict, or a node that vanished since
// it was read) requeues, an error is returned (a patch refused for its content is not retried: see
// kit.Outcome). It buffers a Warning InvalidPreviousAttributes on each node
// whose annotation did not decode and, on the pool (nil: none), one Warning NodeSyncFailed naming the nodes
// whose patch failed.
func (p *pass) recordPatches(pool *openyurtv1beta2.NodePool, changes []nodeChange, outcomes []patchOutcome) {
	var failed []string
	var firstErr error
	for i, c := range changes {
		if c.invalidPrev != nil {
			p.events.On(c.base).Warning(openyurtv1beta2.ReasonInvalidPreviousAttributes, actionSyncAttributes, nil,
				"Annotation %s does not decode and was treated as empty: %v", openyurtv1beta2.AnnotationPrevAttrs, c.invalidPrev)
		}
		switch outcomes[i].result {
		case patchConflict:
			p.out.Conflict()
		case patchError:
			p.out.Error(outcomes[i].err)
			failed = append(failed, c.base.Name)
			if firstErr == nil {
				firstErr = outcomes[i].err
			}
		}
	}
	if len(failed) > 0 && pool != nil {
		p.events.On(pool).Warning(openyurtv1beta2.ReasonNodeSyncFailed, actionSyncAttributes, nil,
			"Patching %d node(s) failed: %s; the first: %v", len(failed), kit.NameList(failed), firstErr)
	}
}
