package yurtappdaemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/controller/yurtappdaemon/render"
)

// +kubebuilder:rbac:groups=apps.openyurt.io,resources=yurtappdaemons;uniteddaemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.openyurt.io,resources=yurtappdaemons/status;uniteddaemonsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.openyurt.io,resources=yurtappdaemons/finalizers;uniteddaemonsets/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps.openyurt.io,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// conflictRequeueDelay is how soon an owner is retried after a write lost a race: long enough for the cache
// to catch up.
const conflictRequeueDelay = time.Second

// Config holds what a Reconciler needs from the manager.
type Config struct {
	// Client reads from the manager's cache, with the indexes of SetupIndexes, and writes to the API server.
	Client client.Client
	// APIReader reads from the API server, for the one deliberate uncached read (YC-11).
	APIReader client.Reader
	// Recorder emits events.k8s.io events on owners.
	Recorder events.EventRecorder
	// MaxBatch caps the slow-start batches (default 32).
	MaxBatch int
}

// Reconciler is the one controller behind YurtAppDaemon and UnitedDaemonSet (§4): T selects the kind.
type Reconciler[T openyurtv1alpha1.Owner] struct {
	Config

	kind  ownerKind[T]
	memo  *renderMemo
	guard *loopGuard
	pools *poolClock
	now   func() time.Time
}

// ownerKind describes one owner kind to the generic code.
type ownerKind[T openyurtv1alpha1.Owner] struct {
	// controllerName is the controller's name (--controllers, logs, metrics, event source).
	controllerName string
	gvk            schema.GroupVersionKind
	newObject      func() T
	newList        func() client.ObjectList
	items          func(client.ObjectList) []T
}

func newReconciler[T openyurtv1alpha1.Owner](kind ownerKind[T], cfg Config) *Reconciler[T] {
	return &Reconciler[T]{
		Config: cfg, kind: kind,
		memo: newRenderMemo(), guard: newLoopGuard(), pools: newPoolClock(), now: time.Now,
	}
}

// NewYurtAppDaemonReconciler returns the reconciler of YurtAppDaemons.
func NewYurtAppDaemonReconciler(cfg Config) *Reconciler[*openyurtv1alpha1.YurtAppDaemon] {
	return newReconciler(yurtAppDaemonOwnerKind(), cfg)
}

// NewUnitedDaemonSetReconciler returns the reconciler of UnitedDaemonSets.
func NewUnitedDaemonSetReconciler(cfg Config) *Reconciler[*openyurtv1alpha1.UnitedDaemonSet] {
	return newReconciler(unitedDaemonSetOwnerKind(), cfg)
}

// pass holds what one reconcile observed and did; the status and the events are computed from it.
type pass struct {
	owner   openyurtv1alpha1.Owner
	spec    *openyurtv1alpha1.YurtAppDaemonSpec
	kind    openyurtv1alpha1.TemplateType
	adapter render.Adapter

	invalid     field.ErrorList
	revisionErr error
	poolsErr    error
	revision    revisionState
	pools       poolSet
	poolByName  map[string]render.Pool
	children    ownedChildren
	cls         classification
	// completed is set once the children were classified: the pass observed everything the status reports.
	completed bool

	renderErrs       map[string]error  // pool → render error
	fresh            sets.Set[string]  // pools whose child was created in this pass
	nameConflicts    map[string]string // pool → the name taken
	createFailed     map[string]error  // pool → error
	updateFailed     map[string]error  // pool → error
	deleteFailed     map[string]error  // child name → error
	createPending    []string          // pools
	updatePending    []string          // pools
	deletePending    []string          // child names
	otherKindWaiting []string          // other-kind children waiting for their pool's new child
	created, adopted []string          // child names
	updated, deleted []string          // child names
}

func newPass(owner openyurtv1alpha1.Owner) *pass {
	return &pass{
		owner: owner, spec: owner.DaemonSpec(), kind: owner.DaemonSpec().TemplateType(),
		renderErrs: map[string]error{}, fresh: sets.New[string](), nameConflicts: map[string]string{},
		createFailed: map[string]error{}, updateFailed: map[string]error{}, deleteFailed: map[string]error{},
	}
}

// Reconcile is keyed by the owner's namespace/name (YC-3).
//
// A panic in a pass is recovered by controller-runtime (RecoverPanic, set in setup and manager-wide), which
// turns it into the pass's error and counts it in controller_runtime_reconcile_panics_total (§9).
func (r *Reconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	owner, found, err := r.getOwner(ctx, req.NamespacedName)
	if err != nil || !found || !owner.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, err // deleted or being deleted: garbage collection removes children (YC-29)
	}
	p := newPass(owner)
	stepErr := r.sync(ctx, p)
	if p.revisionErr != nil && cacheBehind(p.revisionErr) {
		// Not a RevisionFailed: the cache is behind a write (often this owner's own). Retry once it caught up.
		return ctrl.Result{RequeueAfter: conflictRequeueDelay}, nil
	}

	prev := owner.DaemonStatus().DeepCopy()
	status := computeStatus(prev, owner.GetGeneration(), p, metav1.NewTime(r.now()))
	statusErr := r.writeStatus(ctx, owner, status)
	r.emitEvents(p, prev, &status)

	var cleanupErr error
	if p.completed && statusErr == nil {
		cleanupErr = r.cleanupHistory(ctx, owner, p.revision, liveRevisions(p.children))
	}
	return result(stepErr, p.actionErrors(), statusErr, cleanupErr)
}

// sync runs the steps of §4.2 up to the actions; it stops at the first step that fails. An invalid spec is
// not an error: the next spec change retriggers.
func (r *Reconciler[T]) sync(ctx context.Context, p *pass) error {
	if p.invalid = validateSpec(p.spec); len(p.invalid) > 0 {
		return nil
	}
	adapter, ok := render.AdapterFor(p.kind)
	if !ok {
		p.invalid = field.ErrorList{field.InternalError(field.NewPath("spec", "workloadTemplate"),
			fmt.Errorf("no workload adapter for %q", p.kind))}
		return nil
	}
	p.adapter = adapter
	if p.revision, p.revisionErr = r.revisions(ctx, p.owner.(T)); p.revisionErr != nil {
		return p.revisionErr
	}
	if p.pools, p.poolsErr = listPools(ctx, r.Client, p.spec); p.poolsErr != nil {
		return p.poolsErr
	}
	p.poolByName = make(map[string]render.Pool, len(p.pools.eligible))
	for _, pool := range p.pools.eligible {
		p.poolByName[pool.Name] = pool
	}
	children, err := listOwnedChildren(ctx, r.Client, p.owner.GetNamespace(), p.owner.GetUID())
	if err != nil {
		p.poolsErr = err // a failed read of children is handled like a failed read of pools: touch nothing
		return err
	}
	p.children = children
	p.cls = classify(p.owner.GetName(), p.kind, p.pools, children)
	p.completed = true
	r.act(ctx, p)
	return nil
}

// act creates, then updates, then deletes (YC-27). A failing pool never blocks the others (YC-28); the
// failures are in the pass.
func (r *Reconciler[T]) act(ctx context.Context, p *pass) {
	r.createChildren(ctx, p)
	r.updateChildren(ctx, p)
	r.deleteChildren(ctx, p)
}

// validateSpec applies the webhook's structural rules the controller relies on (§4.2 step 2): WH-3 … WH-6
// and WH-8. WH-7 is not enforced here: a negative revisionHistoryLimit counts as 0, and the pool
// nodeSelector key is overwritten by rendering anyway.
func validateSpec(spec *openyurtv1alpha1.YurtAppDaemonSpec) field.ErrorList {
	errs := render.ValidateRenderable(spec, field.NewPath("spec"))
	if len(errs) == 0 && spec.TemplateType() == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "workloadTemplate"), "exactly one template member is required"))
	}
	return errs
}

// getOwner reads the owner from the cache.
func (r *Reconciler[T]) getOwner(ctx context.Context, key client.ObjectKey) (T, bool, error) {
	owner := r.kind.newObject()
	if err := r.Client.Get(ctx, key, owner); err != nil {
		var zero T
		if apierrors.IsNotFound(err) {
			return zero, false, nil
		}
		return zero, false, fmt.Errorf("getting %s %s: %w", r.kind.gvk.Kind, key, err)
	}
	return owner, true, nil
}

// writeStatus writes the status through the status subresource, only if it changed, with the observed
// resourceVersion as precondition (YC-25).
//
// The write is an update (PUT) of the status subresource, not a merge patch: at the scale target the status
// holds a summary entry per pool (about 150 KB for 1,000 pools, PF-6), and a merge patch of it costs the
// manager a diff of two full documents and the API server a patch application on top of the decoding and
// validation an update needs anyway; either way the changed lists travel whole. The update carries the
// cached resourceVersion, so it fails with a conflict instead of overwriting a newer status.
func (r *Reconciler[T]) writeStatus(ctx context.Context, owner T, status openyurtv1alpha1.YurtAppDaemonStatus) error {
	if statusEqual(owner.DaemonStatus(), &status) {
		return nil
	}
	updated, ok := owner.DeepCopyObject().(T)
	if !ok {
		return fmt.Errorf("copying %s %s", r.kind.gvk.Kind, owner.GetName())
	}
	*updated.DaemonStatus() = status
	// NotFound: the owner was deleted meanwhile; its delete ends the matter, and garbage collection the children.
	if err := r.Client.Status().Update(ctx, updated); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing status of %s %s: %w", r.kind.gvk.Kind, owner.GetName(), err)
	}
	return nil
}

// actionErrors returns the errors of the actions that failed, so the owner is retried with backoff. Name
// conflicts count: no event announces that the foreign object is gone. Render errors do not: only a change
// of the spec or the pool, which triggers a pass anyway, can cure them.
func (p *pass) actionErrors() []error {
	var errs []error
	for _, m := range []map[string]error{p.createFailed, p.updateFailed, p.deleteFailed} {
		for _, k := range sortedKeys(m) {
			errs = append(errs, m[k])
		}
	}
	if len(p.nameConflicts) > 0 {
		errs = append(errs, fmt.Errorf("workload names taken by objects the owner does not control: %s",
			nameList(slices.Collect(maps.Values(p.nameConflicts)))))
	}
	return errs
}

// result turns the errors of a pass into its return: errors are returned (joined) so the owner is retried
// with backoff; when every error is a lost race (a conflict), the owner is only requeued.
func result(stepErr error, actionErrs []error, statusErr, cleanupErr error) (ctrl.Result, error) {
	var errs []error
	conflict := false
	for _, err := range append([]error{stepErr, statusErr, cleanupErr}, actionErrs...) {
		switch {
		case err == nil:
		case apierrors.IsConflict(err):
			conflict = true
		default:
			errs = append(errs, err)
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

// controllerRef is the controller ownerReference to owner.
func controllerRef(owner client.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}
