package tapp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// +kubebuilder:rbac:groups=apps.tkestack.io,resources=tapps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps.tkestack.io,resources=tapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.tkestack.io,resources=tapps/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// DefaultPodWriteConcurrency is the default of --tapp-pod-write-concurrency: the most pod and PVC writes of
// one pass in flight at once (§2.5, §17).
const DefaultPodWriteConcurrency = 100

// Requeue delays.
const (
	// conflictRequeueDelay: a write lost a race (stale cache); retry once the cache caught up. Passes that
	// keep losing double it, up to maxConflictDelay (conflictBackoff).
	conflictRequeueDelay = time.Second
	maxConflictDelay     = 30 * time.Second
	// claimWaitRequeueDelay: a create waits for a PVC that is being deleted (§10); PVCs without a TApp
	// ownerReference (whenDeleted: Retain) cause no event when they are gone.
	claimWaitRequeueDelay = 5 * time.Second
)

// Config holds what a Reconciler needs.
type Config struct {
	// Client reads from the manager's cache, with the indexes of SetupIndexes, and writes to the API server.
	Client client.Client
	// APIReader reads from the API server: the one deliberate uncached read, adoption's UID recheck (§14).
	APIReader client.Reader
	// Recorder emits events.k8s.io events on TApps.
	Recorder events.EventRecorder
	// DeletePodAfterAppFinish is the default of spec.deletePodAfterAppFinish
	// (--tapp-delete-pod-after-app-finish).
	DeletePodAfterAppFinish bool
	// PodWriteConcurrency bounds the pod and PVC writes of one pass in flight (--tapp-pod-write-concurrency;
	// DefaultPodWriteConcurrency when not positive).
	PodWriteConcurrency int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Reconciler reconciles TApps: one pass observes the pods, plans with the pure functions of this package,
// executes the plan in the order of §6.3 and writes the status derived from the post-action view.
type Reconciler struct {
	cfg       Config
	exp       *expectations
	gauge     *instanceGauge
	conflicts *conflictBackoff
}

// NewReconciler returns a Reconciler.
func NewReconciler(cfg Config) *Reconciler {
	if cfg.PodWriteConcurrency <= 0 {
		cfg.PodWriteConcurrency = DefaultPodWriteConcurrency
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Reconciler{cfg: cfg, exp: newExpectations(), gauge: newInstanceGauge(), conflicts: newConflictBackoff()}
}

// run is what one reconcile pass observed and did. Writes run concurrently, but their outcomes are applied
// to a run by one goroutine, in ascending id order.
type run struct {
	key  types.NamespacedName
	app  *tkestackv1.TApp
	pass *Pass
	now  time.Time
	obs  Observation
	plan *Plan
	// view is the post-action view: the observed pods with this pass's successful writes applied.
	view Pods
	// written holds the ids whose pod this pass wrote (for the PVC retention of §10).
	written map[int]bool
	// planIssues are the plan's issues; issues the failed writes and claim conflicts of the pass.
	planIssues []Issue
	issues     []Issue
	errs       []error
	// conflict: a write lost a race or a create found the name taken; the cache is behind (requeue soon).
	conflict bool
	// claimWait: a PVC being deleted or controlled by another owner blocks a create; PVCs are not watched.
	claimWait bool
	events    []pendingEvent
}

// Reconcile is keyed by the TApp's namespace/name. It reads like the table of contents of §6.3.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app, err := r.getTApp(ctx, req.NamespacedName)
	if err != nil || app == nil {
		if err == nil {
			r.conflicts.reset(req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	rn := r.newRun(req.NamespacedName, app)
	if res, done, err := r.syncSpec(ctx, rn); done {
		r.emitEvents(rn, nil)
		return res, err
	}
	if err := r.observe(ctx, rn); err != nil {
		return ctrl.Result{}, err
	}
	rn.plan = rn.pass.Plan(rn.obs)
	rn.planIssues = rn.plan.Issues
	r.execute(ctx, rn)
	logPlan(ctx, rn)

	status, minReadyWait := rn.pass.Status(rn.postActionView(), append(slices.Clone(rn.planIssues), rn.issues...))
	statusErr := r.writeStatus(ctx, app, status)
	r.emitEvents(rn, &status)
	r.gauge.set(rn.key, status.Statuses)
	return r.result(rn, minReadyWait, statusErr)
}

func (r *Reconciler) newRun(key types.NamespacedName, app *tkestackv1.TApp) *run {
	return &run{
		key:     key,
		app:     app,
		pass:    NewPass(app, Options{DeletePodAfterAppFinish: r.cfg.DeletePodAfterAppFinish}),
		now:     r.cfg.Now(),
		written: map[int]bool{},
	}
}

// getTApp reads the TApp from the cache; nil when it does not exist (its expectations and metrics are
// dropped then).
func (r *Reconciler) getTApp(ctx context.Context, key types.NamespacedName) (*tkestackv1.TApp, error) {
	app := &tkestackv1.TApp{}
	if err := r.cfg.Client.Get(ctx, key, app); err != nil {
		if apierrors.IsNotFound(err) {
			r.exp.forget(key)
			r.gauge.forget(key)
			return nil, nil
		}
		return nil, fmt.Errorf("getting TApp %s: %w", key, err)
	}
	return app, nil
}

// execute runs the plan in the order of §6.3, building the post-action view. A failed write does not stop
// the later steps; failures become issues and errors of the run.
func (r *Reconciler) execute(ctx context.Context, rn *run) {
	r.writeGates(ctx, rn)
	r.deletePods(ctx, rn)
	r.createPods(ctx, rn)
	r.updatePods(ctx, rn)
	r.retainClaims(ctx, rn)
}

// logPlan logs, at V(1), what a pass that acted did.
func logPlan(ctx context.Context, rn *run) {
	p := rn.plan
	gates, deletes, creates, updates := len(p.GateWrites()), len(p.Deletes()), len(p.Creates()), len(p.Updates())
	if gates+deletes+creates+updates == 0 {
		return
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Executed plan", "gateWrites", gates, "deletes", deletes, "creates", creates,
		"updates", updates, "scheduled", p.Budget.Scheduled, "failures", len(rn.issues), "conflict", rn.conflict)
}

// postActionView returns the view the status is derived from (§15). Ids that were pending before the pass
// stay unavailable; the effects of this pass's writes are in the view itself.
func (rn *run) postActionView() Observation {
	return Observation{Pods: rn.view, Expecting: rn.obs.Expecting, Nodes: rn.obs.Nodes, Now: rn.now}
}

// writeStatus writes the status through the status subresource, only when it differs from the stored one,
// guarded by the observed resourceVersion (§15).
func (r *Reconciler) writeStatus(ctx context.Context, app *tkestackv1.TApp, status tkestackv1.TAppStatus) error {
	if equality.Semantic.DeepEqual(app.Status, status) {
		return nil
	}
	updated := app.DeepCopy()
	updated.Status = status
	err := r.cfg.Client.Status().Patch(ctx, updated, client.MergeFromWithOptions(app, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) { // NotFound: deleted meanwhile, its delete event follows
		return fmt.Errorf("writing status of TApp %s: %w", client.ObjectKeyFromObject(app), err)
	}
	return nil
}

// result turns the outcome of a pass into its return. Errors are returned (joined) for a rate-limited
// retry with backoff; lost races (conflicts) only requeue, backing off as errors do but without an error
// log (§17). Otherwise the pass requeues for the earliest of:
// a minReadySeconds wait, a PVC being deleted, the expiry of a pending expectation.
func (r *Reconciler) result(rn *run, minReadyWait time.Duration, statusErr error) (ctrl.Result, error) {
	var errs []error
	conflict := rn.conflict
	for _, err := range append(rn.errs, statusErr) {
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
	after := minReadyWait
	earliest := func(d time.Duration) {
		if d > 0 && (after == 0 || d < after) {
			after = d
		}
	}
	earliest(r.exp.nextExpiry(rn.key, rn.now))
	if rn.claimWait {
		earliest(claimWaitRequeueDelay)
	}
	if conflict {
		earliest(r.conflicts.next(rn.key))
	} else {
		r.conflicts.reset(rn.key)
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// fail records a failed write about a subject (an instance id, a pod or PVC name): an issue for ReplicaFailure, a Warning event (related to the
// object) and an error for the retry. Conflicts (a stale cache) only requeue, and NotFound means the
// object is gone, which its delete event reports.
func (rn *run) fail(reason, subject string, related runtime.Object, err error) {
	switch {
	case apierrors.IsConflict(err):
		rn.conflict = true
		return
	case apierrors.IsNotFound(err):
		return
	}
	rn.issues = append(rn.issues, Issue{Reason: reason, Subject: subject, Message: err.Error()})
	rn.errs = append(rn.errs, err)
	rn.warn(reason, actionFor(reason), related, "%v", err)
}

// expect records an expectation for an id written in this pass.
func (r *Reconciler) expect(rn *run, id int, x *expectation) {
	x.at = rn.now
	r.exp.expect(rn.key, rn.app.UID, id, x)
	rn.written[id] = true
}

// conflictBackoff spaces the passes of a TApp that keep losing races (§17: conflicts back off like errors,
// without error-level logs): 1 s, 2 s, 4 s, … up to maxConflictDelay. A pass without a conflict resets it.
// controller-runtime's own rate-limited requeue without an error (Result.Requeue) is deprecated.
type conflictBackoff struct {
	mu sync.Mutex
	n  map[types.NamespacedName]int
}

func newConflictBackoff() *conflictBackoff {
	return &conflictBackoff{n: map[types.NamespacedName]int{}}
}

// next counts one more conflicted pass of key and returns its delay.
func (b *conflictBackoff) next(key types.NamespacedName) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n[key]++
	d := conflictRequeueDelay << min(b.n[key]-1, 5)
	return min(d, maxConflictDelay)
}

func (b *conflictBackoff) reset(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.n, key)
}
