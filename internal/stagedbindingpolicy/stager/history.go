package stager

import (
	"fmt"

	"k8s.io/utils/ptr"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
)

// entryOf returns the history entry of the stage name, or nil. Superseded entries are not stages of the spec
// any more and are never returned.
func entryOf(st *communityv1alpha1.StagedBindingPolicyStatus, name string) *communityv1alpha1.StageStatus {
	for i := range st.Stages {
		if e := &st.Stages[i]; e.Name == name && e.Result != communityv1alpha1.StageSuperseded {
			return e
		}
	}
	return nil
}

// stageIndex returns the index of the stage name in the spec, or -1.
func stageIndex(spec *communityv1alpha1.StagedBindingPolicySpec, name string) int {
	for i := range spec.Stages {
		if spec.Stages[i].Name == name {
			return i
		}
	}
	return -1
}

// resolve finds the active stage. A new policy activates its first stage; a policy whose active stage was
// renamed or removed continues at the same position, and the vanished stage is superseded (its
// BindingPolicy leaves by handover). Stages inserted before the active one are skipped (the rollout never
// moves backwards), and history entries of stages gone from the spec are dropped.
func (p *pass) resolve() {
	switch i := stageIndex(p.spec, p.st.ActiveStage); {
	case p.st.ActiveStage == "":
		p.active = 0
		p.activate(0)
		p.d.Events.Normal(communityv1alpha1.ReasonStageActivated, actionRollout, nil, "Stage %s activated: BindingPolicy %s",
			p.spec.Stages[0].Name, BindingPolicyName(p.sbp.Name, p.spec.Stages[0].Name))
		p.transitioned = true
	case i >= 0:
		p.active = i
		if entryOf(p.st, p.st.ActiveStage) == nil {
			p.adoptUpstreamProgress(i)
		}
	case p.paused():
		// The active stage left the spec while the rollout is paused: a pause freezes transitions, so the
		// replacement waits for the resume. Nothing of the status moves meanwhile.
		p.active = -1
		msg := fmt.Sprintf("the active stage %s is no longer in the spec; the stage at its position takes over on resume", p.st.ActiveStage)
		p.reason, p.message = communityv1alpha1.ReasonBindingPolicyPending, msg
		p.bp = bpState{reason: communityv1alpha1.ReasonPending, message: msg}
		return
	default:
		p.replaceVanished()
	}
	p.st.ActiveStage = p.spec.Stages[p.active].Name
	p.st.ActiveStageIndex = ptr.To(int32(p.active))
	p.skipEarlier()
	p.pruneHistory()
}

// activate makes stage i active with a fresh entry whose clock starts now.
func (p *pass) activate(i int) {
	name := p.spec.Stages[i].Name
	now := p.now
	fresh := communityv1alpha1.StageStatus{
		Name:              name,
		BindingPolicyName: BindingPolicyName(p.sbp.Name, name),
		Result:            communityv1alpha1.StageActive,
		StartedAt:         &now,
		ClockStartedAt:    p.clockStart(),
	}
	if e := entryOf(p.st, name); e != nil {
		*e = fresh
	} else {
		p.st.Stages = append(p.st.Stages, fresh)
	}
	p.st.ActiveStage = name
	p.st.ActiveStageIndex = ptr.To(int32(i))
	p.transition(name, ResultActivated, nil)
}

// adoptUpstreamProgress takes over a policy whose status the stager wrote: its active stage has no history
// entry. The stage gets an entry starting now, and the stages before it, which the stager promoted past,
// count as succeeded. Nothing is re-gated and no event is raised: this is bookkeeping, not a transition.
func (p *pass) adoptUpstreamProgress(i int) {
	now := p.now
	for j := range i {
		if entryOf(p.st, p.spec.Stages[j].Name) == nil {
			p.st.Stages = append(p.st.Stages, communityv1alpha1.StageStatus{
				Name:              p.spec.Stages[j].Name,
				BindingPolicyName: BindingPolicyName(p.sbp.Name, p.spec.Stages[j].Name),
				Result:            communityv1alpha1.StageSucceeded,
				CompletedAt:       &now,
				Message:           "promoted before drover took over the rollout",
			})
		}
	}
	name := p.spec.Stages[i].Name
	p.st.Stages = append(p.st.Stages, communityv1alpha1.StageStatus{
		Name:              name,
		BindingPolicyName: BindingPolicyName(p.sbp.Name, name),
		Result:            communityv1alpha1.StageActive,
		StartedAt:         &now,
		ClockStartedAt:    p.clockStart(),
	})
}

// replaceVanished handles an active stage renamed or removed from the spec: the stage now at its index (the
// last one if the spec is shorter) becomes active, and the vanished one is superseded.
func (p *pass) replaceVanished() {
	vanished := p.st.ActiveStage
	i := 0
	if p.st.ActiveStageIndex != nil {
		i = int(*p.st.ActiveStageIndex)
	}
	i = max(0, min(i, len(p.spec.Stages)-1))
	p.active = i
	if e := entryOf(p.st, vanished); e != nil {
		e.Result = communityv1alpha1.StageSuperseded
		e.CompletedAt = ptr.To(p.now)
		e.Message = fmt.Sprintf("stage %s left the spec while active; %s continues at its position", vanished, p.spec.Stages[i].Name)
		p.transition(vanished, ResultSuperseded, e)
	}
	next := p.spec.Stages[i].Name
	p.d.Events.Warning(communityv1alpha1.ReasonActiveStageReplaced, actionRollout, nil,
		"Active stage %s is no longer in the spec: stage %s at its position is active; the BindingPolicy of %s is removed once the new one is current",
		vanished, next, vanished)
	if e := entryOf(p.st, next); e != nil && e.Result == communityv1alpha1.StageSucceeded {
		// A stage that succeeded is never gated again: progress promotes out of it at once, or, as the last
		// stage now, it completes the rollout.
		p.st.ActiveStage, p.st.ActiveStageIndex = next, ptr.To(int32(i))
		p.commit()
		if i == len(p.spec.Stages)-1 && p.old.Phase != communityv1alpha1.PhaseCompleted {
			p.d.Events.Normal(communityv1alpha1.ReasonRolloutCompleted, actionRollout, nil,
				"Stage %s, which succeeded, is now the last stage: the rollout is complete", next)
		}
	} else {
		p.activate(i)
		p.d.Events.Normal(communityv1alpha1.ReasonStageActivated, actionRollout, nil, "Stage %s activated: BindingPolicy %s",
			next, BindingPolicyName(p.sbp.Name, next))
	}
	p.transitioned = true
}

// skipEarlier gives the stages before the active one that have no entry (inserted before it, or moved
// before it) a Skipped entry: the rollout never moves backwards.
func (p *pass) skipEarlier() {
	for j := range p.active {
		name := p.spec.Stages[j].Name
		if entryOf(p.st, name) != nil {
			continue
		}
		now := p.now
		p.st.Stages = append(p.st.Stages, communityv1alpha1.StageStatus{
			Name:              name,
			BindingPolicyName: BindingPolicyName(p.sbp.Name, name),
			Result:            communityv1alpha1.StageSkipped,
			CompletedAt:       &now,
			Message:           "stage added before the active stage; the rollout does not move backwards",
		})
		p.transition(name, ResultSkipped, nil)
	}
}

// pruneHistory orders the history in spec order and drops the entries of stages gone from the spec, but
// keeps a superseded entry while its BindingPolicy exists (it leaves by handover).
func (p *pass) pruneHistory() {
	kept := make([]communityv1alpha1.StageStatus, 0, len(p.st.Stages))
	for _, s := range p.spec.Stages {
		if e := entryOf(p.st, s.Name); e != nil {
			kept = append(kept, *e)
		}
	}
	for _, e := range p.st.Stages {
		if e.Result == communityv1alpha1.StageSuperseded && stageIndex(p.spec, e.Name) < 0 && p.bindingPolicyExists(e.BindingPolicyName) {
			kept = append(kept, e)
		}
	}
	p.st.Stages = kept
}

// bindingPolicyExists reports whether the pass observed a BindingPolicy of that name.
func (p *pass) bindingPolicyExists(name string) bool {
	_, ok := p.in.Observed.BindingPolicies[name]
	return name != "" && ok
}
