package persistentpodstate

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/persistentpodstate/core"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsmetrics"
)

// Event actions of the controller (events.k8s.io requires one); the reasons are the kruisev1alpha1
// constants.
const (
	actionReconcile = "Reconcile"
	actionRecord    = "Record"
)

// Reasons of the StatusSizeLimitReached condition.
const (
	ReasonSizeBudgetExceeded    = "SizeBudgetExceeded"
	ReasonWriteRejectedTooLarge = "WriteRejectedTooLarge"
)

// decide builds the status to write: the computed records (or, when the target cannot be read, the
// recorded ones unchanged), kept within the size budget, and the problem conditions, each present only
// while its problem lasts.
func (r *Reconciler) decide(p *pass) {
	pps := p.pps
	st := kruisev1beta1.PersistentPodStateStatus{ObservedGeneration: pps.Generation, PodStates: pps.Status.PodStates}
	for i := range pps.Status.Conditions {
		st.Conditions = append(st.Conditions, *pps.Status.Conditions[i].DeepCopy())
	}
	if u := p.unavailable; u != nil {
		setProblem(&st.Conditions, kruisev1beta1.ConditionTargetUnavailable, true, u.Reason, u.Message, pps.Generation)
	} else {
		setProblem(&st.Conditions, kruisev1beta1.ConditionTargetUnavailable, false, "", "", pps.Generation)
		st.PodStates = p.result.PodStates
		if !equality.Semantic.DeepEqual(st.PodStates, pps.Status.PodStates) {
			st.PodStates, p.notRecorded = core.Guard(pps, st.PodStates, r.cfg.SizeLimit)
		}
		setProblem(&st.Conditions, kruisev1beta1.ConditionStatusSizeLimitReached, p.notRecorded > 0, ReasonSizeBudgetExceeded,
			fmt.Sprintf("%d pods are not recorded: the status would exceed the size budget of %d bytes", p.notRecorded, r.cfg.SizeLimit),
			pps.Generation)
	}
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
	p.status = st
	r.conditionEvents(p)
	for _, m := range p.result.Mismatches {
		if p.report(r.once, mismatchPrefix+string(m.UID)+"/"+m.Key, true) {
			p.events.Warning(kruisev1beta1.ReasonPersistedAnnotationMismatch, actionRecord, nil,
				"pod %s shows %s=%q; the recorded value %q is kept (the first value of an identity wins unless the same pod changes it)",
				m.Pod, m.Key, m.Current, m.Recorded)
		}
	}
}

// conditionEvents buffers one event per condition transition, read from the stored conditions, so a
// restart does not repeat them.
func (r *Reconciler) conditionEvents(p *pass) {
	before, after := p.pps.Status.Conditions, p.status.Conditions
	if c := meta.FindStatusCondition(after, kruisev1beta1.ConditionTargetUnavailable); c != nil {
		if old := meta.FindStatusCondition(before, c.Type); old == nil || old.Reason != c.Reason {
			p.events.Warning(kruisev1beta1.ConditionTargetUnavailable, actionReconcile, nil, "%s: %s; the recorded placements are left as they are", c.Reason, c.Message)
		}
	}
	was := meta.FindStatusCondition(before, kruisev1beta1.ConditionStatusSizeLimitReached) != nil
	is := meta.FindStatusCondition(after, kruisev1beta1.ConditionStatusSizeLimitReached) != nil
	switch {
	case is && !was:
		p.events.Warning(kruisev1beta1.ConditionStatusSizeLimitReached, actionRecord, nil,
			"%d pods are not recorded: the status would exceed the size budget of %d bytes", p.notRecorded, r.cfg.SizeLimit)
	case was && !is && p.unavailable == nil:
		p.events.Normal(kruisev1beta1.ReasonStatusSizeLimitCleared, actionRecord, nil, "every pod is recorded again")
	}
}

// setProblem sets condition typ while active and removes it otherwise: a healthy PPS has no conditions.
func setProblem(conds *[]metav1.Condition, typ string, active bool, reason, message string, generation int64) {
	if !active {
		meta.RemoveStatusCondition(conds, typ)
		return
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason,
		Message: kit.Truncate(message, kit.MaxMessageBytes), ObservedGeneration: generation})
}

// writeStatus writes p.status if it differs from the stored one, as a merge patch of what changed. A
// write refused as too large is replaced by a write of the condition alone, and retried after
// TooLargeRetry.
func (r *Reconciler) writeStatus(ctx context.Context, p *pass, out *kit.Outcome) (bool, error) {
	wrote, err := kit.PatchStatus(ctx, r.cfg.Client, p.pps, statusOf, &p.status, nil)
	switch {
	case err == nil:
		if wrote {
			ppsmetrics.StatusWrites.WithLabelValues(ppsmetrics.WriteOK).Inc()
			ppsmetrics.StatusSize.Observe(float64(core.Estimate(p.pps, p.status.PodStates)))
		}
		r.sizeLimited(ownerKey(p.pps), meta.FindStatusCondition(p.status.Conditions, kruisev1beta1.ConditionStatusSizeLimitReached) != nil)
		return wrote, nil
	case apierrors.IsConflict(err):
		ppsmetrics.StatusWrites.WithLabelValues(ppsmetrics.WriteConflict).Inc()
	case tooLarge(err):
		ppsmetrics.StatusWrites.WithLabelValues(ppsmetrics.WriteTooLarge).Inc()
		return false, r.writeTooLarge(ctx, p, out, err)
	default:
		ppsmetrics.StatusWrites.WithLabelValues(ppsmetrics.WriteError).Inc()
	}
	out.Error(err)
	return false, err
}

// writeTooLarge keeps the stored records and sets StatusSizeLimitReached with reason WriteRejectedTooLarge.
func (r *Reconciler) writeTooLarge(ctx context.Context, p *pass, out *kit.Outcome, cause error) error {
	st := *p.pps.Status.DeepCopy()
	st.ObservedGeneration = p.pps.Generation
	setProblem(&st.Conditions, kruisev1beta1.ConditionStatusSizeLimitReached, true, ReasonWriteRejectedTooLarge,
		"the API server refused the status as too large; new pods are not recorded until it shrinks", p.pps.Generation)
	out.RequeueAfter(TooLargeRetry)
	wrote, err := kit.PatchStatus(ctx, r.cfg.Client, p.pps, statusOf, &st, nil)
	if err != nil {
		out.Error(err)
		return err
	}
	r.sizeLimited(ownerKey(p.pps), true)
	// The pass's events announce a status that was not written: this write's Warning replaces them (the
	// status write runs inside p.events.EmitAfter, which emits the buffer as it is once the write returns).
	p.events = kit.Events{}
	if wrote {
		// The condition was not there in this form: one event per transition, not one per retry.
		p.events.Warning(kruisev1beta1.ConditionStatusSizeLimitReached, actionRecord, nil,
			"the API server refused the status as too large (%s); retrying in %s", kit.Truncate(cause.Error(), 200), TooLargeRetry)
	}
	return nil
}

// tooLarge reports whether err is the API server refusing an object as too large: 413, or etcd's
// "request is too large".
func tooLarge(err error) bool {
	return apierrors.IsRequestEntityTooLargeError(err) || strings.Contains(err.Error(), "request is too large")
}

func statusOf(p *kruisev1beta1.PersistentPodState) *kruisev1beta1.PersistentPodStateStatus {
	return &p.Status
}

// sizeLimited tracks which PPS are held back by the size guard, for the size_limited gauge.
func (r *Reconciler) sizeLimited(key string, limited bool) {
	n := r.once.setMember("size-limited", key, limited)
	ppsmetrics.SizeLimited.Set(float64(n))
}

// onceSet remembers which problems were already reported, so an event is emitted once per transition and
// not once per pass.
type onceSet struct {
	mu     sync.Mutex
	active map[string]map[string]bool // owner → problem → active
	sets   map[string]map[string]bool // set name → members
}

func newOnceSet() *onceSet {
	return &onceSet{active: map[string]map[string]bool{}, sets: map[string]map[string]bool{}}
}

// pending reports whether problem is active for owner and not reported yet. A cleared problem is forgotten
// at once; a new one is remembered only by commit, after its event was emitted, so an event lost with a
// failed status write is emitted by the next pass.
func (s *onceSet) pending(owner, problem string, active bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.active[owner]
	if !active {
		delete(m, problem)
		return false
	}
	return !m[problem]
}

// commit remembers problems of owner as reported.
func (s *onceSet) commit(owner string, problems []string) {
	if len(problems) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.active[owner]
	if m == nil {
		m = map[string]bool{}
		s.active[owner] = m
	}
	for _, p := range problems {
		m[p] = true
	}
}

// prune forgets the reported problems of owner whose names start with prefix and for which keep is false.
func (s *onceSet) prune(owner, prefix string, keep func(rest string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.active[owner] {
		if rest, ok := strings.CutPrefix(p, prefix); ok && !keep(rest) {
			delete(s.active[owner], p)
		}
	}
}

// setMember adds key to or removes it from set name, and returns the set's size.
func (s *onceSet) setMember(name, key string, member bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.sets[name]
	if m == nil {
		m = map[string]bool{}
		s.sets[name] = m
	}
	if member {
		m[key] = true
	} else {
		delete(m, key)
	}
	return len(m)
}

// forgetOwner drops what is remembered about a deleted PPS.
func (s *onceSet) forgetOwner(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.active, owner)
	for _, m := range s.sets {
		delete(m, owner)
	}
}
