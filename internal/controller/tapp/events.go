package tapp

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// Event actions (events.k8s.io requires one). The reasons are the tkestackv1.Reason* constants (§15).
const (
	actionCreate    = "Create"
	actionDelete    = "Delete"
	actionUpdate    = "Update"
	actionAdopt     = "Adopt"
	actionRelease   = "Release"
	actionReconcile = "Reconcile"
	actionPrune     = "PruneTemplates"
)

// maxIssuesPerEvent bounds the issues one Warning event lists.
const maxIssuesPerEvent = 10

// pendingEvent is an event of a pass, emitted after the status write.
type pendingEvent struct {
	eventtype, reason, action string
	related                   runtime.Object
	note                      string
}

// normal queues a Normal event on the TApp, related to an object (a pod or PVC; nil for none).
func (rn *run) normal(reason, action string, related runtime.Object, format string, args ...any) {
	rn.events = append(rn.events, pendingEvent{corev1.EventTypeNormal, reason, action, related, fmt.Sprintf(format, args...)})
}

// warn queues a Warning event on the TApp.
func (rn *run) warn(reason, action string, related runtime.Object, format string, args ...any) {
	rn.events = append(rn.events, pendingEvent{corev1.EventTypeWarning, reason, action, related, fmt.Sprintf(format, args...)})
}

// actionFor returns the event action of a ReplicaFailure reason.
func actionFor(reason string) string {
	switch reason {
	case tkestackv1.ReasonFailedCreate:
		return actionCreate
	case tkestackv1.ReasonFailedDelete:
		return actionDelete
	case tkestackv1.ReasonFailedUpdate:
		return actionUpdate
	default:
		return actionReconcile
	}
}

// emitEvents emits the events of a pass, after its status write. The Warnings of plan issues (templates not
// found, name conflicts, malformed pods, invalid spec) are emitted only when the ReplicaFailure condition
// changed, so that a pass that changes nothing writes nothing (§15); failed writes had their own Warning.
// status is nil for a pass that wrote no status.
func (r *Reconciler) emitEvents(rn *run, status *tkestackv1.TAppStatus) {
	if r.cfg.Recorder == nil {
		return
	}
	for _, e := range rn.events {
		related := e.related
		if isNil(related) {
			related = nil
		}
		r.cfg.Recorder.Eventf(rn.app, related, e.eventtype, e.reason, e.action, "%s", e.note)
	}
	if status == nil || !replicaFailureChanged(&rn.app.Status, status) {
		return
	}
	for _, w := range issueWarnings(rn.planIssues) {
		r.cfg.Recorder.Eventf(rn.app, nil, corev1.EventTypeWarning, w.reason, actionReconcile, "%s", w.note)
	}
}

// replicaFailureChanged reports whether the ReplicaFailure condition changed status, reason or message.
func replicaFailureChanged(old, now *tkestackv1.TAppStatus) bool {
	o := apimeta.FindStatusCondition(old.Conditions, tkestackv1.TAppReplicaFailure)
	n := apimeta.FindStatusCondition(now.Conditions, tkestackv1.TAppReplicaFailure)
	switch {
	case n == nil:
		return false
	case o == nil:
		return true
	default:
		return o.Status != n.Status || o.Reason != n.Reason || o.Message != n.Message
	}
}

// issueWarnings groups issues into one Warning per reason, in the precedence order of ReplicaFailure.
func issueWarnings(issues []Issue) []pendingEvent {
	byReason := map[string][]string{}
	for _, is := range issues {
		byReason[is.Reason] = append(byReason[is.Reason], is.Message)
	}
	reasons := make([]string, 0, len(byReason))
	for reason := range byReason {
		reasons = append(reasons, reason)
	}
	slices.SortFunc(reasons, func(a, b string) int {
		if d := issueRank(a) - issueRank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	out := make([]pendingEvent, 0, len(reasons))
	for _, reason := range reasons {
		msgs := slices.Compact(slices.Sorted(slices.Values(byReason[reason])))
		note := strings.Join(msgs[:min(len(msgs), maxIssuesPerEvent)], "; ")
		if len(msgs) > maxIssuesPerEvent {
			note += fmt.Sprintf("; and %d more", len(msgs)-maxIssuesPerEvent)
		}
		out = append(out, pendingEvent{eventtype: corev1.EventTypeWarning, reason: reason, note: truncateMessage(note)})
	}
	return out
}

// isNil reports whether an interface holds nil or a nil pointer.
func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
