package yurtappdaemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/controller/yurtappdaemon/render"
)

// defaultMaxBatch caps slow-start batches when Options.MaxBatch is not set (--yurtappdaemon-max-batch).
const defaultMaxBatch = 32

// nameConflictError reports that a child's name is taken by an object the owner does not control (YC-11).
// It fails only its pool: it does not stop the batches.
type nameConflictError struct{ name string }

func (e *nameConflictError) Error() string {
	return fmt.Sprintf("the name %s is taken by an object this owner does not control", e.name)
}

// attempt is the outcome of one call of a slow-start run; done is false for calls never made (pending).
type attempt[O any] struct {
	out  O
	err  error
	done bool
}

// slowStart calls fn for each item in batches of 1, 2, 4, … capped at maxBatch, the calls of one batch
// concurrently (YC-26). After a batch with an error other than a name conflict, the remaining items are not
// attempted. A panic in fn becomes its error.
func slowStart[I, O any](ctx context.Context, items []I, maxBatch int, fn func(context.Context, I) (O, error)) []attempt[O] {
	res := make([]attempt[O], len(items))
	size := 1
	for start := 0; start < len(items); {
		end := min(start+size, len(items))
		var wg sync.WaitGroup
		for i := start; i < end; i++ {
			wg.Go(func() {
				defer func() {
					if v := recover(); v != nil {
						res[i] = attempt[O]{err: fmt.Errorf("panic: %v", v), done: true}
					}
				}()
				out, err := fn(ctx, items[i])
				res[i] = attempt[O]{out: out, err: err, done: true}
			})
		}
		wg.Wait()
		for i := start; i < end; i++ {
			var nc *nameConflictError
			if res[i].err != nil && !errors.As(res[i].err, &nc) {
				return res
			}
		}
		start = end
		size = min(size*2, max(maxBatch, 1))
	}
	return res
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
	gotExisting // the create found an owned child the cache did not show (YC-11)
)

type createOut struct {
	child client.Object
	how   int
}

// createChildren gives each pool without a child one, adopting an orphan where there is one (YC-12) and
// creating it otherwise (YC-11). Children found this way join the kept ones for the update step. When the
// orphans cannot be read, no pool gets a child in this pass (one might be adoptable).
func (r *Reconciler[T]) createChildren(ctx context.Context, p *pass) {
	orphans, err := findOrphans(ctx, r.Client, p.owner, p.adapter, p.cls.create)
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
	results := slowStart(ctx, items, r.maxBatch(), func(ctx context.Context, it createItem) (createOut, error) {
		return r.createOne(ctx, p, it)
	})
	for i, a := range results {
		pool := items[i].pool
		var nc *nameConflictError
		switch {
		case !a.done:
			p.createPending = append(p.createPending, pool)
		case errors.As(a.err, &nc):
			p.nameConflicts[pool] = nc.name
		case a.err != nil:
			p.createFailed[pool] = a.err
		default:
			p.cls.keep[pool] = a.out.child
			switch a.out.how {
			case gotCreated:
				p.created = append(p.created, a.out.child.GetName())
				p.fresh.Insert(pool)
			case gotAdopted:
				p.adopted = append(p.adopted, a.out.child.GetName())
			}
		}
	}
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
// preconditions (YC-12).
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
	if err := r.Client.Patch(ctx, obj, patch); err != nil {
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

// updateChildren applies the rendering of every kept child that is not in sync (YC-22 … YC-24). Children
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
	results := slowStart(ctx, items, r.maxBatch(), func(ctx context.Context, it updateItem) (client.Object, error) {
		obj, err := r.applyChild(ctx, p.adapter, it.live, it.res, p.owner.GetUID())
		countWrite(r.kind.gvk.Kind, opUpdate, err)
		return obj, err
	})
	for i, a := range results {
		pool := items[i].pool
		switch {
		case !a.done:
			p.updatePending = append(p.updatePending, pool)
		case a.err != nil:
			p.updateFailed[pool] = a.err
		default:
			p.cls.keep[pool] = a.out
			p.updated = append(p.updated, a.out.GetName())
		}
	}
}

// deleteChildren deletes the children of pools no longer eligible, the duplicates and, once their pool's
// child of the template kind exists, the children of the other kind (YC-10, YC-13, YC-30).
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
	results := slowStart(ctx, items, r.maxBatch(), func(ctx context.Context, d deletion) (struct{}, error) {
		err := r.deleteChild(ctx, d.obj)
		countWrite(r.kind.gvk.Kind, opDelete, err)
		return struct{}{}, err
	})
	for i, a := range results {
		name := items[i].obj.GetName()
		switch {
		case !a.done:
			p.deletePending = append(p.deletePending, name)
		case a.err != nil:
			p.deleteFailed[name] = a.err
		default:
			p.deleted = append(p.deleted, name)
			r.guard.forget(items[i].obj.GetUID())
		}
	}
}

// deleteChild deletes one owned child with a UID precondition and background propagation (YC-7). A child
// already gone counts as deleted.
func (r *Reconciler[T]) deleteChild(ctx context.Context, obj client.Object) error {
	target, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %s", obj.GetName())
	}
	err := r.Client.Delete(ctx, target, client.Preconditions{UID: ptr.To(obj.GetUID())},
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

func (r *Reconciler[T]) maxBatch() int {
	if r.MaxBatch <= 0 {
		return defaultMaxBatch
	}
	return r.MaxBatch
}

// observeProvision records, for a child just created, the time since the controller saw its pool created.
func (r *Reconciler[T]) observeProvision(pool string) {
	if seen, ok := r.pools.seen(pool); ok {
		poolProvisionSeconds.WithLabelValues(r.kind.gvk.Kind).Observe(time.Since(seen).Seconds())
	}
}
