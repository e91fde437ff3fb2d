package core

import (
	"slices"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// Plan is the outcome of planning one pass: one action per id that has a pod or is desired-running,
// ascending by id, after budgeting.
type Plan struct {
	// Actions holds one entry per id with a pod and per desired-running id without one, ascending.
	Actions []InstanceAction
	// Issues are the spec-level issues of the Pass plus those found while planning (TemplateNotFound,
	// PodNameConflict, MalformedPod, InvalidSpec). The reconciler appends its write failures.
	Issues []Issue
	// Budget reports the budget computation.
	Budget BudgetReport
}

// BudgetReport describes the budget computation of a plan.
type BudgetReport struct {
	// D is the number of desired-running ids.
	D int
	// Force and Rolling are the resolved budgets (forceUpdate.maxUnavailable and maxUnavailable).
	Force, Rolling int
	// Available is |A| before scheduling: available desired-running ids without pending expectation.
	Available int
	// Scheduled are the ids scheduled for Update or Recreate, ascending.
	Scheduled []int
}

// Candidate is an id with an Update or Recreate, on the rolling or the force path.
type Candidate struct {
	ID      int
	Rolling bool
}

// scheduleUpdates selects the budget candidates to act on: the force path first with the force
// budget, then the rolling path with the rolling budget, each in ascending id order, sharing the available
// set A (ids available and not pending; not modified). A candidate not in A is always scheduled; one in A is
// scheduled, and removed from A, while |A| > D − budget; otherwise it is skipped and the next one is tried.
// It returns the scheduled ids ascending.
func scheduleUpdates(cands []Candidate, available map[int]bool, d, forceBudget, rollingBudget int) []int {
	left := len(available)
	taken := map[int]bool{}
	var out []int
	for _, rolling := range []bool{false, true} {
		minAvailable := d - forceBudget
		if rolling {
			minAvailable = d - rollingBudget
		}
		var ids []int
		for _, c := range cands {
			if c.Rolling == rolling {
				ids = append(ids, c.ID)
			}
		}
		slices.Sort(ids)
		for _, id := range slices.Compact(ids) {
			switch {
			case !available[id] || taken[id]:
				out = append(out, id)
			case left > minAvailable:
				out = append(out, id)
				taken[id] = true
				left--
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Plan decides every id's action, budgets the updates and the gate writes from the
// observed pods. It has no side effects.
func (p *Pass) Plan(obs Observation) *Plan {
	plan := &Plan{Issues: slices.Clone(p.Issues)}
	for _, pod := range obs.Malformed {
		plan.Issues = append(plan.Issues, Issue{Reason: tkestackv1.ReasonMalformedPod, Subject: pod.Name,
			Message: "pod " + pod.Name + ": name and " + tkestackv1.TAppInstanceKey + " label do not agree"})
	}
	add := func(id int) {
		a, is := p.decide(id, obs.Pods[id], &obs)
		plan.Actions = append(plan.Actions, a)
		if is != nil {
			plan.Issues = append(plan.Issues, *is)
		}
	}
	for id := 0; id < p.Desired.Replicas; id++ {
		if obs.Pods[id] != nil || p.Desired.Class(id) == ClassRunning {
			add(id)
		}
	}
	for _, id := range obs.Pods.IDs() {
		if id >= p.Desired.Replicas && obs.Pods[id] != nil {
			add(id)
		}
	}
	p.budget(plan, &obs)
	for i := range plan.Actions {
		if a := &plan.Actions[i]; p.gateEligible(a) {
			a.Gate = decideGate(a.Pod)
		}
	}
	return plan
}

// budget turns unscheduled Update/Recreate actions into None (BudgetExhausted or Paused).
func (p *Pass) budget(plan *Plan, obs *Observation) {
	d := p.Desired.Count()
	rep := BudgetReport{
		D:       d,
		Force:   budgetValue(p.Settings.ForceMaxUnavailable, d),
		Rolling: budgetValue(p.Settings.MaxUnavailable, d),
	}
	available := p.availableSet(obs)
	rep.Available = len(available)
	var cands []Candidate
	for _, a := range plan.Actions {
		if a.Action == ActionUpdate || a.Action == ActionRecreate {
			cands = append(cands, Candidate{ID: a.ID, Rolling: a.Template.Rolling})
		}
	}
	if !p.Settings.Paused {
		rep.Scheduled = scheduleUpdates(cands, available, d, rep.Force, rep.Rolling)
	}
	scheduled := make(map[int]bool, len(rep.Scheduled))
	for _, id := range rep.Scheduled {
		scheduled[id] = true
	}
	for i := range plan.Actions {
		a := &plan.Actions[i]
		if (a.Action != ActionUpdate && a.Action != ActionRecreate) || scheduled[a.ID] {
			continue
		}
		a.Action, a.Reason, a.Desired, a.InPlace = ActionNone, ReasonBudgetExhausted, nil, false
		if p.Settings.Paused {
			a.Reason = tkestackv1.ReasonPaused
		}
	}
	plan.Budget = rep
}

// availableSet returns A: the available desired-running ids without a pending expectation.
func (p *Pass) availableSet(obs *Observation) map[int]bool {
	out := map[int]bool{}
	for id, pod := range obs.Pods {
		if p.Desired.Class(id) != ClassRunning || obs.Expecting[id] {
			continue
		}
		if ok, _ := Availability(pod, p.Settings.MinReadySeconds, obs.Now); ok {
			out[id] = true
		}
	}
	return out
}

// gateEligible reports whether a pod gets gate reconciliation in this pass: a desired-running pod that is
// kept (None, Restamp or a metadata-only Update), outside blocked, deleting and pending states. Terminating
// and Succeeded/Failed pods are filtered by decideGate.
func (p *Pass) gateEligible(a *InstanceAction) bool {
	if a.Pod == nil || a.Class != ClassRunning || p.Settings.Blocked || p.Settings.Deleting ||
		a.Reason == ReasonExpectationPending {
		return false
	}
	switch a.Action {
	case ActionNone, ActionRestamp:
		return true
	case ActionUpdate:
		return !a.InPlace
	default:
		return false
	}
}

// GateWrites returns the actions whose gate condition must be written, ascending (execution step 1).
func (p *Plan) GateWrites() []InstanceAction {
	return p.filter(func(a *InstanceAction) bool { return a.Gate.Write })
}

// Deletes returns the Delete, Recreate and ForceDelete actions, ascending (execution step 2).
func (p *Plan) Deletes() []InstanceAction {
	return p.filter(func(a *InstanceAction) bool {
		return a.Action == ActionDelete || a.Action == ActionRecreate || a.Action == ActionForceDelete
	})
}

// Creates returns the Create actions, ascending (execution step 3).
func (p *Plan) Creates() []InstanceAction {
	return p.filter(func(a *InstanceAction) bool { return a.Action == ActionCreate })
}

// Updates returns the Update and Restamp actions, ascending (execution step 4).
func (p *Plan) Updates() []InstanceAction {
	return p.filter(func(a *InstanceAction) bool { return a.Action == ActionUpdate || a.Action == ActionRestamp })
}

// Action returns the action of an id; false when the plan has none for it.
func (p *Plan) Action(id int) (InstanceAction, bool) {
	i, ok := slices.BinarySearchFunc(p.Actions, id, func(a InstanceAction, id int) int { return a.ID - id })
	if !ok {
		return InstanceAction{}, false
	}
	return p.Actions[i], true
}

func (p *Plan) filter(keep func(*InstanceAction) bool) []InstanceAction {
	var out []InstanceAction
	for i := range p.Actions {
		if keep(&p.Actions[i]) {
			out = append(out, p.Actions[i])
		}
	}
	return out
}
