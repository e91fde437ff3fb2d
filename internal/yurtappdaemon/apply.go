package yurtappdaemon

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// Field managers of drover's writes to children.
const (
	// FieldManager owns everything drover renders into a child.
	FieldManager = "drover-yurtappdaemon"
	// HandoffFieldManager keeps a child's spec.replicas when the template stops setting them.
	HandoffFieldManager = "drover-replicas-handoff"
)

// maxMemoEntries bounds the render memo and maxGuardEntries the loop guard's memory; each is emptied when
// full (children garbage-collected with their owner are never forgotten one by one).
const (
	maxMemoEntries  = 20000
	maxGuardEntries = 100000
)

// renderMemo memoizes renders per (owner UID and generation, revision, child name, pool name, labels and
// taints) so that a pass over unchanged pools does not render again. Results are shared: callers
// never modify them.
type renderMemo struct {
	mu      sync.Mutex
	entries map[string]*render.Result
}

func newRenderMemo() *renderMemo { return &renderMemo{entries: map[string]*render.Result{}} }

// render returns the memoized result for in, rendering it on a miss. Errors are not memoized.
func (m *renderMemo) render(in render.Input, generation int64) (*render.Result, error) {
	key := fmt.Sprintf("%s\x02%d\x02%s\x02%s\x02%s", in.Owner.UID, generation, in.Revision, in.Name, poolKey(&in.Pool))
	m.mu.Lock()
	res, ok := m.entries[key]
	m.mu.Unlock()
	if ok {
		return res, nil
	}
	res, err := render.Render(in)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) >= maxMemoEntries {
		clear(m.entries)
	}
	m.entries[key] = res
	return res, nil
}

// loopGuard is the memory that keeps drover from writing a child twice for the same rendering and
// from checking an unchanged child again.
type loopGuard struct {
	mu sync.Mutex
	// settled remembers, per child, a rendered hash and a resourceVersion at which the child needs no write
	// for that hash: either it was found in sync at that resourceVersion, or it was just applied from it (while
	// the cache still shows that resourceVersion, it has not seen the write yet). Any change of the child
	// changes its resourceVersion and ends this.
	settled map[types.UID]settledMark
	// mismatch remembers children whose apply result still failed the subset check: they count as in sync
	// while their rendered hash is unchanged and the cache shows them at the generation of that result or
	// an older one. An older generation is a view from before the apply (the cache delivering a status
	// write that preceded it): generations only grow, so it is not a change by someone else, and forgetting
	// the mark there would apply again and log the mismatch again.
	mismatch map[types.UID]mismatchMark
}

type settledMark struct{ hash, resourceVersion string }

type mismatchMark struct {
	hash       string
	generation int64
}

func newLoopGuard() *loopGuard {
	return &loopGuard{settled: map[types.UID]settledMark{}, mismatch: map[types.UID]mismatchMark{}}
}

// holds reports whether live must be treated as in sync with a rendering of hash.
func (g *loopGuard) holds(live client.Object, hash string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.settled[live.GetUID()]; ok {
		if s.hash == hash && s.resourceVersion == live.GetResourceVersion() && s.resourceVersion != "" {
			return true
		}
		delete(g.settled, live.GetUID())
	}
	if m, ok := g.mismatch[live.GetUID()]; ok {
		if m.hash == hash && live.GetGeneration() <= m.generation {
			return true
		}
		delete(g.mismatch, live.GetUID())
	}
	return false
}

// settle remembers that the child with uid needs no write for hash while it is at resourceVersion.
func (g *loopGuard) settle(uid types.UID, hash, resourceVersion string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.settled) >= maxGuardEntries {
		clear(g.settled)
	}
	g.settled[uid] = settledMark{hash: hash, resourceVersion: resourceVersion}
}

// recordMismatch remembers a normalization mismatch; it reports whether it is new, so that it is logged once
// per (child, rendered hash, generation).
func (g *loopGuard) recordMismatch(uid types.UID, hash string, generation int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := mismatchMark{hash: hash, generation: generation}
	if len(g.mismatch) >= maxGuardEntries {
		clear(g.mismatch)
	}
	old, ok := g.mismatch[uid]
	g.mismatch[uid] = m
	return !ok || old != m
}

func (g *loopGuard) forget(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.settled, uid)
	delete(g.mismatch, uid)
}

// needsApply reports whether live must be written for res. A child found in sync is
// remembered at its resourceVersion, so the next pass skips the subset check while it is unchanged.
func (r *Reconciler[T]) needsApply(live client.Object, res *render.Result, ownerUID types.UID) bool {
	if r.guard.holds(live, res.Hash) {
		return false
	}
	if !render.InSync(res.Body, live, ownerUID) {
		return true
	}
	r.guard.settle(live.GetUID(), res.Hash, live.GetResourceVersion())
	return false
}

// applyChild writes res to the live child with server-side apply, handing spec.replicas over first
// when drover stops managing them. The body carries the child's UID, so the apply fails rather than
// touch an object that replaced it. It returns the written object.
func (r *Reconciler[T]) applyChild(ctx context.Context, adapter render.Adapter, live client.Object,
	res *render.Result, ownerUID types.UID) (client.Object, error) {
	if res.Replicas == nil {
		if err := r.handoffReplicas(ctx, adapter, live); err != nil {
			return nil, err
		}
	}
	body, err := r.apply(ctx, adapter, live, res)
	if err != nil {
		return nil, err
	}
	if hasCreateEntry(body) && r.upgradeManagedFields(ctx, body) {
		// The hand-over after the create failed then (upgradeManagedFields logged it): the create's fields
		// were still drover's Update entry's, and this apply could not remove the keys drover stopped
		// rendering. They are handed over now; apply again so those keys go.
		if body, err = r.apply(ctx, adapter, live, res); err != nil {
			return nil, err
		}
	}
	r.guard.settle(live.GetUID(), res.Hash, live.GetResourceVersion())
	if !render.InSync(res.Body, body, ownerUID) {
		normalizationMismatches.WithLabelValues(r.kind.gvk.Kind).Inc()
		if r.guard.recordMismatch(live.GetUID(), res.Hash, body.GetGeneration()) {
			ctrl.LoggerFrom(ctx).Info("Applied workload still differs from its rendering; holding it until the rendering or its generation changes",
				"workload", klog.KObj(live), "kind", adapter.Kind(), "renderedHash", res.Hash)
		}
	}
	return typed(adapter, body), nil
}

// apply writes res to the live child with server-side apply and returns what the API server answered.
func (r *Reconciler[T]) apply(ctx context.Context, adapter render.Adapter, live client.Object, res *render.Result) (*unstructured.Unstructured, error) {
	body := res.Body.DeepCopy()
	body.SetUID(live.GetUID())
	err := r.cfg.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(body),
		client.FieldOwner(FieldManager), client.ForceOwnership)
	if err != nil {
		return nil, fmt.Errorf("applying %s %s: %w", adapter.Kind(), live.GetName(), err)
	}
	return body, nil
}

// hasCreateEntry reports whether obj (as the API server returned it, managedFields included) still has the
// Update entry of drover's create, which upgradeManagedFields hands over to the apply entry.
func hasCreateEntry(obj *unstructured.Unstructured) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" {
			return true
		}
	}
	return false
}

// handoffReplicas applies the live spec.replicas under HandoffFieldManager when the child still carries the
// applied-replicas annotation, so that the next apply, which omits replicas, does not remove them.
func (r *Reconciler[T]) handoffReplicas(ctx context.Context, adapter render.Adapter, live client.Object) error {
	if _, managed := live.GetAnnotations()[openyurtv1alpha1.AnnotationAppliedReplicas]; !managed {
		return nil
	}
	replicas := liveReplicas(live)
	if replicas == nil {
		return nil
	}
	body := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": int64(*replicas)},
	}}
	body.SetGroupVersionKind(adapter.GVK())
	body.SetName(live.GetName())
	body.SetNamespace(live.GetNamespace())
	body.SetUID(live.GetUID())
	err := r.cfg.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(body),
		client.FieldOwner(HandoffFieldManager), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("handing over spec.replicas of %s: %w", live.GetName(), err)
	}
	return nil
}

// createChild creates the child rendered in res. A create is a POST, not an apply, so that a name taken by
// another object is reported instead of taken over. The fields the POST set are then handed from the
// create's Update entry to drover's apply entry, so later applies can remove what drover stops rendering.
func (r *Reconciler[T]) createChild(ctx context.Context, adapter render.Adapter, res *render.Result) (client.Object, error) {
	obj := res.Body.DeepCopy()
	if err := r.cfg.Client.Create(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
		return nil, fmt.Errorf("creating %s %s: %w", adapter.Kind(), obj.GetName(), err)
	}
	_ = r.upgradeManagedFields(ctx, obj)
	return typed(adapter, obj), nil
}

// upgradeAttempts bounds upgradeManagedFields: the patch carries a resourceVersion precondition, and the
// workload's own controller writes status right after a create, so the first try often loses that race.
const upgradeAttempts = 4

// upgradeManagedFields moves the fields the create set from FieldManager's Update entry to its Apply entry
// (what kubectl does when it upgrades client-side to server-side apply). A lost race is retried from a fresh
// uncached read, which carries the managedFields the cache strips. A final failure leaves the child correct
// but with fields drover cannot yet remove by omission: it is logged, not returned, and the next apply of
// the child, which sees the managedFields in the API server's answer, tries again (applyChild). It reports
// whether it handed fields over.
func (r *Reconciler[T]) upgradeManagedFields(ctx context.Context, obj *unstructured.Unstructured) bool {
	cur := obj
	var err error
	for attempt := 1; attempt <= upgradeAttempts; attempt++ {
		var patch []byte
		if patch, err = csaupgrade.UpgradeManagedFieldsPatch(cur, sets.New(FieldManager), FieldManager); err != nil {
			break
		}
		if patch == nil {
			return false // nothing to hand over
		}
		if err = r.cfg.Client.Patch(ctx, cur.DeepCopy(), client.RawPatch(types.JSONPatchType, patch)); err == nil {
			return true
		}
		if attempt == upgradeAttempts || (!apierrors.IsConflict(err) && !apierrors.IsInvalid(err)) {
			break
		}
		// Deliberate uncached read (like the one after a create conflict): the cache holds no managedFields.
		fresh := &unstructured.Unstructured{}
		fresh.SetGroupVersionKind(obj.GroupVersionKind())
		if err = r.cfg.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
			break
		}
		cur = fresh
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Handing the created workload's fields to server-side apply failed; the next apply of it retries",
			"workload", klog.KObj(obj), "error", err.Error())
		return false
	}
	return true
}

// getUncached reads a child that a create found to exist. It is the controller's one deliberate API read:
// the cache holds only objects carrying the pool-name label, so a child whose label was removed by
// hand, or a foreign object of that name, is invisible to it.
func (r *Reconciler[T]) getUncached(ctx context.Context, adapter render.Adapter, namespace, name string) (client.Object, error) {
	obj := adapter.NewObject()
	if err := r.cfg.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, fmt.Errorf("reading existing %s %s: %w", adapter.Kind(), name, err)
	}
	return obj, nil
}

// typed converts a written object to the adapter's typed object, for the status summary; on failure the
// unstructured object is returned as it is.
func typed(adapter render.Adapter, u *unstructured.Unstructured) client.Object {
	obj := adapter.NewObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return u
	}
	return obj
}

// liveReplicas returns a child's spec.replicas.
func liveReplicas(obj client.Object) *int32 {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Spec.Replicas
	case *appsv1.StatefulSet:
		return o.Spec.Replicas
	case *unstructured.Unstructured:
		v, found, err := unstructured.NestedInt64(o.Object, "spec", "replicas")
		if err != nil || !found {
			return nil
		}
		r := int32(v)
		return &r
	default:
		return nil
	}
}
