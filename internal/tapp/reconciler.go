package tapp

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drover-dev/drover/internal/tapp/core"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/kit"
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
// one pass in flight at once.
const DefaultPodWriteConcurrency = 100

// claimWaitRequeueDelay: a create waits for a PVC that is being deleted; PVCs without a TApp
// ownerReference (whenDeleted: Retain) cause no event when they are gone.
const claimWaitRequeueDelay = 5 * time.Second

// Config holds what a Reconciler needs.
type Config struct {
	// Client reads from the manager's cache, with the indexes of SetupIndexes, and writes to the API server.
	Client client.Client
	// APIReader reads from the API server: the one deliberate uncached read, adoption's UID recheck.
	APIReader client.Reader
	// Recorder emits events.k8s.io events on TApps.
	Recorder events.EventRecorder
	// DeletePodAfterAppFinish is the default of spec.deletePodAfterAppFinish
	// (--tapp-delete-pod-after-app-finish).
	DeletePodAfterAppFinish bool
	// PodWriteConcurrency bounds the pod and PVC writes of one pass in flight (--tapp-pod-write-concurrency;
	// DefaultPodWriteConcurrency when not positive).
	PodWriteConcurrency int
	// Clock tells the time of a pass (the real clock when nil).
	Clock clock.PassiveClock
}

// Reconciler reconciles TApps: one pass observes the pods, plans with the pure functions of this package,
// executes the plan in a fixed order (execute) and writes the status derived from the post-action view.
type Reconciler struct {
	cfg     Config
	exp     *expectations
	gauge   *instanceGauge
	backoff *kit.Backoff
}

// NewReconciler returns a Reconciler with its defaults filled and its in-memory state.
func NewReconciler(cfg Config) *Reconciler {
	if cfg.PodWriteConcurrency <= 0 {
		cfg.PodWriteConcurrency = DefaultPodWriteConcurrency
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Reconciler{cfg: cfg, exp: newExpectations(), gauge: newInstanceGauge(), backoff: kit.NewBackoff()}
}

// run is what one reconcile pass observed and did. Writes run concurrently, but their outcomes are applied
// to a run by one goroutine, in ascending id order.
type run struct {
	key  types.NamespacedName
	app  *tkestackv1.TApp
	pass *core.Pass
	now  time.Time
	obs  core.Observation
	plan *core.Plan
	// view is the post-action view: the observed pods with this pass's successful writes applied.
	view core.Pods
	// written holds the ids whose pod this pass wrote (for the PVC retention).
	written map[int]bool
	// planIssues are the plan's issues; issues the failed writes and claim conflicts of the pass.
	planIssues []core.Issue
	issues     []core.Issue
	// out is the outcome of the pass: errors, lost races and requeue delays.
	out kit.Outcome
	// conflict: a write lost a race or a create found the name taken; the cache is behind (requeue soon).
	conflict bool
	// events are aggregated by reason and emitted once the status write succeeded.
	events passEvents
}

// Reconcile is keyed by the TApp's namespace/name. It reads like the table of contents of a pass: sync the
// spec, list and claim the pods (claimPods writes), observe, plan, execute, write the status, emit the events.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app, err := r.getTApp(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if app == nil {
		r.backoff.Forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	rn := r.newRun(req.NamespacedName, app)
	if r.syncSpec(ctx, rn) {
		// The spec patch ends the pass, which writes no status: its events follow the patch.
		rn.events.buffer().Emit(r.cfg.Recorder, rn.app)
		return r.backoff.Result(rn.key, &rn.out)
	}
	owned, err := r.listOwnedPods(ctx, rn.app)
	if err != nil {
		return ctrl.Result{}, err
	}
	pods, err := r.claimPods(ctx, rn, owned)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.observe(ctx, rn, pods); err != nil {
		return ctrl.Result{}, err
	}
	rn.plan = rn.pass.Plan(rn.obs)
	rn.planIssues = rn.plan.Issues
	r.execute(ctx, rn)
	logPlan(ctx, rn)

	status, minReadyWait := rn.pass.Status(rn.postActionView(), append(slices.Clone(rn.planIssues), rn.issues...))
	rn.issueWarnings(&status)
	_, err = rn.events.buffer().EmitAfter(r.cfg.Recorder, app, func() (bool, error) {
		return kit.WriteStatus(ctx, r.cfg.Client, app, tappStatus, &status, nil)
	})
	rn.out.Error(err)
	r.gauge.set(rn.key, status.Statuses)
	// The pass requeues for the earliest of: a minReadySeconds wait, a PVC being deleted (execute), the
	// expiry of a pending expectation, a lost race (backing off as errors do, without an error log).
	rn.out.RequeueAfter(minReadyWait)
	rn.out.RequeueAfter(r.exp.nextExpiry(rn.key, rn.now))
	return r.backoff.Result(rn.key, &rn.out)
}

func tappStatus(app *tkestackv1.TApp) *tkestackv1.TAppStatus { return &app.Status }

func (r *Reconciler) newRun(key types.NamespacedName, app *tkestackv1.TApp) *run {
	return &run{
		key:     key,
		app:     app,
		pass:    core.NewPass(app, core.Options{DeletePodAfterAppFinish: r.cfg.DeletePodAfterAppFinish}),
		now:     r.cfg.Clock.Now(),
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

// execute runs the plan in order (gate writes, deletes, creates, updates, PVC retention), building the post-action view. A failed write does not stop
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

// postActionView returns the view the status is derived from. Ids that were pending before the pass
// stay unavailable; the effects of this pass's writes are in the view itself.
func (rn *run) postActionView() core.Observation {
	return core.Observation{Pods: rn.view, Expecting: rn.obs.Expecting, Nodes: rn.obs.Nodes, Now: rn.now}
}

// fail records a failed write about a subject (an instance id, a pod or PVC name): an issue for
// ReplicaFailure, a Warning event (one per reason, naming the objects) and an error for the retry.
// Conflicts (a stale cache) only requeue, and NotFound means the object is gone, which its delete event
// reports.
func (rn *run) fail(reason, subject string, related client.Object, err error) {
	switch {
	case apierrors.IsConflict(err):
		rn.lostRace()
		return
	case apierrors.IsNotFound(err):
		return
	}
	rn.issues = append(rn.issues, core.Issue{Reason: reason, Subject: subject, Message: err.Error()})
	rn.out.Error(err)
	name := objectName(related)
	if name == "" {
		name = subject
	}
	rn.events.warning(reason, actionFor(reason), entry{obj: related, group: failedGroup(reason), note: err.Error(),
		name: name, detail: err.Error()})
}

// lostRace records that a write lost a race or a create found the name taken: the cache is behind.
func (rn *run) lostRace() {
	rn.conflict = true
	rn.out.Conflict()
}

// expect records an expectation for an id written in this pass.
func (r *Reconciler) expect(rn *run, id int, x *expectation) {
	x.at = rn.now
	r.exp.expect(rn.key, rn.app.UID, id, x)
	rn.written[id] = true
}
