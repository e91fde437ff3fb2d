package yurtappdaemon

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// +kubebuilder:rbac:groups=apps.openyurt.io,resources=yurtappdaemons;uniteddaemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.openyurt.io,resources=yurtappdaemons/status;uniteddaemonsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.openyurt.io,resources=yurtappdaemons/finalizers;uniteddaemonsets/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps.openyurt.io,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Config holds what a Reconciler needs from the manager.
type Config struct {
	// Client reads from the manager's cache, with the indexes of SetupIndexes, and writes to the API server.
	Client client.Client
	// APIReader reads from the API server, for the one deliberate uncached read.
	APIReader client.Reader
	// Recorder emits events.k8s.io events on owners.
	Recorder events.EventRecorder
	// Clock tells the time of the status conditions and the provisioning metric (the real clock when nil).
	Clock clock.PassiveClock
	// MaxBatch caps the slow-start batches (--yurtappdaemon-max-batch; defaultMaxBatch when not positive).
	MaxBatch int
}

// Reconciler is the one controller behind YurtAppDaemon and UnitedDaemonSet: T selects the kind.
type Reconciler[T openyurtv1alpha1.Owner] struct {
	cfg   Config
	kind  ownerKind[T]
	memo  *renderMemo
	guard *loopGuard
	pools *poolClock
	// backoff spaces the retries of owners whose passes keep losing races.
	backoff *kit.Backoff
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

// newReconciler returns the reconciler of one owner kind, with its defaults filled and its in-memory state.
func newReconciler[T openyurtv1alpha1.Owner](kind ownerKind[T], cfg Config) *Reconciler[T] {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = defaultMaxBatch
	}
	return &Reconciler[T]{
		cfg: cfg, kind: kind,
		memo: newRenderMemo(), guard: newLoopGuard(), pools: newPoolClock(),
		backoff: kit.NewBackoff(),
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
	// cacheBehind is set when the revision step failed only because the cache is behind the API server.
	cacheBehind bool
	// terminating counts the creates refused because the namespace is being deleted.
	terminating int

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

// Reconcile is keyed by the owner's namespace/name. Each step is named for what it does; the ones that write
// say so. A step that fails stops the steps after it that depend on it, and the status says why.
//
// A panic in a pass is recovered by controller-runtime (RecoverPanic, set in setup and manager-wide), which
// turns it into the pass's error and counts it in controller_runtime_reconcile_panics_total.
func (r *Reconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	owner, found, err := r.getOwner(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !found || !owner.GetDeletionTimestamp().IsZero() {
		r.backoff.Forget(req.NamespacedName)
		return ctrl.Result{}, nil // garbage collection removes the children
	}
	p := newPass(owner)
	var out kit.Outcome
	if r.validate(p) && r.ensureRevision(ctx, p) && r.observe(ctx, p) {
		r.act(ctx, p)
	}
	if p.cacheBehind {
		out.Conflict() // the cache is behind a write, often this owner's own: retry once it caught up
		return r.backoff.Result(req.NamespacedName, &out)
	}
	prev := owner.DaemonStatus().DeepCopy()
	status := computeStatus(prev, owner.GetGeneration(), p, metav1.NewTime(r.cfg.Clock.Now()))
	_, statusErr := p.events(prev, &status).EmitAfter(r.cfg.Recorder, owner, func() (bool, error) {
		return r.writeStatus(ctx, owner, &status)
	})
	out.Error(p.errors()...)
	out.Error(statusErr)
	if p.completed && statusErr == nil {
		out.Error(r.cleanupHistory(ctx, owner, p.revision, liveRevisions(p.children)))
	}
	return r.backoff.Result(req.NamespacedName, &out)
}

// validate checks the spec and picks the workload adapter of its template. An invalid spec is no error: the
// next spec change triggers a pass.
func (r *Reconciler[T]) validate(p *pass) bool {
	if p.invalid = validateSpec(p.spec); len(p.invalid) > 0 {
		return false
	}
	adapter, ok := render.AdapterFor(p.kind)
	if !ok {
		p.invalid = field.ErrorList{field.InternalError(field.NewPath("spec", "workloadTemplate"),
			fmt.Errorf("no workload adapter for %q", p.kind))}
		return false
	}
	p.adapter = adapter
	return true
}

// ensureRevision (writes) makes sure the ControllerRevision of the current template exists and is the
// newest. A failure only because the cache is behind the API server is no RevisionFailed: the pass is
// retried.
func (r *Reconciler[T]) ensureRevision(ctx context.Context, p *pass) bool {
	p.revision, p.revisionErr = r.revisions(ctx, p.owner.(T))
	if p.revisionErr != nil && cacheBehind(p.revisionErr) {
		p.cacheBehind = true
	}
	return p.revisionErr == nil
}

// observe (reads) lists the eligible pools and the owned children and classifies the children: which pool
// needs a child, which child is kept, which is deleted. A failed read touches nothing.
func (r *Reconciler[T]) observe(ctx context.Context, p *pass) bool {
	if p.pools, p.poolsErr = listPools(ctx, r.cfg.Client, p.spec); p.poolsErr != nil {
		return false
	}
	p.poolByName = make(map[string]render.Pool, len(p.pools.eligible))
	for _, pool := range p.pools.eligible {
		p.poolByName[pool.Name] = pool
	}
	children, err := listOwnedChildren(ctx, r.cfg.Client, p.owner.GetNamespace(), p.owner.GetUID())
	if err != nil {
		p.poolsErr = err // a failed read of children is handled like a failed read of pools
		return false
	}
	p.children = children
	p.cls = classify(p.owner.GetName(), p.kind, p.pools, children)
	p.completed = true
	return true
}

// act (writes) creates, then updates, then deletes children. A failing pool never blocks the others; the
// failures are in the pass.
func (r *Reconciler[T]) act(ctx context.Context, p *pass) {
	r.createChildren(ctx, p)
	r.updateChildren(ctx, p)
	r.deleteChildren(ctx, p)
}

// validateSpec applies the webhook's structural rules the controller relies on: exactly one template
// member, a valid selector matching the template's pod labels, a valid nodepoolSelector, and well-formed
// tweaks. revisionHistoryLimit and the template's nodeSelector are not checked here: a negative
// revisionHistoryLimit counts as 0, and the pool nodeSelector key is overwritten by rendering anyway.
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
	if err := r.cfg.Client.Get(ctx, key, owner); err != nil {
		var zero T
		if apierrors.IsNotFound(err) {
			return zero, false, nil
		}
		return zero, false, fmt.Errorf("getting %s %s: %w", r.kind.gvk.Kind, key, err)
	}
	return owner, true, nil
}

// writeStatus (writes) writes the status through the status subresource, only if it changed, with the
// observed resourceVersion as precondition. It reports whether it wrote.
func (r *Reconciler[T]) writeStatus(ctx context.Context, owner T, status *openyurtv1alpha1.YurtAppDaemonStatus) (bool, error) {
	return kit.WriteStatus(ctx, r.cfg.Client, owner,
		func(o T) *openyurtv1alpha1.YurtAppDaemonStatus { return o.DaemonStatus() }, status, statusEqual)
}

// errors returns the errors of the pass: a failed read or revision step, and the actions that failed, so
// the owner is retried with backoff. Name conflicts count: no event announces that the foreign object is
// gone. Render errors do not: only a change of the spec or the pool, which triggers a pass anyway, can cure
// them.
func (p *pass) errors() []error {
	errs := []error{p.revisionErr, p.poolsErr}
	for _, m := range []map[string]error{p.createFailed, p.updateFailed, p.deleteFailed} {
		for _, k := range sortedKeys(m) {
			errs = append(errs, m[k])
		}
	}
	if len(p.nameConflicts) > 0 {
		errs = append(errs, fmt.Errorf("workload names taken by objects the owner does not control: %s",
			kit.NameList(slices.Collect(maps.Values(p.nameConflicts)))))
	}
	return errs
}

// controllerRef is the controller ownerReference to owner.
func controllerRef(owner client.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}
