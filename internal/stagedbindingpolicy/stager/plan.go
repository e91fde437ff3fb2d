package stager

import (
	"slices"
	"strings"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// plan derives the BindingPolicy writes from the status the pass commits: each desired stage's
// BindingPolicy is created, brought back to its desired spec, or adopted from the stager; one that belongs
// to someone else is never touched. The policy's BindingPolicies no longer desired leave only once every
// desired one is current, so the workload is never unplaced. Nothing is written while paused.
func (p *pass) plan() {
	if p.paused() {
		return
	}
	desired := map[string]bool{}
	allCurrent := true
	for _, i := range p.desiredStages() {
		want := DesiredBindingPolicy(p.sbp, i)
		desired[want.Name] = true
		if !p.ensure(i, want) {
			allCurrent = false
		}
	}
	var outgoing []Delete
	for name, bp := range p.in.Observed.BindingPolicies {
		if desired[name] || ownershipOf(bp, p.sbp.UID) != ours || bp.DeletionTimestamp != nil {
			continue
		}
		outgoing = append(outgoing, Delete{Name: name, UID: bp.UID})
	}
	slices.SortFunc(outgoing, func(a, b Delete) int { return strings.Compare(a.Name, b.Name) })
	switch {
	case len(outgoing) == 0:
	case allCurrent:
		p.d.Deletes = outgoing
	default:
		p.handingOver = true
	}
}

// ensure plans the write that makes stage i's BindingPolicy as desired, and reports whether it is current
// already (nothing to write, processed by KubeStellar).
func (p *pass) ensure(i int, want *controlv1alpha1.BindingPolicy) bool {
	have := p.in.Observed.BindingPolicies[want.Name]
	switch ownershipOf(have, p.sbp.UID) {
	case missing:
		p.d.Writes = append(p.d.Writes, Write{Kind: WriteCreate, Stage: i, Desired: want})
		// Re-creating the active stage's BindingPolicy (someone deleted it) restarts the stage's clock, even if
		// no pass recorded the UID of the incarnation that went; that UID is forgotten, so the pass that sees
		// the new one records it without restarting the clock a second time. At activation the clock starts
		// now anyway.
		if e := entryOf(p.st, p.spec.Stages[i].Name); e != nil {
			e.BindingPolicyUID = ""
		}
		p.restartClock(i)
		return false
	case adoptable:
		p.d.Writes = append(p.d.Writes, Write{Kind: WriteAdopt, Stage: i, Desired: want, Existing: have})
		return false
	case foreign:
		return false
	}
	if have.DeletionTimestamp != nil {
		return false
	}
	if !upToDate(have, want) {
		p.d.Writes = append(p.d.Writes, Write{Kind: WriteUpdate, Stage: i, Desired: want, Existing: have})
		p.restartClock(i)
		return false
	}
	ok, _ := Current(have, p.in.Observed.Bindings[want.Name])
	return ok
}

// restartClock restarts the clock of stage i if it is the active stage and gated (drover changes its
// BindingPolicy, so the evidence gathered so far no longer counts, and neither does its time).
func (p *pass) restartClock(i int) {
	if i != p.active {
		return
	}
	if e := p.activeEntry(); e != nil && e.Result == communityv1alpha1.StageActive {
		e.ClockStartedAt = p.clockStart()
	}
}
