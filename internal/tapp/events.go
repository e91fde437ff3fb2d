package tapp

import (
	"github.com/drover-dev/drover/internal/tapp/core"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// Event actions (events.k8s.io requires one). The reasons are the tkestackv1.Reason* constants.
const (
	actionCreate    = "Create"
	actionDelete    = "Delete"
	actionUpdate    = "Update"
	actionAdopt     = "Adopt"
	actionRelease   = "Release"
	actionReconcile = "Reconcile"
	actionPrune     = "PruneTemplates"
)

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
// changed, so that a pass that changes nothing writes nothing; failed writes had their own Warning.
// status is nil for a pass that wrote no status.
func (r *Reconciler) emitEvents(rn *run, status *tkestackv1.TAppStatus) {
	if status != nil && replicaFailureChanged(&rn.app.Status, status) {
		for _, w := range core.IssueWarnings(rn.planIssues) {
			rn.events.Warning(w.Reason, actionReconcile, nil, "%s", w.Note)
		}
	}
	rn.events.Emit(r.cfg.Recorder, rn.app)
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
