package stager

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
)

// Event actions.
const (
	actionRollout = "Rollout"
	actionGate    = "Gate"
)

// pass is the working state of one decision.
type pass struct {
	in   Input
	sbp  *communityv1alpha1.StagedBindingPolicy
	spec *communityv1alpha1.StagedBindingPolicySpec
	old  *communityv1alpha1.StagedBindingPolicyStatus
	st   *communityv1alpha1.StagedBindingPolicyStatus
	now  metav1.Time
	d    *Decision

	// active is the index of the active stage in the spec.
	active int
	// invalid is set when the spec breaks a rule: nothing moves, nothing is written but the status.
	invalid bool
	// reason and message say what holds the active stage (the Progressing condition's reason); "" when
	// nothing does.
	reason, message string
	// bp is the state of the active stage's BindingPolicy (the BindingPolicyReady condition).
	bp bpState
	// gateErr is the first expression error of the pass.
	gateErr *gateError
	// transitioned is set once the pass made its one stage transition.
	transitioned bool
	// invalidReason is the InvalidSpec condition's reason.
	invalidReason string
	// haltReason is the reason of a halt made by this pass.
	haltReason string
	// destsKey is the key of the active Binding's destinations (sbpcel.DestinationsKey), computed once.
	destsKey uint64
	// handingOver is set while BindingPolicies no longer desired wait for the desired ones to be current.
	handingOver bool
}

// Decide runs one pass of the rollout: it reads in and returns what to write. It never panics on any spec,
// status or observed objects, and it does not modify them.
func Decide(in Input) *Decision {
	p := &pass{
		in:  in,
		sbp: in.SBP,
		old: &in.SBP.Status,
		now: metav1.NewTime(in.Now),
		d:   &Decision{},
	}
	p.spec = &in.SBP.Spec
	st := in.SBP.Status.DeepCopy()
	p.st = st
	if errs := Validate(in.SBP, in.CEL); len(errs) > 0 {
		p.invalidSpec(errs)
		return p.finish()
	}
	p.resolve()
	if p.active < 0 { // the active stage vanished while paused: only the pause itself is recorded
		p.pauseOrResume()
		return p.finish()
	}
	p.bookkeeping()
	p.observeBindingPolicies()
	p.progress()
	p.plan()
	p.pruneHistory() // a stage activated by this pass joins the history in spec order
	return p.finish()
}

// activeEntry returns the history entry of the active stage (resolve made sure there is one).
func (p *pass) activeEntry() *communityv1alpha1.StageStatus {
	if p.active < 0 || p.active >= len(p.spec.Stages) {
		return nil
	}
	return entryOf(p.st, p.spec.Stages[p.active].Name)
}

// commit marks the pass's status as carrying a transition.
func (p *pass) commit() { p.d.Commit = true }

// transition records a stage transition for metrics.
func (p *pass) transition(stage, result string, e *communityv1alpha1.StageStatus) {
	t := Transition{Stage: stage, Result: result}
	if e != nil && e.StartedAt != nil && e.CompletedAt != nil {
		t.Duration = e.CompletedAt.Sub(e.StartedAt.Time)
	}
	p.d.Transitions = append(p.d.Transitions, t)
	p.commit()
}

// requeueAfter keeps the earliest positive timer.
func (p *pass) requeueAfter(d time.Duration) {
	if d > 0 && (p.d.RequeueAfter == 0 || d < p.d.RequeueAfter) {
		p.d.RequeueAfter = d
	}
}

// paused reports whether spec.paused freezes the rollout.
func (p *pass) paused() bool { return p.spec.Paused }

// finish sets the phase, the conditions and the events of entering a waiting state.
func (p *pass) finish() *Decision {
	p.orderHistory()
	p.setPhaseAndConditions()
	p.st.ObservedGeneration = p.sbp.Generation
	p.d.Status = *p.st
	return p.d
}

// clockStart is the start of a stage's gate clock set now: the time of the pass rounded up to the second.
// The status stores times to the second, rounded down, so a clock started at 12:00:00.7 would read 12:00:00
// on the next pass and a soak or a deadline would end up to a second early; rounded up, it ends at worst a
// second late. A stage that completes before that second is over gets its clock start clamped to its
// completion (orderHistory).
func (p *pass) clockStart() *metav1.Time {
	t := p.now.Time
	if t.Nanosecond() != 0 {
		t = t.Truncate(time.Second).Add(time.Second)
	}
	mt := metav1.NewTime(t)
	return &mt
}

// orderHistory keeps every history entry in order, startedAt <= clockStartedAt <= completedAt: a clock start
// rounded up past the completion of its stage (a stage that completed within its first second, or in the
// pass that restarted its clock) is clamped to the completion. Only finished stages are touched, so the clock
// of the active stage, which a soak or a deadline measures from, keeps its rounded-up value.
func (p *pass) orderHistory() {
	for i := range p.st.Stages {
		e := &p.st.Stages[i]
		if e.CompletedAt == nil || e.ClockStartedAt == nil || !e.ClockStartedAt.After(e.CompletedAt.Time) {
			continue
		}
		clamped := *e.CompletedAt
		e.ClockStartedAt = &clamped
	}
}
