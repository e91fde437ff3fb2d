package stager

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
)

// waitingReasons are the Progressing reasons that mean the phase Waiting: blocked on time, a person or a
// problem. The others mean Progressing: expected to move on by itself.
var waitingReasons = map[string]bool{
	communityv1alpha1.ReasonSoaking: true, communityv1alpha1.ReasonAwaitingApproval: true,
	communityv1alpha1.ReasonNoDestinations: true, communityv1alpha1.ReasonNoObjects: true,
	communityv1alpha1.ReasonNoStatusCollectors: true, communityv1alpha1.ReasonStatusCollectorsMissing: true,
	communityv1alpha1.ReasonGateError: true, communityv1alpha1.ReasonInvalidSpec: true,
	communityv1alpha1.ReasonConflict: true, communityv1alpha1.ReasonTerminating: true,
}

// invalidSpec freezes the rollout on a spec that breaks a rule (the webhook was bypassed): the status says
// what is wrong, with field paths, and no BindingPolicy is written.
func (p *pass) invalidSpec(errs field.ErrorList) {
	p.invalid = true
	reason := communityv1alpha1.ReasonInvalidField
	for _, err := range errs {
		switch {
		case err.Field == "metadata.name":
			reason = communityv1alpha1.ReasonNameTooLong
		case strings.HasSuffix(err.Field, ".filter"), strings.HasSuffix(err.Field, ".condition"),
			strings.HasSuffix(err.Field, ".failureCondition"):
			reason = communityv1alpha1.ReasonInvalidExpression
		}
	}
	p.reason, p.message = communityv1alpha1.ReasonInvalidSpec, truncate(errs.ToAggregate().Error())
	p.invalidReason = reason
}

// phase is the rollout's phase, by precedence: Completed, Halted, Paused, Waiting, Progressing.
func (p *pass) phase() communityv1alpha1.Phase {
	if p.invalid {
		if p.old.Phase == communityv1alpha1.PhaseCompleted || p.old.Phase == communityv1alpha1.PhaseHalted {
			return p.old.Phase
		}
		return communityv1alpha1.PhaseWaiting
	}
	e := p.activeEntry()
	switch {
	case e != nil && e.Result == communityv1alpha1.StageSucceeded && p.active == len(p.spec.Stages)-1:
		return communityv1alpha1.PhaseCompleted
	case e != nil && e.Result == communityv1alpha1.StageHalted:
		return communityv1alpha1.PhaseHalted
	case p.paused():
		return communityv1alpha1.PhasePaused
	case waitingReasons[p.reason]:
		return communityv1alpha1.PhaseWaiting
	}
	return communityv1alpha1.PhaseProgressing
}

// setPhaseAndConditions sets the phase and every condition, and raises the event of entering a waiting
// state (once per reason), of a new expression error and of a new spec error.
func (p *pass) setPhaseAndConditions() {
	phase := p.phase()
	if p.reason == "" && phase == communityv1alpha1.PhaseProgressing {
		p.reason, p.message = communityv1alpha1.ReasonPromoting, "gates hold"
	}
	if p.handingOver && p.reason == communityv1alpha1.ReasonBindingPolicyPending {
		p.reason = communityv1alpha1.ReasonHandingOver
	}
	p.st.Phase = phase
	set := func(t string, ok bool, reason, message string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		// The transition time comes from the pass's clock, as every time of the status does (SetStatusCondition
		// would take the wall clock); it is kept when the status does not change.
		meta.SetStatusCondition(&p.st.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason,
			Message: truncate(message), ObservedGeneration: p.sbp.Generation, LastTransitionTime: p.now})
	}
	completed := phase == communityv1alpha1.PhaseCompleted
	set(communityv1alpha1.ConditionReady, completed, readyReason(phase), readyMessage(phase, p.st.ActiveStage))
	p.setProgressing(set, phase)
	set(communityv1alpha1.ConditionCompleted, completed, completedReason(completed), readyMessage(phase, p.st.ActiveStage))
	p.setHalted(set, phase)
	p.setGateError(set)
	p.setInvalidSpec(set)
	p.setBindingPolicyReady(set)
	p.waitingEvent(phase)
}

func readyReason(phase communityv1alpha1.Phase) string {
	if phase == communityv1alpha1.PhaseCompleted {
		return communityv1alpha1.ReasonRolloutCompleted
	}
	return string(phase)
}

func completedReason(completed bool) string {
	if completed {
		return communityv1alpha1.ReasonRolloutCompleted
	}
	return communityv1alpha1.ReasonNotCompleted
}

func readyMessage(phase communityv1alpha1.Phase, active string) string {
	if phase == communityv1alpha1.PhaseCompleted {
		return "every stage passed its gates; the last stage " + active + " stays placed"
	}
	return "rollout " + strings.ToLower(string(phase)) + " at stage " + active
}

type setFunc func(t string, ok bool, reason, message string)

func (p *pass) setProgressing(set setFunc, phase communityv1alpha1.Phase) {
	switch phase {
	case communityv1alpha1.PhaseProgressing, communityv1alpha1.PhaseWaiting:
		set(communityv1alpha1.ConditionProgressing, true, p.reason, p.message)
	default:
		set(communityv1alpha1.ConditionProgressing, false, string(phase), readyMessage(phase, p.st.ActiveStage))
	}
}

func (p *pass) setHalted(set setFunc, phase communityv1alpha1.Phase) {
	if phase != communityv1alpha1.PhaseHalted {
		set(communityv1alpha1.ConditionHalted, false, communityv1alpha1.ReasonNotHalted, "")
		return
	}
	if p.haltReason == "" {
		// Halted by an earlier pass: the condition stays as that pass set it (with an invalid spec the active
		// stage is not even resolved, so its entry cannot be read).
		if c := meta.FindStatusCondition(p.old.Conditions, communityv1alpha1.ConditionHalted); c != nil && c.Status == metav1.ConditionTrue {
			set(communityv1alpha1.ConditionHalted, true, c.Reason, c.Message)
			return
		}
	}
	reason, message := p.haltReason, ""
	if reason == "" {
		reason = communityv1alpha1.ReasonFailureCondition
	}
	if e := p.activeEntry(); e != nil && !p.invalid {
		message = e.Message
	}
	set(communityv1alpha1.ConditionHalted, true, reason, message)
}

func (p *pass) setGateError(set setFunc) {
	if p.gateErr == nil {
		set(communityv1alpha1.ConditionGateError, false, communityv1alpha1.ReasonNoGateError, "")
		return
	}
	set(communityv1alpha1.ConditionGateError, true, p.gateErr.reason, p.gateErr.message)
	if old := meta.FindStatusCondition(p.old.Conditions, communityv1alpha1.ConditionGateError); old == nil ||
		old.Status != metav1.ConditionTrue || old.Message != truncate(p.gateErr.message) {
		p.d.Events.Warning(communityv1alpha1.ReasonGateError, actionGate, nil, "%s", p.gateErr.message)
	}
}

func (p *pass) setInvalidSpec(set setFunc) {
	if !p.invalid {
		set(communityv1alpha1.ConditionInvalidSpec, false, communityv1alpha1.ReasonSpecValid, "")
		return
	}
	set(communityv1alpha1.ConditionInvalidSpec, true, p.invalidReason, p.message)
	if old := meta.FindStatusCondition(p.old.Conditions, communityv1alpha1.ConditionInvalidSpec); old == nil ||
		old.Status != metav1.ConditionTrue || old.Message != p.message {
		p.d.Events.Warning(communityv1alpha1.ReasonInvalidSpec, actionRollout, nil, "The spec is invalid; the rollout is frozen: %s", p.message)
	}
}

func (p *pass) setBindingPolicyReady(set setFunc) {
	if p.invalid {
		if old := meta.FindStatusCondition(p.old.Conditions, communityv1alpha1.ConditionBindingPolicyReady); old != nil {
			meta.SetStatusCondition(&p.st.Conditions, *old)
		}
		return
	}
	reason := p.bp.reason
	if !p.bp.current && p.handingOver && reason == communityv1alpha1.ReasonPending {
		reason = communityv1alpha1.ReasonHandingOver
	}
	set(communityv1alpha1.ConditionBindingPolicyReady, p.bp.current, reason, p.bp.message)
}

// waitingEvent raises one event on entering a waiting reason: Normal for soaking and awaiting approval,
// Warning for the problems. Expression and spec errors have their own events.
func (p *pass) waitingEvent(phase communityv1alpha1.Phase) {
	if phase != communityv1alpha1.PhaseWaiting || p.reason == communityv1alpha1.ReasonGateError || p.reason == communityv1alpha1.ReasonInvalidSpec {
		return
	}
	if old := meta.FindStatusCondition(p.old.Conditions, communityv1alpha1.ConditionProgressing); old != nil &&
		p.old.Phase == communityv1alpha1.PhaseWaiting && old.Reason == p.reason {
		return
	}
	if p.reason == communityv1alpha1.ReasonSoaking || p.reason == communityv1alpha1.ReasonAwaitingApproval {
		p.d.Events.Normal(p.reason, actionGate, nil, "Stage %s: %s", p.st.ActiveStage, p.message)
		return
	}
	p.d.Events.Warning(p.reason, actionGate, nil, "Stage %s: %s", p.st.ActiveStage, p.message)
}

// truncate bounds a status message.
func truncate(s string) string { return kit.Truncate(s, communityv1alpha1.MaxMessageLength) }
