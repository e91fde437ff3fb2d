package yurtappdaemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// defaultMaxBatch caps slow-start batches when Config.MaxBatch is not set (--yurtappdaemon-max-batch).
const defaultMaxBatch = 32

// nameConflictError reports that a child's name is taken by an object the owner does not control. It fails
// only its pool: it does not stop the batches.
type nameConflictError struct{ name string }

func (e *nameConflictError) Error() string {
	return fmt.Sprintf("the name %s is taken by an object this owner does not control", e.name)
}

// isNameConflict is the executor's Tolerate: a name conflict concerns only its own pool.
func isNameConflict(err error) bool {
	var nc *nameConflictError
	return errors.As(err, &nc)
}

// executor runs the creates, updates and deletes of a pass: slow-start batches of 1, 2, 4, … capped at
// MaxBatch; after a batch with a failure other than a name conflict, the rest of that kind of action waits
// for the next pass.
func (r *Reconciler[T]) executor() kit.Executor {
	return kit.Executor{Max: r.cfg.MaxBatch, SlowStart: true, Tolerate: isNameConflict}
}

// createItem is a pool to give a child: created from its rendering, or an orphan adopted.
type createItem struct {
	pool   string
	res    *render.Result
	orphan client.Object
}

// How a create item got its child.
const (
	gotCreated = iota
	gotAdopted
	gotExisting // the create found an owned child the cache did not show
)

type createOut struct {
	child client.Object
	how   int
}

// createChildren gives each pool without a child one, adopting an orphan where there is one and
// creating it otherwise. Children found this way join the kept ones for the update step. When the
// orphans cannot be read, no pool gets a child in this pass (one might be adoptable).
func (r *Reconciler[T]) createChildren(ctx context.Context, p *pass) {
	orphans, err := findOrphans(ctx, r.cfg.Client, p.owner, p.adapter, p.cls.create)
	if err != nil {
		for _, pool := range p.cls.create {
			p.createFailed[pool] = err
		}
		return
	}
	var items []createItem
	for _, pool := range p.cls.create {
		item := createItem{pool: pool, orphan: orphans[pool]}
		name := render.ChildName(p.kind, p.owner.GetName(), pool)
		if item.orphan != nil {
			name = item.orphan.GetName()
		}
		if item.res = r.renderFor(p, pool, name); item.res != nil {
			items = append(items, item)
		}
	}
	results := kit.Run(ctx, r.executor(), items, func(ctx context.Context, it createItem) (createOut, error) {
		return r.createOne(ctx, p, it)
	})
	p.terminating = countHarmless(results)
	for i, a := range results {
		pool := items[i].pool
		var nc *nameConflictError
		switch {
		case !a.Done && p.terminating > 0:
			// The namespace is being deleted: the remaining creates would be refused as well.
		case !a.Done:
			p.createPending = append(p.createPending, pool)
		case kit.Harmless(a.Err):
		case errors.As(a.Err, &nc):
			p.nameConflicts[pool] = nc.name
		case a.Err != nil:
			p.createFailed[pool] = a.Err
		default:
			p.cls.keep[pool] = a.Out.child
			switch a.Out.how {
			case gotCreated:
				p.created = append(p.created, a.Out.child.GetName())
				p.fresh.Insert(pool)
			case gotAdopted:
				p.adopted = append(p.adopted, a.Out.child.GetName())
			}
		}
	}
	if p.terminating > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Skipped creating workloads: the namespace is being deleted", "pools", p.terminating)
	}
}

// countHarmless counts the attempts refused because the namespace is being deleted. Nothing can be created
// there any more, and the namespace's deletion removes the owner as well: such a refusal is no failure (no
// error, no retry, no warning).
func countHarmless[O any](results []kit.Attempt[O]) int {
	n := 0
	for _, a := range results {
		if a.Done && kit.Harmless(a.Err) {
			n++
		}
	}
	return n
}

// createOne adopts or creates one pool's child.
func (r *Reconciler[T]) createOne(ctx context.Context, p *pass, it createItem) (createOut, error) {
	kind := r.kind.gvk.Kind
	if it.orphan != nil {
		child, err := r.adoptChild(ctx, p, it.orphan)
		countWrite(kind, opAdopt, err)
		return createOut{child: child, how: gotAdopted}, err
	}
	child, err := r.createChild(ctx, p.adapter, it.res)
	countWrite(kind, opCreate, err)
	if err == nil {
		r.observeProvision(it.pool)
		return createOut{child: child, how: gotCreated}, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return createOut{}, err
	}
	existing, err := r.getUncached(ctx, p.adapter, p.owner.GetNamespace(), it.res.Body.GetName())
	if err != nil {
		return createOut{}, err
	}
	if !isControlledBy(existing, p.owner.GetUID()) {
		return createOut{}, &nameConflictError{name: existing.GetName()}
	}
	return createOut{child: existing, how: gotExisting}, nil
}

// adoptChild adds the owner's controller ownerReference to an orphan, with UID and resourceVersion
// preconditions.
func (r *Reconciler[T]) adoptChild(ctx context.Context, p *pass, orphan client.Object) (client.Object, error) {
	refs := append(slices.Clone(orphan.GetOwnerReferences()), controllerRef(p.owner, r.kind.gvk))
	patch, err := adoptionPatch(orphan, refs, nil)
	if err != nil {
		return nil, err
	}
	obj, ok := orphan.DeepCopyObject().(client.Object)
	if !ok {
		return nil, fmt.Errorf("copying %s %s", p.kind, orphan.GetName())
	}
	if err := r.cfg.Client.Patch(ctx, obj, patch); err != nil {
		return nil, fmt.Errorf("adopting %s %s: %w", p.kind, orphan.GetName(), err)
	}
	return obj, nil
}

// updateItem is a kept child whose live state is not in sync with its rendering.
type updateItem struct {
	pool string
	live client.Object
	res  *render.Result
}

// updateChildren applies the rendering of every kept child that is not in sync. Children
// created in this pass are in sync by construction.
func (r *Reconciler[T]) updateChildren(ctx context.Context, p *pass) {
	var items []updateItem
	for _, pool := range slices.Sorted(maps.Keys(p.cls.keep)) {
		if p.fresh.Has(pool) {
			continue
		}
		live := p.cls.keep[pool]
		res := r.renderFor(p, pool, live.GetName())
		if res == nil || !r.needsApply(live, res, p.owner.GetUID()) {
			continue
		}
		items = append(items, updateItem{pool: pool, live: live, res: res})
	}
	results := kit.Run(ctx, r.executor(), items, func(ctx context.Context, it updateItem) (client.Object, error) {
		obj, err := r.applyChild(ctx, p.adapter, it.live, it.res, p.owner.GetUID())
		countWrite(r.kind.gvk.Kind, opUpdate, err)
		return obj, err
	})
	for i, a := range results {
		pool := items[i].pool
		switch {
		case !a.Done:
			p.updatePending = append(p.updatePending, pool)
		case a.Err != nil:
			p.updateFailed[pool] = a.Err
		default:
			p.cls.keep[pool] = a.Out
			p.updated = append(p.updated, a.Out.GetName())
		}
	}
}

// deleteChildren deletes the children of pools no longer eligible, the duplicates and, once their pool's
// child of the template kind exists, the children of the other kind.
func (r *Reconciler[T]) deleteChildren(ctx context.Context, p *pass) {
	items := slices.Clone(p.cls.deletes)
	for _, pool := range slices.Sorted(maps.Keys(p.cls.otherKind)) {
		for _, obj := range p.cls.otherKind[pool] {
			if p.cls.keep[pool] == nil {
				p.otherKindWaiting = append(p.otherKindWaiting, obj.GetName())
				continue
			}
			items = append(items, deletion{obj: obj, reason: deleteOtherKind})
		}
	}
	results := kit.Run(ctx, r.executor(), items, func(ctx context.Context, d deletion) (struct{}, error) {
		err := r.deleteChild(ctx, d.obj)
		countWrite(r.kind.gvk.Kind, opDelete, err)
		return struct{}{}, err
	})
	for i, a := range results {
		name := items[i].obj.GetName()
		switch {
		case !a.Done:
			p.deletePending = append(p.deletePending, name)
		case a.Err != nil:
			p.deleteFailed[name] = a.Err
		default:
			p.deleted = append(p.deleted, name)
			r.guard.forget(items[i].obj.GetUID())
		}
	}
}

// deleteChild deletes one owned child with a UID precondition and background propagation. A child
// already gone counts as deleted.
func (r *Reconciler[T]) deleteChild(ctx context.Context, obj client.Object) error {
	target, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %s", obj.GetName())
	}
	err := r.cfg.Client.Delete(ctx, target, client.Preconditions{UID: ptr.To(obj.GetUID())},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", obj.GetName(), err)
	}
	return nil
}

// renderFor renders pool's child under name, memoized; a failure is recorded in the pass and yields nil.
func (r *Reconciler[T]) renderFor(p *pass, pool, name string) *render.Result {
	if _, failed := p.renderErrs[pool]; failed {
		return nil
	}
	in := render.Input{
		Owner: render.OwnerRef{
			APIVersion: r.kind.gvk.GroupVersion().String(), Kind: r.kind.gvk.Kind,
			Name: p.owner.GetName(), UID: p.owner.GetUID(),
		},
		Namespace: p.owner.GetNamespace(),
		Spec:      p.spec,
		Pool:      p.poolByName[pool],
		Revision:  p.revision.current.Name,
		Name:      name,
	}
	res, err := r.memo.render(in, p.owner.GetGeneration())
	if err != nil {
		renderErrors.WithLabelValues(r.kind.gvk.Kind).Inc()
		p.renderErrs[pool] = err
		return nil
	}
	return res
}

// observeProvision records, for a child just created, the time since the controller saw its pool created.
func (r *Reconciler[T]) observeProvision(pool string) {
	if seen, ok := r.pools.seen(pool); ok {
		poolProvisionSeconds.WithLabelValues(r.kind.gvk.Kind).Observe(r.cfg.Clock.Since(seen).Seconds())
	}
}
