package yurtappdaemon

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

const (
	// maxCollisionRetries bounds the revision name collisions resolved in one pass.
	maxCollisionRetries = 5
	// defaultRevisionHistoryLimit applies when spec.revisionHistoryLimit is nil.
	defaultRevisionHistoryLimit = 10
)

// revisionState is the outcome of the revision step.
type revisionState struct {
	// current is the revision of the current template, the newest one; nil if the step failed.
	current *appsv1.ControllerRevision
	// collisionCount is the collision counter to persist, set even when the step failed.
	collisionCount *int32
	// owned are the owner's revisions after this pass's writes (copies, safe to keep).
	owned []*appsv1.ControllerRevision
}

// revisions ensures the ControllerRevision of the owner's current template: an owned one with equal data is
// reused (and renumbered as the newest if it is not), else an orphan with equal data is adopted, else a new
// one is created, counting name collisions.
func (r *Reconciler[T]) revisions(ctx context.Context, owner T) (revisionState, error) {
	st := revisionState{collisionCount: copyInt32(owner.DaemonStatus().CollisionCount)}
	data, err := render.RevisionData(owner.DaemonSpec())
	if err != nil {
		return st, fmt.Errorf("computing the revision data: %w", err)
	}
	if st.owned, err = r.listOwnedRevisions(ctx, owner); err != nil {
		return st, err
	}
	top := maxRevision(st.owned)
	if match := findRevision(st.owned, data); match != nil {
		st.current, err = r.promoteRevision(ctx, match, top)
		st.replace(st.current)
		return st, err
	}
	orphan, err := r.findOrphanRevision(ctx, owner, data)
	if err != nil || orphan != nil {
		if err == nil {
			st.current, err = r.adoptRevision(ctx, owner, orphan, top)
			st.add(st.current)
		}
		return st, err
	}
	return r.createRevision(ctx, owner, data, top, st)
}

// createRevision creates the revision, retrying with a higher collision count while its name is taken by a
// revision that is not this owner's with equal data.
func (r *Reconciler[T]) createRevision(ctx context.Context, owner T, data []byte, top int64,
	st revisionState) (revisionState, error) {
	for range maxCollisionRetries {
		hash := render.RevisionHash(data, st.collisionCount)
		cr := newRevision(owner, r.kind.gvk, data, hash, top+1)
		err := r.cfg.Client.Create(ctx, cr)
		if err == nil {
			st.current = cr
			st.add(cr)
			return st, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return st, fmt.Errorf("creating ControllerRevision %s: %w", cr.Name, err)
		}
		existing := &appsv1.ControllerRevision{}
		if err := r.cfg.Client.Get(ctx, client.ObjectKeyFromObject(cr), existing); err != nil {
			// The cache has not seen it yet: retry the pass rather than count a collision that may not be one.
			if apierrors.IsNotFound(err) {
				err = errRevisionNotCached
			}
			return st, fmt.Errorf("reading existing ControllerRevision %s: %w", cr.Name, err)
		}
		if isControlledBy(existing, owner.GetUID()) && sameData(existing.Data.Raw, data) {
			st.current, err = r.promoteRevision(ctx, existing, top)
			st.replace(st.current)
			return st, err
		}
		st.collisionCount = ptr.To(ptr.Deref(st.collisionCount, 0) + 1)
	}
	return st, fmt.Errorf("no free ControllerRevision name after %d collisions", maxCollisionRetries)
}

// newRevision builds the ControllerRevision of data.
func newRevision(owner openyurtv1alpha1.Owner, gvk schema.GroupVersionKind, data []byte, hash string, number int64) *appsv1.ControllerRevision {
	lbls := map[string]string{}
	if sel := owner.DaemonSpec().Selector; sel != nil {
		maps.Copy(lbls, sel.MatchLabels)
	}
	lbls[openyurtv1alpha1.LabelRevisionHash] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            render.RevisionName(owner.GetName(), hash),
			Namespace:       owner.GetNamespace(),
			Labels:          lbls,
			OwnerReferences: []metav1.OwnerReference{controllerRef(owner, gvk)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
}

// listOwnedRevisions reads the owner's revisions from the cache through the controller-owner UID index and
// returns copies sorted by revision number, then name.
func (r *Reconciler[T]) listOwnedRevisions(ctx context.Context, owner T) ([]*appsv1.ControllerRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	err := r.cfg.Client.List(ctx, list, client.InNamespace(owner.GetNamespace()),
		client.MatchingFields{IndexControllerUID: string(owner.GetUID())})
	if err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	out := make([]*appsv1.ControllerRevision, 0, len(list.Items))
	for i := range list.Items {
		if isControlledBy(&list.Items[i], owner.GetUID()) {
			out = append(out, &list.Items[i])
		}
	}
	sortRevisions(out)
	return out, nil
}

// findOrphanRevision returns a revision in the owner's namespace without a controller, whose labels match
// spec.selector and whose data equals data, or nil.
func (r *Reconciler[T]) findOrphanRevision(ctx context.Context, owner T, data []byte) (*appsv1.ControllerRevision, error) {
	sel, err := metav1.LabelSelectorAsSelector(owner.DaemonSpec().Selector)
	if err != nil || sel.Empty() {
		return nil, nil //nolint:nilerr // a spec without a usable selector adopts nothing; validation reports it
	}
	list := &appsv1.ControllerRevisionList{}
	err = r.cfg.Client.List(ctx, list, client.InNamespace(owner.GetNamespace()), client.MatchingLabelsSelector{Selector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions to adopt: %w", err)
	}
	var found []*appsv1.ControllerRevision
	for i := range list.Items {
		cr := &list.Items[i]
		if metav1.GetControllerOfNoCopy(cr) == nil && cr.DeletionTimestamp.IsZero() &&
			sel.Matches(labels.Set(cr.Labels)) && sameData(cr.Data.Raw, data) {
			found = append(found, cr)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	sortRevisions(found)
	return found[len(found)-1], nil
}

// errRevisionNotCached: a revision create found the name taken, and the cache does not show the revision
// yet (most often this owner's own create of a moment ago).
var errRevisionNotCached = errors.New("not in the cache yet")

// cacheBehind reports whether a revision step failed only because the cache is behind the API server: a
// lost optimistic lock or a revision not cached yet. The pass is retried; nothing is reported.
func cacheBehind(err error) bool {
	return apierrors.IsConflict(err) || errors.Is(err, errRevisionNotCached)
}

// promoteRevision makes cr the newest revision: its number is raised to top+1 unless it already is the
// highest (a rollback to an earlier template).
func (r *Reconciler[T]) promoteRevision(ctx context.Context, cr *appsv1.ControllerRevision, top int64) (*appsv1.ControllerRevision, error) {
	if cr.Revision >= top {
		return cr.DeepCopy(), nil
	}
	updated := cr.DeepCopy()
	updated.Revision = top + 1
	if err := r.cfg.Client.Patch(ctx, updated, client.MergeFromWithOptions(cr, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, fmt.Errorf("renumbering ControllerRevision %s: %w", cr.Name, err)
	}
	return updated, nil
}

// adoptRevision takes an orphaned revision with the current data: it gets the controller
// ownerReference, under UID and resourceVersion preconditions, and becomes the newest revision.
func (r *Reconciler[T]) adoptRevision(ctx context.Context, owner T, cr *appsv1.ControllerRevision, top int64) (*appsv1.ControllerRevision, error) {
	updated := cr.DeepCopy()
	updated.OwnerReferences = append(updated.OwnerReferences, controllerRef(owner, r.kind.gvk))
	if updated.Revision <= top {
		updated.Revision = top + 1
	}
	patch, err := adoptionPatch(cr, updated.OwnerReferences, map[string]any{"revision": updated.Revision})
	if err != nil {
		return nil, err
	}
	if err := r.cfg.Client.Patch(ctx, updated, patch); err != nil {
		return nil, fmt.Errorf("adopting ControllerRevision %s: %w", cr.Name, err)
	}
	return updated, nil
}

// cleanupHistory deletes the oldest owned revisions beyond spec.revisionHistoryLimit, never the
// current one nor one a child's revision label names. It runs after the status write.
func (r *Reconciler[T]) cleanupHistory(ctx context.Context, owner T, st revisionState, live sets.Set[string]) error {
	if st.current == nil {
		return nil
	}
	var errs []error
	for _, cr := range revisionsToDelete(st.owned, st.current.Name, live, historyLimit(owner.DaemonSpec())) {
		err := r.cfg.Client.Delete(ctx, cr, client.Preconditions{UID: ptr.To(cr.UID)},
			client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting ControllerRevision %s: %w", cr.Name, err))
		}
	}
	return errors.Join(errs...)
}

// revisionsToDelete returns the oldest revisions of owned (sorted oldest first) beyond limit, not counting
// the current revision and the live ones, which are always kept.
func revisionsToDelete(owned []*appsv1.ControllerRevision, current string, live sets.Set[string], limit int) []*appsv1.ControllerRevision {
	var old []*appsv1.ControllerRevision
	for _, cr := range owned {
		if cr.Name != current && !live.Has(cr.Name) {
			old = append(old, cr)
		}
	}
	sortRevisions(old)
	if excess := len(old) - limit; excess > 0 {
		return old[:excess]
	}
	return nil
}

// historyLimit is spec.revisionHistoryLimit, 10 when nil; a negative value counts as 0.
func historyLimit(spec *openyurtv1alpha1.YurtAppDaemonSpec) int {
	if spec.RevisionHistoryLimit == nil {
		return defaultRevisionHistoryLimit
	}
	return max(int(*spec.RevisionHistoryLimit), 0)
}

// liveRevisions returns the revision names the children's revision labels carry.
func liveRevisions(children ownedChildren) sets.Set[string] {
	out := sets.New[string]()
	for _, objs := range children {
		for _, obj := range objs {
			if rev := obj.GetLabels()[openyurtv1alpha1.LabelControllerRevisionHash]; rev != "" {
				out.Insert(rev)
			}
		}
	}
	return out
}

func findRevision(owned []*appsv1.ControllerRevision, data []byte) *appsv1.ControllerRevision {
	var found *appsv1.ControllerRevision
	for _, cr := range owned {
		if sameData(cr.Data.Raw, data) && cr.DeletionTimestamp.IsZero() {
			found = cr // owned is sorted: the last match is the newest
		}
	}
	return found
}

func maxRevision(owned []*appsv1.ControllerRevision) int64 {
	var top int64
	for _, cr := range owned {
		top = max(top, cr.Revision)
	}
	return top
}

func sortRevisions(crs []*appsv1.ControllerRevision) {
	slices.SortFunc(crs, func(a, b *appsv1.ControllerRevision) int {
		return cmp.Or(cmp.Compare(a.Revision, b.Revision), strings.Compare(a.Name, b.Name))
	})
}

// replace puts cr in place of the owned revision with its name.
func (st *revisionState) replace(cr *appsv1.ControllerRevision) {
	if cr == nil {
		return
	}
	for i := range st.owned {
		if st.owned[i].Name == cr.Name {
			st.owned[i] = cr
			return
		}
	}
	st.add(cr)
}

func (st *revisionState) add(cr *appsv1.ControllerRevision) {
	if cr != nil {
		st.owned = append(st.owned, cr)
		sortRevisions(st.owned)
	}
}

// sameData compares revision data byte for byte, then as JSON values (the API server may re-encode it).
func sameData(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}

// adoptionPatch is a merge patch adding refs as the object's ownerReferences, with the object's UID and
// resourceVersion as preconditions (an immutable-field error and a conflict, respectively), plus extra
// top-level fields.
func adoptionPatch(obj client.Object, refs []metav1.OwnerReference, extra map[string]any) (client.Patch, error) {
	body := map[string]any{"metadata": map[string]any{
		"uid":             obj.GetUID(),
		"resourceVersion": obj.GetResourceVersion(),
		"ownerReferences": refs,
	}}
	maps.Copy(body, extra)
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding the adoption patch of %s: %w", obj.GetName(), err)
	}
	return client.RawPatch(types.MergePatchType, data), nil
}
