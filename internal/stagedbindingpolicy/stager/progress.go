package stager

import (
	"fmt"
	"time"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
)

// progress moves the rollout on from its active stage, making at most one transition per pass: a halted
// stage stays halted; a stage that already succeeded (reordered specs, appended stages) is promoted out of
// at once; an active stage is gated.
func (p *pass) progress() {
	e := p.activeEntry()
	if e == nil {
		return
	}
	switch e.Result {
	case communityv1alpha1.StageSucceeded:
		p.afterSucceeded()
	case communityv1alpha1.StageActive:
		p.gate(e)
	}
}

// afterSucceeded promotes into the next stage when the active stage already succeeded and has a successor:
// a completed rollout to which stages were appended reopens.
func (p *pass) afterSucceeded() {
	if p.active == len(p.spec.Stages)-1 || p.paused() || p.transitioned {
		return
	}
	if p.old.Phase == communityv1alpha1.PhaseCompleted {
		p.d.Events.Normal(communityv1alpha1.ReasonRolloutReopened, actionRollout, nil, "Rollout reopened: stage %s follows the completed stage %s",
			p.spec.Stages[p.active+1].Name, p.spec.Stages[p.active].Name)
	}
	p.activateNext()
}

// gate evaluates the active stage's gates and halts, waits or promotes.
func (p *pass) gate(e *communityv1alpha1.StageStatus) {
	stage := &p.spec.Stages[p.active]
	v := p.evaluate()
	eval := v.eval
	e.LastEvaluation = &eval
	frozen := p.paused() || p.transitioned
	if v.failure != "" && !frozen {
		p.halt(e, communityv1alpha1.ReasonFailureCondition, v.failure)
		return
	}
	clock := p.clockOf(e)
	automatic := v.reason == ""
	if stage.ProgressDeadline != nil && !p.paused() && !automatic {
		deadline := clock.Add(stage.ProgressDeadline.Duration)
		if !p.now.Time.Before(deadline) && !frozen {
			p.halt(e, communityv1alpha1.ReasonProgressDeadlineExceeded, fmt.Sprintf(
				"progress deadline of %s passed: %s", stage.ProgressDeadline.Duration, v.message))
			return
		}
		p.requeueAfter(deadline.Sub(p.now.Time))
	}
	if !automatic {
		p.reason, p.message = v.reason, v.message
		return
	}
	if stage.MinDuration != nil {
		if end := clock.Add(stage.MinDuration.Duration); p.now.Time.Before(end) {
			p.reason = communityv1alpha1.ReasonSoaking
			p.message = fmt.Sprintf("gates hold; soaking until %s", end.UTC().Format(time.RFC3339))
			p.requeueAfter(end.Sub(p.now.Time))
			return
		}
	}
	if stage.RequireApproval && e.ApprovedAt == nil {
		p.reason = communityv1alpha1.ReasonAwaitingApproval
		p.message = fmt.Sprintf("gates hold; waiting for kubectl annotate sbp %s %s=%s --overwrite",
			p.sbp.Name, communityv1alpha1.AnnotationApproveStage, e.Name)
		return
	}
	if frozen {
		return
	}
	p.promote(e)
}

// clockOf is the start of the stage's gate clock.
func (p *pass) clockOf(e *communityv1alpha1.StageStatus) time.Time {
	switch {
	case e.ClockStartedAt != nil:
		return e.ClockStartedAt.Time
	case e.StartedAt != nil:
		return e.StartedAt.Time
	}
	return p.now.Time
}

// promote marks the active stage succeeded and activates the next one, or completes the rollout after the
// last stage (whose BindingPolicy is kept). The approve annotation naming the stage is spent.
func (p *pass) promote(e *communityv1alpha1.StageStatus) {
	e.Result = communityv1alpha1.StageSucceeded
	e.CompletedAt = &p.now
	e.Message = ""
	p.transition(e.Name, ResultSucceeded, e)
	p.d.Promoted = e.BindingPolicyName
	if v, ok := p.sbp.Annotations[communityv1alpha1.AnnotationApproveStage]; ok && v == e.Name {
		p.d.AnnotationRemovals = append(p.d.AnnotationRemovals,
			AnnotationRemoval{Key: communityv1alpha1.AnnotationApproveStage, Value: v})
	}
	if p.active == len(p.spec.Stages)-1 {
		p.d.Events.Normal(communityv1alpha1.ReasonRolloutCompleted, actionRollout, nil, "Stage %s succeeded: the rollout is complete; BindingPolicy %s stays",
			e.Name, e.BindingPolicyName)
		p.transitioned = true
		return
	}
	p.d.Events.Normal(communityv1alpha1.ReasonStageSucceeded, actionRollout, nil, "Stage %s succeeded", e.Name)
	p.activateNext()
}

// activateNext makes the stage after the active one active.
func (p *pass) activateNext() {
	p.active++
	name := p.spec.Stages[p.active].Name
	p.activate(p.active)
	p.d.Events.Normal(communityv1alpha1.ReasonStageActivated, actionRollout, nil, "Stage %s activated: BindingPolicy %s", name,
		BindingPolicyName(p.sbp.Name, name))
	// The BindingPolicy judged before the promotion was the previous stage's: judge the new active one's, so
	// the committed status does not call a BindingPolicy that does not exist yet ready.
	p.bp = p.judgeActive()
	p.reason, p.message = waitingReasonOf(p.bp.reason), p.bp.message
	p.transitioned = true
}

// halt stops the rollout at the active stage. Its BindingPolicies are left as they are: there is no
// automatic rollback, and only a retry annotation moves the stage again.
func (p *pass) halt(e *communityv1alpha1.StageStatus, reason, message string) {
	e.Result = communityv1alpha1.StageHalted
	e.CompletedAt = &p.now
	e.Message = truncate(message)
	p.haltReason = reason
	p.transition(e.Name, ResultHalted, e)
	p.d.Events.Warning(communityv1alpha1.ReasonStageHalted, actionRollout, nil, "Stage %s halted (%s): %s; annotate %s=%s to retry",
		e.Name, reason, message, communityv1alpha1.AnnotationRetryStage, e.Name)
	p.transitioned = true
}
