package stager

import (
	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
)

// bookkeeping applies pause and resume, a retry of the halted stage and the approval of the active stage.
func (p *pass) bookkeeping() {
	p.pauseOrResume()
	p.retry()
	p.approval()
}

// pauseOrResume raises the pause and resume events. Resuming restarts the active stage's clock, so a soak
// or a deadline counts from the resume. Pausing a completed or halted rollout keeps its phase (and still
// freezes BindingPolicy writes).
func (p *pass) pauseOrResume() {
	wasPaused := p.old.Phase == communityv1alpha1.PhasePaused
	settled := p.old.Phase == communityv1alpha1.PhaseCompleted || p.old.Phase == communityv1alpha1.PhaseHalted
	switch {
	case p.paused() && !wasPaused && !settled:
		p.d.Events.Normal(communityv1alpha1.ReasonRolloutPaused, actionRollout, nil, "Rollout paused at stage %s", p.st.ActiveStage)
		p.commit()
	case !p.paused() && wasPaused:
		if e := p.activeEntry(); e != nil && e.Result == communityv1alpha1.StageActive {
			e.ClockStartedAt = p.clockStart()
		}
		p.d.Events.Normal(communityv1alpha1.ReasonRolloutResumed, actionRollout, nil, "Rollout resumed at stage %s; its clock restarts", p.st.ActiveStage)
		p.commit()
	}
}

// retry consumes the retry annotation: naming the halted active stage, it makes the stage active again with
// a fresh clock; otherwise it is removed with a warning. Nothing moves while paused, so the annotation waits.
func (p *pass) retry() {
	value, ok := p.sbp.Annotations[communityv1alpha1.AnnotationRetryStage]
	if !ok || p.paused() {
		return
	}
	p.d.AnnotationRemovals = append(p.d.AnnotationRemovals, AnnotationRemoval{Key: communityv1alpha1.AnnotationRetryStage, Value: value})
	e := p.activeEntry()
	if e == nil || value != p.st.ActiveStage || e.Result != communityv1alpha1.StageHalted {
		p.d.Events.Warning(communityv1alpha1.ReasonRetryIgnored, actionRollout, nil,
			"Annotation %s=%q ignored: it must name the halted active stage (active: %s, %s)",
			communityv1alpha1.AnnotationRetryStage, value, p.st.ActiveStage, resultOf(e))
		return
	}
	e.Result = communityv1alpha1.StageActive
	e.ClockStartedAt = p.clockStart()
	e.CompletedAt = nil
	e.Message = ""
	p.d.Events.Normal(communityv1alpha1.ReasonStageRetried, actionRollout, nil, "Stage %s retried: its clock restarts", e.Name)
	p.transition(e.Name, ResultRetried, nil)
	p.transitioned = true
}

// approval records when the approval of the active stage was first seen, and forgets it when the annotation
// stops naming the stage before the promotion (a revocation). An annotation naming a stage that already
// succeeded is spent and removed.
func (p *pass) approval() {
	value, ok := p.sbp.Annotations[communityv1alpha1.AnnotationApproveStage]
	e := p.activeEntry()
	if e == nil {
		return
	}
	approved := ok && value == e.Name
	switch {
	case approved && e.ApprovedAt == nil && e.Result == communityv1alpha1.StageActive:
		e.ApprovedAt = &p.now
		if p.spec.Stages[p.active].RequireApproval {
			p.d.Events.Normal(communityv1alpha1.ReasonApprovalAccepted, actionGate, nil, "Promotion of stage %s approved", e.Name)
		}
	case !approved && e.ApprovedAt != nil && e.Result != communityv1alpha1.StageSucceeded:
		e.ApprovedAt = nil
	}
	if ok && !approved && !p.paused() {
		if done := entryOf(p.st, value); done != nil && done.Result == communityv1alpha1.StageSucceeded {
			p.d.AnnotationRemovals = append(p.d.AnnotationRemovals, AnnotationRemoval{Key: communityv1alpha1.AnnotationApproveStage, Value: value})
		}
	}
}

// resultOf describes an entry's result for messages.
func resultOf(e *communityv1alpha1.StageStatus) string {
	if e == nil {
		return "no history"
	}
	return string(e.Result)
}
