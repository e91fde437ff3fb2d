package stager

import (
	"errors"
	"fmt"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
)

// gateError is the first expression error of a pass.
type gateError struct {
	field, reason, object, message string
}

// verdict is what the active stage's automatic gates came to.
type verdict struct {
	// reason and message name the first automatic gate that does not hold; "" when they all hold (the
	// BindingPolicy is current and reported, there are destinations and objects, every gated object has
	// status and meets the condition).
	reason, message string
	// failure is set when the failure condition held for some object.
	failure string
	eval    communityv1alpha1.Evaluation
}

// evaluate evaluates the active stage's automatic gates, in order: the BindingPolicy is current and its
// status collectors exist, the Binding has destinations, the filter keeps objects, every gated object (one
// whose Binding entry names a status collector) has a CombinedStatus of this incarnation in which no
// destination has a row error (every destination has reported), the failure condition holds for none and
// the condition for all. A stage without condition passes once its objects
// have status. Expression errors never pass.
func (p *pass) evaluate() verdict {
	v := verdict{eval: communityv1alpha1.Evaluation{Time: p.now, Outcome: communityv1alpha1.OutcomeNotEvaluated}}
	if !p.bp.current {
		v.reason, v.message = waitingReasonOf(p.bp.reason), p.bp.message
		return v
	}
	e := p.activeEntry()
	bp := p.in.Observed.BindingPolicies[e.BindingPolicyName]
	b := p.in.Observed.Bindings[e.BindingPolicyName]
	dests := destinationsOf(b)
	e.Destinations = int32(min(len(dests), 1<<30))
	if msg, missing := collectorsMissing(bp, b); missing {
		p.bp = bpState{reason: communityv1alpha1.ReasonStatusCollectorsMissing, message: msg}
		v.reason, v.message = communityv1alpha1.ReasonStatusCollectorsMissing, msg
		return v
	}
	if len(dests) == 0 {
		v.reason, v.message = communityv1alpha1.ReasonNoDestinations, "the Binding selects no cluster; waiting for a cluster to join"
		return v
	}
	kept, ok := p.filter(bindingObjects(b))
	if !ok {
		v.eval.Outcome = communityv1alpha1.OutcomeError
		v.reason, v.message = communityv1alpha1.ReasonGateError, p.gateErr.message
		return v
	}
	v.eval.Objects = int32(min(len(kept), 1<<30))
	if len(kept) == 0 {
		v.reason, v.message = communityv1alpha1.ReasonNoObjects, "the filter keeps none of the Binding's objects"
		return v
	}
	p.judgeObjects(&v, kept, bp, dests)
	return v
}

// filter returns the objects the stage's filter keeps; false after an error.
func (p *pass) filter(objects []*object) ([]*object, bool) {
	stage := p.spec.Stages[p.active]
	if stage.Filter == "" {
		return objects, true
	}
	kept := objects[:0:0]
	for _, o := range objects {
		ok, err := p.eval(sbpcel.Filter, stage.Filter, o, nil)
		if err != nil {
			return nil, false
		}
		if ok {
			kept = append(kept, o)
		}
	}
	return kept, true
}

// judgeObjects applies the status, failure and condition gates to the kept objects. In a stage with a
// condition or a failure condition, an object whose CombinedStatus has a row error for a destination waits
// for that destination's report: neither expression is evaluated for it, so a missing row never passes a
// gate, never halts the stage and is never an expression error.
func (p *pass) judgeObjects(v *verdict, kept []*object, bp *controlv1alpha1.BindingPolicy, dests []string) {
	stage := p.spec.Stages[p.active]
	g := sortGated(kept, p.in.Observed.CombinedStatuses, bp, dests, stage.Condition != "" || stage.FailureCondition != "")
	v.eval.ObjectsWithStatus = int32(g.withStatus())
	v.eval.AwaitingDestinations = g.awaitingDestinations()
	if stage.FailureCondition != "" {
		p.failure(v, g.complete, dests)
	}
	failing, errored := p.conditions(v, g.complete, dests)
	v.eval.Message = countsMessage(stage.Condition != "", &g, int(v.eval.ObjectsSatisfied), len(kept)-len(g.all), failing)
	switch {
	case p.gateErr != nil || errored:
		v.eval.Outcome = communityv1alpha1.OutcomeError
		v.reason, v.message = communityv1alpha1.ReasonGateError, p.gateErr.message
	case stage.Condition != "" && len(g.all) == 0:
		v.eval.Outcome = communityv1alpha1.OutcomeNotSatisfied
		v.reason, v.message = communityv1alpha1.ReasonNoStatusCollectors,
			fmt.Sprintf("the stage has a condition, but none of its %d objects names a status collector, so none will ever have status", len(kept))
	case len(g.awaiting) > 0 || len(g.waiting) > 0:
		v.eval.Outcome = communityv1alpha1.OutcomeNotSatisfied
		v.reason, v.message = communityv1alpha1.ReasonAwaitingStatus, v.eval.Message
	case len(failing) > 0:
		v.eval.Outcome = communityv1alpha1.OutcomeNotSatisfied
		v.reason, v.message = communityv1alpha1.ReasonConditionNotMet, v.eval.Message
	default:
		v.eval.Outcome = communityv1alpha1.OutcomeSatisfied
	}
}

// conditions evaluates the stage's condition for the objects whose status is complete, counting those that
// satisfy it; it returns those that do not, and whether an evaluation failed.
func (p *pass) conditions(v *verdict, complete []*object, dests []string) (failing []*object, errored bool) {
	stage := p.spec.Stages[p.active]
	if stage.Condition == "" {
		return nil, false
	}
	for _, o := range complete {
		ok, err := p.eval(sbpcel.Condition, stage.Condition, o, dests)
		switch {
		case err != nil:
			errored = true
		case ok:
			v.eval.ObjectsSatisfied++
		default:
			failing = append(failing, o)
		}
	}
	return failing, errored
}

// failure evaluates the failure condition for every object whose status is complete; true for any halts
// the stage. An error never halts.
func (p *pass) failure(v *verdict, complete []*object, dests []string) {
	stage := p.spec.Stages[p.active]
	var failed []*object
	for _, o := range complete {
		if ok, err := p.eval(sbpcel.FailureCondition, stage.FailureCondition, o, dests); err == nil && ok {
			failed = append(failed, o)
		}
	}
	if len(failed) > 0 {
		v.failure = fmt.Sprintf("failureCondition is true for %d of %d objects: %s", len(failed), len(complete), examples(failed))
	}
}

// countsMessage summarises an evaluation in counts, at most five example objects and at most five
// destinations that have not reported.
func countsMessage(hasCondition bool, g *gatedObjects, satisfied, exempt int, failing []*object) string {
	msg := fmt.Sprintf("%d of %d gated objects have status", g.withStatus(), len(g.all))
	if hasCondition {
		msg = fmt.Sprintf("condition satisfied by %d of %d objects; %s", satisfied, len(g.all), msg)
	}
	if exempt > 0 {
		msg += fmt.Sprintf("; %d objects name no status collector and are not gated", exempt)
	}
	if len(failing) > 0 {
		msg += "; first failing: " + examples(failing)
	}
	if len(g.awaiting) > 0 {
		msg += "; awaiting status: " + examples(g.awaiting)
	}
	if len(g.waiting) > 0 {
		msg += "; " + g.unreportedMessage()
	}
	return msg
}

// eval compiles (through the cache) and evaluates one expression for one object, counting the outcome and
// keeping the first error of the pass.
func (p *pass) eval(kind sbpcel.Kind, expr string, o *object, dests []string) (bool, error) {
	in := sbpcel.Input{
		Clause:       o.clause,
		Stage:        sbpcel.StageRef{Name: p.spec.Stages[p.active].Name, Index: p.active},
		Destinations: dests,
	}
	if len(dests) > 0 {
		if p.destsKey == 0 {
			p.destsKey = sbpcel.DestinationsKey(dests) // the pass's destinations are sorted and do not change
		}
		in.DestinationsKey = p.destsKey
	}
	if o.cs != nil {
		in.CombinedStatus = &sbpcel.CSInput{UID: string(o.cs.GetUID()), ResourceVersion: o.cs.GetResourceVersion(), Object: o.cs.Object}
	}
	prog, err := p.in.CEL.Compile(kind, expr)
	var ok bool
	if err == nil {
		ok, err = prog.Eval(in)
	}
	outcome := "false"
	switch {
	case err != nil:
		outcome = "error"
		p.recordGateError(kind, o, err)
	case ok:
		outcome = "true"
	}
	p.countCEL(kind, outcome)
	return ok, err
}

// recordGateError keeps the pass's first expression error for the GateError condition and counts each.
func (p *pass) recordGateError(kind sbpcel.Kind, o *object, err error) {
	reason := string(sbpcel.ReasonEvaluationError)
	var ce *sbpcel.Error
	if errors.As(err, &ce) {
		reason = string(ce.Reason)
	}
	stage := p.spec.Stages[p.active].Name
	p.d.GateErrors = append(p.d.GateErrors, GateErrorRecord{Stage: stage, Kind: kind, Reason: reason})
	if p.gateErr != nil {
		return
	}
	field := fmt.Sprintf("spec.stages[%d].%s", p.active, kind)
	p.gateErr = &gateError{field: field, reason: reason, object: o.String(),
		message: fmt.Sprintf("%s: evaluating for %s: %v", field, o.String(), err)}
}

// countCEL counts one evaluation.
func (p *pass) countCEL(kind sbpcel.Kind, outcome string) {
	for i := range p.d.CEL {
		if c := &p.d.CEL[i]; c.Kind == kind && c.Outcome == outcome {
			c.N++
			return
		}
	}
	p.d.CEL = append(p.d.CEL, CELCount{Kind: kind, Outcome: outcome, N: 1})
}

// waitingReasonOf turns the BindingPolicyReady reason of a BindingPolicy that is not current into the
// Progressing condition's reason.
func waitingReasonOf(bpReason string) string {
	switch bpReason {
	case communityv1alpha1.ReasonConflict, communityv1alpha1.ReasonTerminating, communityv1alpha1.ReasonStatusCollectorsMissing:
		return bpReason
	}
	return communityv1alpha1.ReasonBindingPolicyPending
}
