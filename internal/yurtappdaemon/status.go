package yurtappdaemon

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
)

// maxErrorBytes caps the part of a condition message quoting one API error.
const maxErrorBytes = 256

// failure is one failing concern of a pass, with its WorkLoadFailure reason.
type failure struct{ reason, message string }

// computeStatus rebuilds the status from a pass. Fields the pass did not observe (it stopped
// early) keep their previous values; the three conditions are always set, with observedGeneration, and a
// condition's lastTransitionTime changes only with its status.
func computeStatus(prev *openyurtv1alpha1.YurtAppDaemonStatus, generation int64, p *pass, now metav1.Time) openyurtv1alpha1.YurtAppDaemonStatus {
	st := *prev.DeepCopy()
	st.ObservedGeneration = generation
	if len(p.invalid) > 0 {
		st.TemplateType = ""
	} else {
		st.TemplateType = p.kind
		// Always set (0 when no name collided): OpenYurt's yurt-manager reads it without a nil check, so an
		// owner handed back to it must carry it.
		st.CollisionCount = copyInt32(p.revision.collisionCount)
		if st.CollisionCount == nil {
			st.CollisionCount = new(int32)
		}
		if p.revision.current != nil {
			st.CurrentRevision = p.revision.current.Name
		}
	}
	if p.completed {
		st.NodePools = p.pools.names()
		st.WorkloadSummary, st.TotalWorkloads, st.ReadyWorkloads, st.UpdatedWorkloads = summarize(p, st.CurrentRevision)
	}
	failures := p.failures()
	for _, c := range []metav1.Condition{provisionedCondition(p, failures), updatedCondition(p, failures), failureCondition(failures)} {
		c.ObservedGeneration = generation
		c.LastTransitionTime = now
		c.Message = kit.Truncate(c.Message, kit.MaxMessageBytes)
		apimeta.SetStatusCondition(&st.Conditions, c)
	}
	normalizeStatus(&st)
	return st
}

// summarize returns the workload summary, sorted by pool, and the counters, over the kept children.
func summarize(p *pass, currentRevision string) (summary []openyurtv1alpha1.WorkloadSummary, total, ready, updated int32) {
	for _, pool := range p.pools.names() {
		child := p.cls.keep[pool]
		if child == nil {
			continue
		}
		s := p.adapter.Summary(child, currentRevision)
		summary = append(summary, openyurtv1alpha1.WorkloadSummary{
			NodePool: pool, WorkloadName: child.GetName(),
			Replicas: s.Replicas, ReadyReplicas: s.ReadyReplicas, AvailableCondition: s.Available,
		})
		total++
		if s.Ready {
			ready++
		}
		if s.Updated {
			updated++
		}
	}
	return summary, total, ready, updated
}

// failures returns what is failing, in the order of the WorkLoadFailure reasons.
func (p *pass) failures() []failure {
	var out []failure
	add := func(reason, format string, args ...any) {
		out = append(out, failure{reason: reason, message: fmt.Sprintf(format, args...)})
	}
	switch {
	case len(p.invalid) > 0:
		add(openyurtv1alpha1.ReasonInvalidSpec, "The spec is invalid, no workload was changed: %s",
			kit.Truncate(p.invalid.ToAggregate().Error(), kit.MaxMessageBytes))
		return out
	case p.revisionErr != nil:
		add(openyurtv1alpha1.ReasonRevisionFailed, "Ensuring the ControllerRevision failed, no workload was changed: %s",
			kit.Truncate(p.revisionErr.Error(), maxErrorBytes))
		return out
	case p.poolsErr != nil:
		add(openyurtv1alpha1.ReasonNodePoolListFailed, "Reading the NodePools or the owned workloads failed, no workload was changed: %s",
			kit.Truncate(p.poolsErr.Error(), maxErrorBytes))
		return out
	}
	if len(p.nameConflicts) > 0 {
		add(openyurtv1alpha1.ReasonNameConflict, "Workload names are taken by objects this owner does not control: %s",
			kit.NameList(slices.Collect(maps.Values(p.nameConflicts))))
	}
	if len(p.renderErrs) > 0 {
		add(openyurtv1alpha1.ReasonRenderFailed, "Rendering failed for %s", poolErrors(p.renderErrs, nil))
	}
	if len(p.createFailed)+len(p.createPending) > 0 {
		add(openyurtv1alpha1.ReasonCreateFailed, "Creating workloads failed for %s", poolErrors(p.createFailed, p.createPending))
	}
	if len(p.updateFailed)+len(p.updatePending) > 0 {
		add(openyurtv1alpha1.ReasonUpdateFailed, "Updating workloads failed for %s", poolErrors(p.updateFailed, p.updatePending))
	}
	if len(p.deleteFailed)+len(p.deletePending) > 0 {
		add(openyurtv1alpha1.ReasonDeleteFailed, "Deleting workloads failed for %s", poolErrors(p.deleteFailed, p.deletePending))
	}
	if len(p.pools.invalidNames) > 0 {
		add(openyurtv1alpha1.ReasonInvalidNodePoolName, "Selected NodePools whose names are not valid label values were skipped: %s",
			kit.NameList(p.pools.invalidNames))
	}
	return out
}

// poolErrors describes failed and pending items: "pools a, b: <first error>; 3 pending: c, d, e".
func poolErrors(failed map[string]error, pending []string) string {
	var parts []string
	if keys := sortedKeys(failed); len(keys) > 0 {
		parts = append(parts, fmt.Sprintf("%s: %s", kit.NameList(keys), kit.Truncate(failed[keys[0]].Error(), maxErrorBytes)))
	}
	if len(pending) > 0 {
		parts = append(parts, fmt.Sprintf("%d pending after an earlier failure: %s", len(pending), kit.NameList(pending)))
	}
	return strings.Join(parts, "; ")
}

// hasFailure reports whether failures holds one of the reasons.
func hasFailure(failures []failure, reasons ...string) bool {
	return slices.ContainsFunc(failures, func(f failure) bool { return slices.Contains(reasons, f.reason) })
}

func messagesOf(failures []failure, reasons ...string) string {
	var msgs []string
	for _, f := range failures {
		if slices.Contains(reasons, f.reason) {
			msgs = append(msgs, f.message)
		}
	}
	return strings.Join(msgs, "; ")
}

// stoppedEarly sets c for a pass that stopped before its actions (invalid spec, revision or
// pool read failed), whose first failure says why, and reports whether it did.
func stoppedEarly(c *metav1.Condition, p *pass, failures []failure) bool {
	switch {
	case len(p.invalid) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, openyurtv1alpha1.ReasonInvalidSpec
	case p.revisionErr != nil:
		c.Status, c.Reason = metav1.ConditionUnknown, openyurtv1alpha1.ReasonRevisionFailed
	case p.poolsErr != nil:
		c.Status, c.Reason = metav1.ConditionUnknown, openyurtv1alpha1.ReasonNodePoolListFailed
	default:
		return false
	}
	c.Message = failures[0].message
	return true
}

// provisionedCondition is WorkLoadProvisioned: every eligible pool has exactly one child and nothing awaits
// deletion.
func provisionedCondition(p *pass, failures []failure) metav1.Condition {
	c := metav1.Condition{Type: openyurtv1alpha1.WorkLoadProvisioned}
	switch {
	case stoppedEarly(&c, p, failures):
	case len(p.nameConflicts) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, openyurtv1alpha1.ReasonNameConflict
		c.Message = messagesOf(failures, openyurtv1alpha1.ReasonNameConflict, openyurtv1alpha1.ReasonCreateFailed,
			openyurtv1alpha1.ReasonDeleteFailed, openyurtv1alpha1.ReasonRenderFailed)
	default:
		if msg := p.unprovisioned(); msg != "" {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, openyurtv1alpha1.ReasonProvisionFailed, msg
		} else if len(p.pools.eligible) == 0 {
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, openyurtv1alpha1.ReasonNoNodePoolsSelected, "No NodePool is selected"
		} else {
			c.Status, c.Reason = metav1.ConditionTrue, openyurtv1alpha1.ReasonAllProvisioned
			c.Message = fmt.Sprintf("Each of the %d selected NodePools has its workload", len(p.pools.eligible))
		}
	}
	return c
}

// unprovisioned describes the eligible pools without a child and the children still awaiting deletion, or
// returns "".
func (p *pass) unprovisioned() string {
	var missing []string
	for _, pool := range p.pools.names() {
		if p.cls.keep[pool] == nil {
			missing = append(missing, pool)
		}
	}
	awaiting := slices.Concat(sortedKeys(p.deleteFailed), p.deletePending, p.otherKindWaiting)
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d NodePool(s) have no workload: %s", len(missing), kit.NameList(missing)))
	}
	if len(awaiting) > 0 {
		parts = append(parts, fmt.Sprintf("%d workload(s) await deletion: %s", len(awaiting), kit.NameList(awaiting)))
	}
	if len(parts) == 0 {
		return ""
	}
	msg := strings.Join(parts, "; ")
	if len(p.createFailed)+len(p.renderErrs) > 0 {
		msg += " (" + messagesOf(p.failures(), openyurtv1alpha1.ReasonCreateFailed, openyurtv1alpha1.ReasonRenderFailed) + ")"
	}
	return msg
}

// updatedCondition is WorkLoadUpdated: every kept child is in sync with the current revision.
func updatedCondition(p *pass, failures []failure) metav1.Condition {
	c := metav1.Condition{Type: openyurtv1alpha1.WorkLoadUpdated}
	switch {
	case stoppedEarly(&c, p, failures):
	case hasFailure(failures, openyurtv1alpha1.ReasonRenderFailed):
		c.Status, c.Reason = metav1.ConditionFalse, openyurtv1alpha1.ReasonRenderFailed
		c.Message = messagesOf(failures, openyurtv1alpha1.ReasonRenderFailed, openyurtv1alpha1.ReasonUpdateFailed)
	case hasFailure(failures, openyurtv1alpha1.ReasonUpdateFailed):
		c.Status, c.Reason = metav1.ConditionFalse, openyurtv1alpha1.ReasonUpdateFailed
		c.Message = messagesOf(failures, openyurtv1alpha1.ReasonUpdateFailed)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, openyurtv1alpha1.ReasonAllUpdated
		c.Message = fmt.Sprintf("All %d workloads are in sync with revision %s", len(p.cls.keep), p.revision.current.Name)
	}
	return c
}

// failureCondition is WorkLoadFailure: True while something fails, with the first reason in the order of failures() and
// a message aggregating all of them.
func failureCondition(failures []failure) metav1.Condition {
	c := metav1.Condition{Type: openyurtv1alpha1.WorkLoadFailure}
	if len(failures) == 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, openyurtv1alpha1.ReasonNoFailure, "Nothing is failing"
		return c
	}
	msgs := make([]string, len(failures))
	for i, f := range failures {
		msgs[i] = f.message
	}
	c.Status, c.Reason, c.Message = metav1.ConditionTrue, failures[0].reason, strings.Join(msgs, "; ")
	return c
}

// normalizeStatus makes empty lists nil, so a status read back from the API server compares equal.
func normalizeStatus(st *openyurtv1alpha1.YurtAppDaemonStatus) {
	if len(st.NodePools) == 0 {
		st.NodePools = nil
	}
	if len(st.WorkloadSummary) == 0 {
		st.WorkloadSummary = nil
	}
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
}

// statusEqual compares two statuses semantically.
func statusEqual(a, b *openyurtv1alpha1.YurtAppDaemonStatus) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	normalizeStatus(x)
	normalizeStatus(y)
	sortConditions(x.Conditions)
	sortConditions(y.Conditions)
	return apiequality.Semantic.DeepEqual(x, y)
}

func sortConditions(cs []metav1.Condition) {
	slices.SortFunc(cs, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
