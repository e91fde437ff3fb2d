package persistentpodstate

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/persistentpodstate/core"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
)

// TooLargeRetry is how long the controller waits after the API server refused a status as too large
// before it tries again: never a tight retry loop on a write that cannot succeed.
const TooLargeRetry = 10 * time.Minute

// NodeMissRetry is when a pass runs again after it skipped a Ready pod whose node the cache did not show
// (a node created a moment ago): no event about the pod would bring it back.
const NodeMissRetry = 5 * time.Second

// Config holds what a Reconciler needs.
type Config struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// Finder reads target workloads (shared with the generator).
	Finder *Finder
	// Whitelist returns the current custom-workload whitelist (the ConfigMap's latest snapshot).
	Whitelist func() *whitelist.Snapshot
	// Recorder emits events.k8s.io events on PersistentPodStates.
	Recorder events.EventRecorder
	// SizeLimit is the size budget of a status in bytes (--pps-status-size-limit).
	SizeLimit int
	// RetryInterval is when a pass runs again after the target was unavailable (--pps-kind-retry-interval).
	RetryInterval time.Duration
}

// Reconciler keeps status.podStates of each PersistentPodState: where each pod of its target last ran,
// and the persisted annotations (docs/design/persistentpodstate.md, Controller).
type Reconciler struct {
	cfg     Config
	inLife  *inLife
	backoff *kit.Backoff
	once    *onceSet
}

// NewReconciler returns a Reconciler with its in-memory state.
func NewReconciler(cfg Config) *Reconciler {
	return &Reconciler{cfg: cfg, inLife: newInLife(), backoff: kit.NewBackoff(), once: newOnceSet()}
}

// pass is what one reconcile learned and decided.
type pass struct {
	pps         *kruisev1beta1.PersistentPodState // from the cache: never modified
	workload    *Workload                         // nil: not found
	unavailable *UnavailableError
	result      core.Result
	inLife      map[core.InLifeKey]string
	podUIDs     map[types.UID]bool                     // the target's pods
	status      kruisev1beta1.PersistentPodStateStatus // the status to write
	notRecorded int                                    // new entries the size guard left out
	events      kit.Events
	reported    []string // problems newly reported by this pass's events (committed once they are emitted)
}

// mismatchPrefix starts the problem names of persisted-annotation mismatches: <prefix><pod UID>/<key>.
const mismatchPrefix = "mismatch/"

// report reports whether problem (active or not) needs an event now, and notes it for commit.
func (p *pass) report(once *onceSet, problem string, active bool) bool {
	if !once.pending(ownerKey(p.pps), problem, active) {
		return false
	}
	p.reported = append(p.reported, problem)
	return true
}

// Reconcile reads like the rules: get the PPS; find its target (an unreadable target leaves the records
// as they are); compute the records from the target's pods; apply the size guard; write the status once
// if it changed; emit events after the write.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pps := &kruisev1beta1.PersistentPodState{}
	if err := r.cfg.Client.Get(ctx, req.NamespacedName, pps); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.backoff.Forget(req.NamespacedName)
			r.once.forgetOwner(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pps.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	p := &pass{pps: pps}
	var out kit.Outcome
	if err := r.observe(ctx, p); err != nil {
		return ctrl.Result{}, err
	}
	r.decide(p)
	wrote, err := p.events.EmitAfter(r.cfg.Recorder, pps, func() (bool, error) { return r.writeStatus(ctx, p, &out) })
	if err == nil {
		r.once.commit(ownerKey(pps), p.reported)
		r.once.prune(ownerKey(pps), mismatchPrefix, func(rest string) bool { return p.podUIDs[types.UID(strings.Split(rest, "/")[0])] })
		if wrote {
			r.inLife.consume(p.result.Consumed, p.inLife)
		}
	}
	if p.unavailable != nil {
		out.RequeueAfter(r.cfg.RetryInterval)
	}
	if len(p.result.Skipped) > 0 {
		out.RequeueAfter(NodeMissRetry) // a Ready pod on a node the cache does not show yet
	}
	return r.backoff.Result(req.NamespacedName, &out)
}

// observe finds the target and, when it is readable, computes the new records from its pods.
func (r *Reconciler) observe(ctx context.Context, p *pass) error {
	pps := p.pps
	gk, err := kruisev1beta1.TargetGroupKind(pps.Spec.TargetRef)
	if err != nil || !Supported(r.cfg.Whitelist(), gk) {
		p.unavailable = &UnavailableError{Reason: ReasonKindNotAllowed,
			Message: "the target is neither a built-in kind (StatefulSet, Advanced StatefulSet, TApp) nor in the custom-workload whitelist"}
		return nil //nolint:nilerr // an unusable target is a condition on the PPS, not a failed pass
	}
	w, err := r.cfg.Finder.Find(ctx, pps.Namespace, gk, pps.Spec.TargetRef.Name, "")
	if p.unavailable = asUnavailable(err); p.unavailable != nil {
		return nil //nolint:nilerr // an unavailable target is a condition on the PPS, retried after RetryInterval
	}
	if err != nil {
		return err
	}
	p.workload = w
	r.checkDuplicates(ctx, p)
	var target *core.Target
	var pods []*corev1.Pod
	if w != nil {
		target = &core.Target{UID: w.UID, Deleting: w.Deleting, Replicas: w.Replicas, Ordinals: w.Ordinals}
		r.workloadWarnings(ctx, p)
		if !w.Deleting {
			if pods, err = ppsindex.ControlledPods(ctx, r.cfg.Client, pps.Namespace, w.UID); err != nil {
				return err
			}
		}
	}
	p.podUIDs = make(map[types.UID]bool, len(pods))
	for _, pod := range pods {
		p.podUIDs[pod.UID] = true
	}
	p.inLife = r.inLife.forPods(p.podUIDs)
	p.result = core.Compute(core.Pass{PPS: pps, Target: target, Pods: pods, Node: r.nodeLabels(ctx), InLife: p.inLife})
	return nil
}

// nodeLabels reads a node's labels from the Node cache.
func (r *Reconciler) nodeLabels(ctx context.Context) func(string) (map[string]string, bool) {
	return func(name string) (map[string]string, bool) {
		node := &corev1.Node{}
		if err := r.cfg.Client.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
			return nil, false
		}
		return node.Labels, true
	}
}

// checkDuplicates warns, once, on a PPS that targets a workload an older PPS of its namespace already
// targets (admission refuses that, but can be bypassed): both are reconciled, the oldest steers pods.
func (r *Reconciler) checkDuplicates(ctx context.Context, p *pass) {
	gk, _ := kruisev1beta1.TargetGroupKind(p.pps.Spec.TargetRef)
	list, err := ppsindex.ForTarget(ctx, r.cfg.Client, p.pps.Namespace, gk, p.pps.Spec.TargetRef.Name)
	if err != nil {
		return
	}
	oldest := ppsindex.Oldest(list)
	dup := oldest != nil && oldest.UID != p.pps.UID
	if p.report(r.once, "DuplicateTarget", dup) {
		p.events.Warning(kruisev1beta1.ReasonDuplicateTarget, actionReconcile, nil,
			"PersistentPodState %s targets the same workload and is older: it steers the pods; this one only records", oldest.Name)
	}
}

// workloadWarnings reports, once per transition, a custom kind's unreadable replica count and invalid
// reserved ordinals.
func (r *Reconciler) workloadWarnings(ctx context.Context, p *pass) {
	w := p.workload
	if p.report(r.once, "ReplicasMalformed", w.ReplicasMalformed) {
		p.events.Warning(kruisev1beta1.ReasonReplicasUnreadable, actionReconcile, w.Object,
			"the replica count of %s %s is missing or not a non-negative integer at its path (check replicasPath in the whitelist); taken as 0",
			w.GK.Kind, w.Object.GetName())
	}
	if p.report(r.once, "ReserveOrdinals", w.ReserveError != nil) {
		ctrl.LoggerFrom(ctx).Info("Ignoring invalid reserveOrdinals of the target", "error", w.ReserveError.Error())
	}
}

func ownerKey(obj client.Object) string { return client.ObjectKeyFromObject(obj).String() }
