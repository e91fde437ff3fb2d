package stagedbindingpolicy

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpmetrics"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
)

// Config holds what a Reconciler needs.
type Config struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server: the re-check before a promotion and the freshness check before
	// BindingPolicy writes.
	APIReader client.Reader
	// CEL compiles and caches the expressions (shared with the webhook).
	CEL *sbpcel.Cache
	// Recorder emits events.k8s.io events on StagedBindingPolicies.
	Recorder events.EventRecorder
	// Clock tells the time of a pass (the real clock when nil).
	Clock clock.PassiveClock
}

// Reconciler runs the passes of StagedBindingPolicies (docs/design/stagedbindingpolicy.md). It keeps no
// rollout state in memory: each pass decides from the policy's status and the live objects.
type Reconciler struct {
	cfg     Config
	backoff *kit.Backoff
}

// NewReconciler returns a Reconciler ready to run, with its defaults filled and its conflict backoff.
func NewReconciler(cfg Config) *Reconciler {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Reconciler{cfg: cfg, backoff: kit.NewBackoff()}
}

// Reconcile runs one pass: get the policy; observe its BindingPolicies, their Bindings and the active
// stage's CombinedStatuses; decide; commit a transition by a status write before any BindingPolicy write
// it leads to; write the BindingPolicies; write the status once if it changed; emit events after the
// write.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := r.cfg.Clock.Now()
	sbp := &communityv1alpha1.StagedBindingPolicy{}
	if err := r.cfg.Client.Get(ctx, req.NamespacedName, sbp); err != nil {
		if apierrors.IsNotFound(err) {
			sbpmetrics.Forget(req.Name) // its BindingPolicies go by garbage collection
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading StagedBindingPolicy %s: %w", req.Name, err)
	}
	if sbp.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	var o kit.Outcome
	obs, err := r.observe(ctx, sbp)
	if err != nil {
		o.Error(err)
		return r.backoff.Result(req.NamespacedName, &o)
	}
	d := stager.Decide(stager.Input{SBP: sbp, Observed: obs, Now: start, CEL: r.cfg.CEL})
	r.run(ctx, sbp, d, start, &o)
	o.RequeueAfter(d.RequeueAfter)
	return r.backoff.Result(req.NamespacedName, &o)
}

// run applies a decision: the commit, the BindingPolicy writes, the status and the events.
func (r *Reconciler) run(ctx context.Context, sbp *communityv1alpha1.StagedBindingPolicy, d *stager.Decision,
	start time.Time, o *kit.Outcome) {
	committed := false
	if d.Commit {
		if d.Promoted != "" && !r.promotionHolds(ctx, &d.Status, d.Promoted) {
			o.Conflict() // the cache was ahead of the API server or behind it: decide again
			return
		}
		wrote, err := r.writeStatus(ctx, sbp, &d.Status, true)
		if err != nil || !wrote {
			o.Error(err)
			return
		}
		committed = true
		if d.Promoted != "" {
			sbpmetrics.PromotionLatency.Observe(r.cfg.Clock.Since(start).Seconds())
		}
	}
	if len(d.AnnotationRemovals) > 0 {
		// Removing an annotation advances the policy's resourceVersion: the status write below must carry the
		// new one (removeAnnotation patches this copy), or it would conflict with drover's own patch.
		sbp = sbp.DeepCopy()
	}
	if len(d.Writes)+len(d.Deletes)+len(d.AnnotationRemovals) > 0 {
		if committed || r.fresh(ctx, sbp) {
			r.execute(ctx, sbp, d, &d.Events, o) // the BindingPolicy events follow the decision's
		} else {
			o.Conflict()
		}
	}
	_, err := d.Events.EmitAfter(r.cfg.Recorder, sbp, func() (bool, error) {
		if committed {
			return false, nil // the commit wrote the status
		}
		return r.writeStatus(ctx, sbp, &d.Status, false)
	})
	if err != nil {
		o.Error(err)
		return
	}
	record(sbp, d)
}

// writeStatus writes the decided status. A commit always writes; otherwise a status that differs from the
// stored one only in the times of the last evaluations is not written (a pass that changed nothing makes no
// API call).
func (r *Reconciler) writeStatus(ctx context.Context, sbp *communityv1alpha1.StagedBindingPolicy,
	want *communityv1alpha1.StagedBindingPolicyStatus, commit bool) (bool, error) {
	status := func(s *communityv1alpha1.StagedBindingPolicy) *communityv1alpha1.StagedBindingPolicyStatus {
		return &s.Status
	}
	equal := func(a, b *communityv1alpha1.StagedBindingPolicyStatus) bool { return !commit && sameStatus(a, b) }
	return kit.WriteStatus(ctx, r.cfg.Client, sbp, status, want, equal)
}

// sameStatus compares two statuses, the times of the last evaluations aside.
func sameStatus(stored, want *communityv1alpha1.StagedBindingPolicyStatus) bool {
	if len(stored.Stages) != len(want.Stages) {
		return false
	}
	w := want.DeepCopy()
	for i := range w.Stages {
		if a, b := stored.Stages[i].LastEvaluation, w.Stages[i].LastEvaluation; a != nil && b != nil {
			b.Time = a.Time
		}
	}
	return equality.Semantic.DeepEqual(stored, w)
}

// promotionHolds re-reads the BindingPolicy a promotion relies on, and its Binding, from the API server and
// confirms they are still current and of the incarnation the cache showed: a promotion never rests on a
// cache that is behind. The incarnation is the one the status to commit records: the pass may have recorded
// it just now (a BindingPolicy adopted, or seen current for the first time), before any status holds it.
func (r *Reconciler) promotionHolds(ctx context.Context, status *communityv1alpha1.StagedBindingPolicyStatus, name string) bool {
	bp, binding, err := r.readLive(ctx, name)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Re-reading the active BindingPolicy before a promotion failed", "bindingPolicy", name, "error", err.Error())
		return false
	}
	var recorded string
	for _, e := range status.Stages {
		if e.BindingPolicyName == name && e.Result != communityv1alpha1.StageSuperseded {
			recorded = string(e.BindingPolicyUID)
		}
	}
	ok, _ := stager.Current(bp, binding)
	return ok && bp != nil && string(bp.UID) == recorded
}

// fresh reports whether the cached policy is the stored one, by reading its metadata from the API server.
// BindingPolicy writes derive from the status, so they must never derive from a status the cache has not
// caught up with (a pass right after a commit): a create or a delete made on an old status would be undone
// by the next pass, moving the workload twice.
func (r *Reconciler) fresh(ctx context.Context, sbp *communityv1alpha1.StagedBindingPolicy) bool {
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(communityv1alpha1.GroupVersion.WithKind("StagedBindingPolicy"))
	if err := r.cfg.APIReader.Get(ctx, client.ObjectKeyFromObject(sbp), live); err != nil {
		return false
	}
	return live.ResourceVersion == sbp.ResourceVersion
}

// record updates the metrics of the pass.
func record(sbp *communityv1alpha1.StagedBindingPolicy, d *stager.Decision) {
	if d.Commit {
		for _, t := range d.Transitions {
			sbpmetrics.StageTransitions.WithLabelValues(sbp.Name, t.Stage, t.Result).Inc()
			if t.Duration > 0 {
				sbpmetrics.StageDuration.WithLabelValues(sbp.Name, t.Stage, t.Result).Observe(t.Duration.Seconds())
			}
		}
	}
	for _, c := range d.CEL {
		sbpmetrics.CELEvaluations.WithLabelValues(string(c.Kind), c.Outcome).Add(float64(c.N))
	}
	for _, e := range d.GateErrors {
		sbpmetrics.CELEvaluationErrors.WithLabelValues(sbp.Name, e.Stage, string(e.Kind), e.Reason).Inc()
	}
	index := 0
	if d.Status.ActiveStageIndex != nil {
		index = int(*d.Status.ActiveStageIndex)
	}
	sbpmetrics.SetPhase(sbp.Name, string(d.Status.Phase), index)
}
