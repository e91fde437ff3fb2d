package nodepool

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/nodepool/membership"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

// defaultNodeWriteConcurrency bounds the node patches of one pass in flight when
// Config.NodeWriteConcurrency is not set.
const defaultNodeWriteConcurrency = 8

// observation is what one reconcile reads from the cache. The nodes are shared with the cache: never modify
// them, copy first.
type observation struct {
	// members carry the pool's membership label.
	members []*corev1.Node
	// joiners ask to join the pool (desired label) and belong to no pool.
	joiners []*corev1.Node
	// stale carry pool attributes but belong to no pool, whatever pool they left.
	stale []*corev1.Node
}

// nodeChange is one node write: base as observed, target as wanted.
type nodeChange struct {
	base, target *corev1.Node
	// join says the write adds the membership label.
	join bool
	// invalidPrev is the decode error of the node's previous-attributes annotation, if any.
	invalidPrev error
}

// planNodeChanges computes the node writes of one pass (pure): joins and attribute propagation unless the
// pool is being deleted, and the cleanup of nodes that left a pool. Attribute propagation happens only with
// sync. A node appears at most once; unchanged nodes are left out.
func planNodeChanges(pool *openyurtv1beta2.NodePool, obs observation, sync bool) []nodeChange {
	p := planner{planned: make(map[string]bool)}
	if pool.DeletionTimestamp.IsZero() {
		want := PoolAttributes(pool)
		p.joins(pool, obs.joiners, want, sync)
		if sync {
			p.members(pool, obs.members, want)
		}
	}
	// The cleanup is not under the attribute-sync flag: nodes that left a pool lose what drover once wrote on them,
	// also after the flag was turned off.
	p.leavers(obs.stale)
	return p.changes
}

// planner accumulates the node changes of one pass.
type planner struct {
	changes []nodeChange
	planned map[string]bool
}

func (p *planner) add(c nodeChange) {
	if p.planned[c.base.Name] {
		return
	}
	p.planned[c.base.Name] = true
	p.changes = append(p.changes, c)
}

// joins sets the membership label on each joiner and, with sync, the pool attributes, in the same write.
func (p *planner) joins(pool *openyurtv1beta2.NodePool, joiners []*corev1.Node, want Attributes, sync bool) {
	for _, n := range joiners {
		target := n.DeepCopy()
		target.Labels = setKey(target.Labels, openyurtv1beta2.LabelCurrentNodePool, pool.Name)
		var decodeErr error
		if sync {
			target, _, decodeErr = ConciliateNode(target, want, pool.Spec.HostNetwork)
		}
		p.add(nodeChange{base: n, target: target, join: true, invalidPrev: decodeErr})
	}
}

// members brings each member's attributes to what the pool wants.
func (p *planner) members(pool *openyurtv1beta2.NodePool, members []*corev1.Node, want Attributes) {
	for _, n := range members {
		if target, changed, decodeErr := ConciliateNode(n, want, pool.Spec.HostNetwork); changed {
			p.add(nodeChange{base: n, target: target, invalidPrev: decodeErr})
		}
	}
}

// leavers strips the recorded attributes from nodes that belong to no pool any more.
func (p *planner) leavers(stale []*corev1.Node) {
	for _, n := range stale {
		if target, changed, decodeErr := ConciliateNode(n, Attributes{}, false); changed {
			p.add(nodeChange{base: n, target: target, invalidPrev: decodeErr})
		}
	}
}

// planLeavers computes the cleanup of nodes that left a pool, on its own.
func planLeavers(stale []*corev1.Node) []nodeChange {
	p := planner{planned: make(map[string]bool)}
	p.leavers(stale)
	return p.changes
}

// patchOutcome is the result of one node write, in the order of the changes.
type patchOutcome struct {
	// result is patchSuccess, patchConflict or patchError.
	result string
	err    error
}

// patchNodes writes the changes, at most NodeWriteConcurrency at a time; every change is attempted.
func (r *Reconciler) patchNodes(ctx context.Context, changes []nodeChange) []patchOutcome {
	attempts := kit.Run(ctx, kit.Executor{Max: r.cfg.NodeWriteConcurrency}, changes, func(ctx context.Context, c nodeChange) (patchOutcome, error) {
		return r.patchNode(ctx, c), nil
	})
	out := make([]patchOutcome, len(changes))
	for i, a := range attempts {
		out[i] = a.Out
		if a.Err != nil { // a panic in the write
			out[i] = patchOutcome{result: patchError, err: fmt.Errorf("patching node %s: %w", changes[i].base.Name, a.Err)}
		}
		nodePatches.WithLabelValues(out[i].result).Inc()
	}
	return out
}

// patchNode writes one change as a single merge patch of labels, annotations and taints, with the observed
// resourceVersion as precondition: the node lifecycle controller edits taints too, and a lost update there
// could drop its NoExecute taint.
func (r *Reconciler) patchNode(ctx context.Context, c nodeChange) patchOutcome {
	target := c.target.DeepCopy()
	patch := client.MergeFromWithOptions(c.base, client.MergeFromWithOptimisticLock{})
	err := r.cfg.Client.Patch(ctx, target, patch)
	switch {
	case err == nil:
		log := ctrl.LoggerFrom(ctx)
		if c.join {
			log.Info("Node joined pool", "node", klog.KObj(c.base), "nodepool", membership.PoolOf(target))
		} else {
			log.V(1).Info("Node attributes updated", "node", klog.KObj(c.base))
		}
		return patchOutcome{result: patchSuccess}
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return patchOutcome{result: patchConflict, err: err}
	default:
		return patchOutcome{result: patchError, err: fmt.Errorf("patching node %s: %w", c.base.Name, err)}
	}
}

// listNodes lists nodes from the cache by one index key. The nodes are shared with the cache.
func (r *Reconciler) listNodes(ctx context.Context, index, value string) ([]*corev1.Node, error) {
	var list corev1.NodeList
	if err := r.cfg.Client.List(ctx, &list, client.MatchingFields{index: value}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes by %s=%s: %w", index, value, err)
	}
	nodes := make([]*corev1.Node, 0, len(list.Items))
	for i := range list.Items {
		nodes = append(nodes, &list.Items[i])
	}
	return nodes, nil
}

// observe reads the pool's members, the nodes asking to join it and the nodes holding stale attributes.
func (r *Reconciler) observe(ctx context.Context, poolName string) (observation, error) {
	var obs observation
	var err error
	if obs.members, err = r.listNodes(ctx, membership.IndexNodeMembership, poolName); err != nil {
		return obs, err
	}
	if obs.joiners, err = r.joiners(ctx, poolName); err != nil {
		return obs, err
	}
	if obs.stale, err = r.listNodes(ctx, membership.IndexNodeStaleAttributes, membership.StaleAttributesValue); err != nil {
		return obs, err
	}
	return obs, nil
}

// joiners returns the nodes that ask to join the pool and belong to none: a membership label that is set is
// never overwritten from the desired label.
func (r *Reconciler) joiners(ctx context.Context, poolName string) ([]*corev1.Node, error) {
	desired, err := r.listNodes(ctx, membership.IndexNodeDesiredPool, poolName)
	if err != nil {
		return nil, err
	}
	var out []*corev1.Node
	for _, n := range desired {
		if membership.PoolOf(n) == "" {
			out = append(out, n)
		}
	}
	return out, nil
}
