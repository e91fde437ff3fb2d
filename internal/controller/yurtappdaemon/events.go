package yurtappdaemon

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// Event reasons of the owner controllers (§7). Each is emitted at most once per pass, after the status write.
const (
	// ReasonWorkloadCreated (Normal): workloads were created for newly selected pools.
	ReasonWorkloadCreated = "WorkloadCreated"
	// ReasonWorkloadUpdated (Normal): workloads were applied with a new rendering.
	ReasonWorkloadUpdated = "WorkloadUpdated"
	// ReasonWorkloadDeleted (Normal): workloads of deselected pools, duplicates or of the other kind were deleted.
	ReasonWorkloadDeleted = "WorkloadDeleted"
	// ReasonWorkloadAdopted (Normal): orphaned workloads were adopted (YC-12).
	ReasonWorkloadAdopted = "WorkloadAdopted"
	// ReasonNoNodePoolsSelected (Normal, on transition): no pool is eligible.
	ReasonNoNodePoolsSelected = "NoNodePoolsSelected"

	// ReasonInvalidSpec (Warning): the spec breaks a structural rule; no workload was touched.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonNodePoolListFailed (Warning): the pools could not be read; no workload was touched.
	ReasonNodePoolListFailed = "NodePoolListFailed"
	// ReasonRevisionFailed (Warning): the ControllerRevision could not be ensured; no workload was touched.
	ReasonRevisionFailed = "RevisionFailed"
	// ReasonWorkloadCreateFailed (Warning): creates failed or are pending.
	ReasonWorkloadCreateFailed = "WorkloadCreateFailed"
	// ReasonWorkloadUpdateFailed (Warning): applies failed or are pending.
	ReasonWorkloadUpdateFailed = "WorkloadUpdateFailed"
	// ReasonWorkloadDeleteFailed (Warning): deletes failed or are pending.
	ReasonWorkloadDeleteFailed = "WorkloadDeleteFailed"
	// ReasonRenderFailed (Warning): the workload of some pools could not be rendered (a failing tweak).
	ReasonRenderFailed = "RenderFailed"
	// ReasonNameConflict (Warning): a workload name is taken by an object this owner does not control.
	ReasonNameConflict = "NameConflict"
	// ReasonInvalidNodePoolName (Warning): selected pools whose names are not label values were skipped.
	ReasonInvalidNodePoolName = "InvalidNodePoolName"
	// ReasonUnmappedWorkload (Warning): owned workloads map to no pool; they are left alone.
	ReasonUnmappedWorkload = "UnmappedWorkload"
)

// Event actions (events.k8s.io requires one).
const (
	actionCreate    = "Create"
	actionUpdate    = "Update"
	actionDelete    = "Delete"
	actionAdopt     = "Adopt"
	actionReconcile = "Reconcile"
)

// maxNamesInMessage caps the object names a message lists; maxMessageBytes caps a condition message.
const (
	maxNamesInMessage = 10
	maxMessageBytes   = 1024
)

// nameList renders names sorted, at most maxNamesInMessage of them, followed by "and N more".
func nameList(names []string) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) <= maxNamesInMessage {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamesInMessage], ", "), len(names)-maxNamesInMessage)
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence, marking the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "..."
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// emitEvents emits the pass's events on the owner, at most one per reason, after the status write (§7).
func (r *Reconciler[T]) emitEvents(p *pass, prev, status *openyurtv1alpha1.YurtAppDaemonStatus) {
	normal := func(reason, action, format string, args ...any) {
		r.Recorder.Eventf(p.owner, nil, corev1.EventTypeNormal, reason, action, format, args...)
	}
	warn := func(reason, action, format string, args ...any) {
		r.Recorder.Eventf(p.owner, nil, corev1.EventTypeWarning, reason, action, format, args...)
	}
	switch {
	case len(p.invalid) > 0:
		warn(ReasonInvalidSpec, actionReconcile, "%s", truncate(p.invalid.ToAggregate().Error(), maxMessageBytes))
		return
	case p.revisionErr != nil:
		warn(ReasonRevisionFailed, actionReconcile, "%s", truncate(p.revisionErr.Error(), maxMessageBytes))
		return
	case p.poolsErr != nil:
		warn(ReasonNodePoolListFailed, actionReconcile, "%s", truncate(p.poolsErr.Error(), maxMessageBytes))
		return
	}
	for _, e := range []struct {
		reason, action string
		names          []string
	}{
		{ReasonWorkloadCreated, actionCreate, p.created},
		{ReasonWorkloadAdopted, actionAdopt, p.adopted},
		{ReasonWorkloadUpdated, actionUpdate, p.updated},
		{ReasonWorkloadDeleted, actionDelete, p.deleted},
	} {
		if len(e.names) > 0 {
			normal(e.reason, e.action, "%d workload(s): %s", len(e.names), nameList(e.names))
		}
	}
	if became(prev, status, openyurtv1alpha1.WorkLoadProvisioned, openyurtv1alpha1.ReasonNoNodePoolsSelected) {
		normal(ReasonNoNodePoolsSelected, actionReconcile, "No NodePool is selected")
	}
	r.emitWarnings(p, warn)
}

// emitWarnings emits the per-pool failure warnings of a pass that acted.
func (r *Reconciler[T]) emitWarnings(p *pass, warn func(reason, action, format string, args ...any)) {
	if len(p.renderErrs) > 0 {
		warn(ReasonRenderFailed, actionReconcile, "%s", truncate(fmt.Sprintf("%d NodePool(s): %s",
			len(p.renderErrs), poolErrors(p.renderErrs, nil)), maxMessageBytes))
	}
	if len(p.nameConflicts) > 0 {
		warn(ReasonNameConflict, actionCreate, "%d name(s) taken by objects this owner does not control: %s",
			len(p.nameConflicts), nameList(slices.Collect(maps.Values(p.nameConflicts))))
	}
	for _, e := range []struct {
		reason, action string
		failed         map[string]error
		pending        []string
	}{
		{ReasonWorkloadCreateFailed, actionCreate, p.createFailed, p.createPending},
		{ReasonWorkloadUpdateFailed, actionUpdate, p.updateFailed, p.updatePending},
		{ReasonWorkloadDeleteFailed, actionDelete, p.deleteFailed, p.deletePending},
	} {
		if len(e.failed)+len(e.pending) > 0 {
			warn(e.reason, e.action, "%s", truncate(fmt.Sprintf("%d failed: %s", len(e.failed), poolErrors(e.failed, e.pending)), maxMessageBytes))
		}
	}
	if len(p.pools.invalidNames) > 0 {
		warn(ReasonInvalidNodePoolName, actionReconcile, "Skipped %d NodePool(s) whose names are not valid label values: %s",
			len(p.pools.invalidNames), nameList(p.pools.invalidNames))
	}
	if len(p.cls.unmapped) > 0 {
		names := make([]string, len(p.cls.unmapped))
		for i, obj := range p.cls.unmapped {
			names[i] = obj.GetName()
		}
		warn(ReasonUnmappedWorkload, actionReconcile, "%d owned workload(s) map to no NodePool and are left alone: %s",
			len(names), nameList(names))
	}
}

// became reports whether condition typ has reason now and did not before.
func became(prev, now *openyurtv1alpha1.YurtAppDaemonStatus, typ, reason string) bool {
	c := apimeta.FindStatusCondition(now.Conditions, typ)
	if c == nil || c.Reason != reason {
		return false
	}
	old := apimeta.FindStatusCondition(prev.Conditions, typ)
	return old == nil || old.Reason != reason
}
