package core

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// Action is what a pass does to one instance.
type Action string

const (
	// ActionNone: nothing (see InstanceAction.Reason); a Gate decision may still apply.
	ActionNone Action = "None"
	// ActionWait: the pod is terminating and is left to finish.
	ActionWait Action = "Wait"
	// ActionCreate: create the pod InstanceAction.Desired (PVCs first), then write the gate True.
	ActionCreate Action = "Create"
	// ActionDelete: delete the pod gracefully (UID precondition).
	ActionDelete Action = "Delete"
	// ActionForceDelete: delete the terminating pod with grace period 0 (UID precondition): its node is lost.
	ActionForceDelete Action = "ForceDelete"
	// ActionUpdate: update the pod in place; budgeted. InstanceAction.InPlace tells an image update
	// (gate protocol) from a metadata-only patch.
	ActionUpdate Action = "Update"
	// ActionRecreate: delete the pod gracefully now; a later pass creates it again. Budgeted.
	ActionRecreate Action = "Recreate"
	// ActionRestamp: one metadata patch setting both hash labels (Restamp); not budgeted.
	ActionRestamp Action = "Restamp"
)

// Reasons of ActionNone and ActionWait besides the ReplicaFailure reasons (TemplateNotFound,
// PodNameConflict, InvalidSpec) and tkestackv1.ReasonPaused.
const (
	// ReasonCurrent: the pod carries the resolved template's hash.
	ReasonCurrent = "Current"
	// ReasonFinished: the instance ran to completion (no pod and previous status Failed/Succ, or a
	// Succeeded/Failed pod that does not migrate); it is never re-run implicitly.
	ReasonFinished = "Finished"
	// ReasonTerminating: the pod is terminating and does not qualify for a force delete.
	ReasonTerminating = "Terminating"
	// ReasonExpectationPending: an earlier write's effect is not yet in the cache.
	ReasonExpectationPending = "ExpectationPending"
	// ReasonBudgetExhausted: an outdated pod was not scheduled because of maxUnavailable.
	ReasonBudgetExhausted = "BudgetExhausted"
	// ReasonTAppDeleting: the TApp is being deleted; pods are left to garbage collection.
	ReasonTAppDeleting = "TAppDeleting"
)

// InstanceAction is the decision for one id.
type InstanceAction struct {
	// ID is the instance id.
	ID int
	// Class is the id's class.
	Class Class
	// Action is what to do after budgeting.
	Action Action
	// Wanted is the action before budgeting: Update or Recreate for budget candidates (then Action is None
	// with reason BudgetExhausted or Paused when it was not scheduled), else equal to Action.
	Wanted Action
	// Reason explains None and Wait.
	Reason string
	// Pod is the observed pod (nil when there is none).
	Pod *corev1.Pod
	// Template is the resolved template of a desired-running id (nil when unresolvable or not desired-running).
	Template *Template
	// Desired is the pod constructed for the template (NewPod), set for Create and Update.
	Desired *corev1.Pod
	// InPlace is true for an Update that changes images (gate False, patch with record); false for a
	// metadata-only Update (one patch, no gate change).
	InPlace bool
	// Gate is the gate reconciliation for this pod; Gate.Write tells whether to write it.
	Gate GateDecision
	// Why explains an Update, Recreate or Restamp in words, for the migration preview: the images an
	// in-place update changes, or the difference that makes a pod left by another controller be recreated.
	Why string
}

// decide applies the rows of the action table to one id, first match wins, before budgeting. Budget candidates come
// back with Action Update or Recreate.
func (p *Pass) decide(id int, pod *corev1.Pod, obs *Observation) (InstanceAction, *Issue) {
	a := InstanceAction{ID: id, Class: p.Desired.Class(id), Pod: pod}
	if a.Class == ClassRunning {
		a.Template, _ = p.Template(id)
	}
	switch {
	case obs.Expecting[id]:
		return a.with(ActionNone, ReasonExpectationPending), nil
	case p.Settings.Blocked:
		return a.with(ActionNone, tkestackv1.ReasonInvalidSpec), nil
	case pod != nil && isTerminating(pod):
		if shouldForceDelete(p.App.Spec.ForceDeletePod, pod, obs.Nodes[pod.Spec.NodeName]) {
			return a.with(ActionForceDelete, ""), nil
		}
		return a.with(ActionWait, ReasonTerminating), nil
	case p.Settings.Deleting:
		return a.with(ActionNone, ReasonTAppDeleting), nil
	case a.Class != ClassRunning:
		return a.with(ActionDelete, ""), nil
	case pod == nil:
		return p.decideMissing(a, obs)
	default:
		return p.decideExisting(a)
	}
}

func (a InstanceAction) with(action Action, reason string) InstanceAction {
	a.Action, a.Wanted, a.Reason = action, action, reason
	return a
}

// decideMissing handles a desired-running id without a pod.
func (p *Pass) decideMissing(a InstanceAction, obs *Observation) (InstanceAction, *Issue) {
	switch {
	case p.Desired.prevRanToCompletion(a.ID):
		return a.with(ActionNone, ReasonFinished), nil
	case a.Template == nil:
		is := IDIssue(tkestackv1.ReasonTemplateNotFound, a.ID, "instance %d: template %q not found", a.ID, p.TemplateName(a.ID))
		return a.with(ActionNone, tkestackv1.ReasonTemplateNotFound), &is
	case !a.Template.MatchesSelector:
		is := IDIssue(tkestackv1.ReasonInvalidSpec, a.ID, "instance %d: template %q does not match the selector", a.ID, a.Template.Name)
		return a.with(ActionNone, tkestackv1.ReasonInvalidSpec), &is
	case obs.NameTaken[a.ID]:
		is := IDIssue(tkestackv1.ReasonPodNameConflict, a.ID, "instance %d: pod name %s is taken by a pod drover does not own",
			a.ID, PodName(p.App.Name, a.ID))
		return a.with(ActionNone, tkestackv1.ReasonPodNameConflict), &is
	}
	a = a.with(ActionCreate, "")
	a.Desired = NewPod(p.App, a.ID, a.Template)
	return a, nil
}

// decideForeign handles a pod whose hash labels another controller wrote (upstream TApp): as upstream, a
// pod that differs from its template only in images is updated in place (restamped when the images are
// equal too), any other difference recreates it (specMatchesExceptImages).
func (p *Pass) decideForeign(a InstanceAction) InstanceAction {
	desired := NewPod(p.App, a.ID, a.Template)
	if diff := specDifference(a.Pod, desired); diff != "" {
		a = a.with(ActionRecreate, "")
		a.Why = "a pod of another controller that differs from its template beyond images: " + diff
		return a
	}
	if upToDateForeign(a.Pod, a.Template) {
		a = a.with(ActionRestamp, "")
		a.Why = "a pod of another controller that matches its template: its hash labels are rewritten, nothing restarts"
		return a
	}
	a = a.with(ActionUpdate, "")
	keepUpstreamHashes(a.Pod, desired, "") // for a rollback; the template they stand for is not this one
	a.Desired = desired
	_, changes := MergePod(a.Pod, desired)
	a.InPlace = len(changes) > 0
	a.Why = "a pod of another controller whose template changed only in images: " + describeChanges(a.Pod, changes)
	return a
}

// decideExisting handles a desired-running id with a pod that is not terminating.
func (p *Pass) decideExisting(a InstanceAction) (InstanceAction, *Issue) {
	pod, tpl := a.Pod, a.Template
	switch {
	case tpl == nil:
		is := IDIssue(tkestackv1.ReasonTemplateNotFound, a.ID, "instance %d: template %q not found", a.ID, p.TemplateName(a.ID))
		return a.with(ActionNone, tkestackv1.ReasonTemplateNotFound), &is
	case isFinishedPhase(pod):
		if willMigrate(p.App.Spec.NeverMigrate, pod, tpl) {
			return a.with(ActionDelete, ""), nil
		}
		return a.with(ActionNone, ReasonFinished), nil
	case pod.Labels[tkestackv1.TAppHashKey] == tpl.Hash:
		return a.with(ActionNone, ReasonCurrent), nil
	case !tpl.MatchesSelector:
		is := IDIssue(tkestackv1.ReasonInvalidSpec, a.ID, "instance %d: template %q does not match the selector", a.ID, tpl.Name)
		return a.with(ActionNone, tkestackv1.ReasonInvalidSpec), &is
	case !IsCurrentHashFormat(pod.Labels[tkestackv1.TAppHashKey]):
		return p.decideForeign(a), nil
	case pod.Labels[tkestackv1.TAppUniqHashKey] == tpl.UniqHash:
		a = a.with(ActionUpdate, "")
		a.Desired = NewPod(p.App, a.ID, tpl)
		_, changes := MergePod(pod, a.Desired)
		a.InPlace = len(changes) > 0
		a.Why = "the template changed only in images or metadata: " + describeChanges(pod, changes)
		return a, nil
	default:
		a = a.with(ActionRecreate, "")
		a.Why = "the template changed beyond images"
		return a, nil
	}
}

// describeChanges renders the image changes of an in-place update ("main: nginx:1.6 -> nginx:1.7.9"), or says
// that only metadata changes.
func describeChanges(pod *corev1.Pod, changes []ContainerChange) string {
	if len(changes) == 0 {
		return "metadata only, nothing restarts"
	}
	parts := make([]string, 0, len(changes))
	for _, ch := range changes {
		old := ""
		if c := containerSpec(pod, ch.Name, ch.Init); c != nil {
			old = c.Image
		}
		parts = append(parts, fmt.Sprintf("%s: %s -> %s", ch.Name, old, ch.Image))
	}
	return "in place, " + strings.Join(parts, ", ")
}

// containerSpec returns the pod's container (or init container) of that name, nil when there is none.
func containerSpec(pod *corev1.Pod, name string, init bool) *corev1.Container {
	list := pod.Spec.Containers
	if init {
		list = pod.Spec.InitContainers
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}
