package yurtappdaemon

import (
	"maps"
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
)

// Event actions (events.k8s.io requires one). The reasons are the openyurtv1alpha1.Reason* constants, each
// emitted at most once per pass, after the status write.
const (
	actionCreate    = "Create"
	actionUpdate    = "Update"
	actionDelete    = "Delete"
	actionAdopt     = "Adopt"
	actionReconcile = "Reconcile"
)

// events buffers the pass's events on the owner, at most one per reason; they are emitted only once the
// status write succeeded (kit.Events.EmitAfter), so a reader who sees an event finds the status that
// explains it. Messages are cut to kit.MaxMessageBytes by the buffer.
func (p *pass) events(prev, status *openyurtv1alpha1.YurtAppDaemonStatus) *kit.Events {
	ev := &kit.Events{}
	switch {
	case len(p.invalid) > 0:
		ev.Warning(openyurtv1alpha1.ReasonInvalidSpec, actionReconcile, nil, "%s", p.invalid.ToAggregate().Error())
		return ev
	case p.revisionErr != nil:
		ev.Warning(openyurtv1alpha1.ReasonRevisionFailed, actionReconcile, nil, "%s", p.revisionErr.Error())
		return ev
	case p.poolsErr != nil:
		ev.Warning(openyurtv1alpha1.ReasonNodePoolListFailed, actionReconcile, nil, "%s", p.poolsErr.Error())
		return ev
	}
	for _, e := range []struct {
		reason, action string
		names          []string
	}{
		{openyurtv1alpha1.ReasonWorkloadCreated, actionCreate, p.created},
		{openyurtv1alpha1.ReasonWorkloadAdopted, actionAdopt, p.adopted},
		{openyurtv1alpha1.ReasonWorkloadUpdated, actionUpdate, p.updated},
		{openyurtv1alpha1.ReasonWorkloadDeleted, actionDelete, p.deleted},
	} {
		if len(e.names) > 0 {
			ev.Normal(e.reason, e.action, nil, "%d workload(s): %s", len(e.names), kit.NameList(e.names))
		}
	}
	if became(prev, status, openyurtv1alpha1.WorkLoadProvisioned, openyurtv1alpha1.ReasonNoNodePoolsSelected) {
		ev.Normal(openyurtv1alpha1.ReasonNoNodePoolsSelected, actionReconcile, nil, "No NodePool is selected")
	}
	warnings(ev, p)
	return ev
}

// warnings buffers the per-pool failure warnings of a pass that acted.
func warnings(ev *kit.Events, p *pass) {
	if len(p.renderErrs) > 0 {
		ev.Warning(openyurtv1alpha1.ReasonRenderFailed, actionReconcile, nil, "%d NodePool(s): %s",
			len(p.renderErrs), poolErrors(p.renderErrs, nil))
	}
	if len(p.nameConflicts) > 0 {
		ev.Warning(openyurtv1alpha1.ReasonNameConflict, actionCreate, nil, "%d name(s) taken by objects this owner does not control: %s",
			len(p.nameConflicts), kit.NameList(slices.Collect(maps.Values(p.nameConflicts))))
	}
	for _, e := range []struct {
		reason, action string
		failed         map[string]error
		pending        []string
	}{
		{openyurtv1alpha1.ReasonWorkloadCreateFailed, actionCreate, p.createFailed, p.createPending},
		{openyurtv1alpha1.ReasonWorkloadUpdateFailed, actionUpdate, p.updateFailed, p.updatePending},
		{openyurtv1alpha1.ReasonWorkloadDeleteFailed, actionDelete, p.deleteFailed, p.deletePending},
	} {
		if len(e.failed)+len(e.pending) > 0 {
			ev.Warning(e.reason, e.action, nil, "%d failed: %s", len(e.failed), poolErrors(e.failed, e.pending))
		}
	}
	if len(p.pools.invalidNames) > 0 {
		ev.Warning(openyurtv1alpha1.ReasonInvalidNodePoolName, actionReconcile, nil,
			"Skipped %d NodePool(s) whose names are not valid label values: %s",
			len(p.pools.invalidNames), kit.NameList(p.pools.invalidNames))
	}
	if len(p.cls.unmapped) > 0 {
		names := make([]string, len(p.cls.unmapped))
		for i, obj := range p.cls.unmapped {
			names[i] = obj.GetName()
		}
		ev.Warning(openyurtv1alpha1.ReasonUnmappedWorkload, actionReconcile, nil,
			"%d owned workload(s) map to no NodePool and are left alone: %s", len(names), kit.NameList(names))
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
