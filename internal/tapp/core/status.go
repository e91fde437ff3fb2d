package core

import (
	"github.com/drover-dev/drover/internal/kit"

	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// Summary holds the counts of a view that the counters and conditions are computed from.
type Summary struct {
	// D is the number of desired-running ids.
	D int
	// Updated counts desired-running ids whose pod exists, is not terminating, carries the resolved
	// template's hash and has no in-place update in progress.
	Updated int
	// Available counts desired-running ids whose pod is available and not pending.
	Available int
	// Missing counts desired-running ids without a pod that are to be created (not finished instances).
	Missing int
	// Outdated counts desired-running, live (not terminating, not Succeeded/Failed) pods whose hash label
	// differs from the resolved template's.
	Outdated int
	// InProgress counts desired-running pods with an in-place update in progress.
	InProgress int
	// AwaitingDeletion counts terminating pods, pods of completed or out-of-range ids and migrating pods.
	AwaitingDeletion int
	// RequeueAfter is the shortest minReadySeconds wait of a pod that is otherwise available (0 if none).
	RequeueAfter time.Duration
}

// Summarize counts a view (normally the post-action view).
func (p *Pass) Summarize(view Observation) Summary {
	s := Summary{D: p.Desired.Count()}
	for id := 0; id < p.Desired.Replicas; id++ {
		if _, ok := view.Pods[id]; !ok && p.Desired.Class(id) == ClassRunning && !p.Desired.prevRanToCompletion(id) {
			s.Missing++
		}
	}
	for id, pod := range view.Pods {
		if pod == nil {
			continue
		}
		if isTerminating(pod) || p.Desired.Class(id) != ClassRunning {
			s.AwaitingDeletion++
			continue
		}
		tpl, resolved := p.Template(id)
		if isFinishedPhase(pod) {
			if willMigrate(p.App.Spec.NeverMigrate, pod, tpl) {
				s.AwaitingDeletion++
			}
		} else if resolved && pod.Labels[tkestackv1.TAppHashKey] != tpl.Hash {
			s.Outdated++
		}
		inProgress := inPlaceInProgress(pod)
		if inProgress {
			s.InProgress++
		}
		if resolved && !inProgress && pod.Labels[tkestackv1.TAppHashKey] == tpl.Hash {
			s.Updated++
		}
		if view.Expecting[id] {
			continue
		}
		ok, wait := Availability(pod, p.Settings.MinReadySeconds, view.Now)
		if ok {
			s.Available++
		} else if wait > 0 && (s.RequeueAfter == 0 || wait < s.RequeueAfter) {
			s.RequeueAfter = wait
		}
	}
	return s
}

// Status builds the whole status from a view (normally the post-action view) and the pass's issues
// (Plan.Issues plus write failures): statuses, counters, appStatus, scaleLabelSelector, conditions (with
// transition times kept from the stored status when unchanged) and observedGeneration. It also returns
// the RequeueAfter of minReadySeconds waits. The reconciler writes it only when it differs from the stored
// status (apimachinery's equality.Semantic.DeepEqual).
func (p *Pass) Status(view Observation, issues []Issue) (tkestackv1.TAppStatus, time.Duration) {
	statuses := p.InstanceStatuses(view.Pods)
	replicas, ready := statusCounts(statuses)
	sum := p.Summarize(view)
	st := tkestackv1.TAppStatus{
		ObservedGeneration: p.App.Generation,
		Replicas:           replicas,
		ReadyReplicas:      ready,
		UpdatedReplicas:    int32(sum.Updated),
		AvailableReplicas:  int32(sum.Available),
		ScaleLabelSelector: scaleLabelSelector(p.Settings.Selector),
		AppStatus:          computeAppStatus(statuses),
		Conditions:         p.Conditions(sum, issues, view.Now),
	}
	if len(statuses) > 0 {
		st.Statuses = statuses
	}
	return st, sum.RequeueAfter
}

// Conditions returns the stored conditions with Available, Progressing and ReplicaFailure set from a summary
// and the issues, each with observedGeneration; lastTransitionTime is now for a changed status and
// kept otherwise. Conditions of other types are kept.
func (p *Pass) Conditions(sum Summary, issues []Issue, now time.Time) []metav1.Condition {
	conds := slices.Clone(p.App.Status.Conditions)
	for _, c := range p.desiredConditions(sum, issues) {
		c.ObservedGeneration = p.App.Generation
		c.LastTransitionTime = metav1.NewTime(now)
		meta.SetStatusCondition(&conds, c)
	}
	return conds
}

func (p *Pass) desiredConditions(sum Summary, issues []Issue) []metav1.Condition {
	avail := metav1.Condition{Type: tkestackv1.TAppAvailable, Status: metav1.ConditionTrue,
		Reason: tkestackv1.ReasonMinimumReplicasAvailable, Message: "enough instances are available"}
	if sum.D > 0 && sum.Available < sum.D-budgetValue(p.Settings.MaxUnavailable, sum.D) {
		avail.Status, avail.Reason = metav1.ConditionFalse, tkestackv1.ReasonMinimumReplicasUnavailable
		avail.Message = "fewer instances are available than maxUnavailable allows"
	}
	prog := metav1.Condition{Type: tkestackv1.TAppProgressing, Status: metav1.ConditionFalse,
		Reason: tkestackv1.ReasonRolloutComplete, Message: "every instance is up to date"}
	switch {
	case sum.Missing > 0 || sum.InProgress > 0 || sum.AwaitingDeletion > 0 || (sum.Outdated > 0 && !p.Settings.Paused):
		prog.Status, prog.Reason, prog.Message = metav1.ConditionTrue, tkestackv1.ReasonRolloutInProgress, "instances are being created, updated or deleted"
	case sum.Outdated > 0:
		prog.Reason, prog.Message = tkestackv1.ReasonPaused, "updates are paused with outdated instances"
	}
	fail := metav1.Condition{Type: tkestackv1.TAppReplicaFailure, Status: metav1.ConditionFalse,
		Reason: tkestackv1.ReasonNoFailures, Message: "no failures"}
	if reason, msg := summarizeIssues(issues); reason != "" {
		fail.Status, fail.Reason, fail.Message = metav1.ConditionTrue, reason, truncateMessage(msg)
	}
	return []metav1.Condition{avail, prog, fail}
}

// maxConditionMessage bounds condition messages (the API allows 32768 bytes; keep them readable).
const maxConditionMessage = 1024

func truncateMessage(s string) string { return kit.Truncate(s, maxConditionMessage) }
