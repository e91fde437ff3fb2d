package stagedbindingpolicy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
)

// Preview computes, reading only, what drover's first passes would do to every StagedBindingPolicy as the
// KubeStellar workload stager (or drover) left it, at time now: the status it continues from, and each
// BindingPolicy of the policy adopted, updated, created, deleted or kept, with the reason. It runs the
// controller's own pass (stager.Decide) on what it reads with c, then a second pass on the state the first
// one leaves, and reports where that pass leaves the rollout.
//
// Effects: adopting a BindingPolicy (its spec unchanged) or creating one never takes the workload off a
// cluster; deleting one, or changing its spec, may (preview.Delete and preview.Update count as restarts).
func Preview(ctx context.Context, c client.Reader, now time.Time) ([]preview.Report, error) {
	sbps := &communityv1alpha1.StagedBindingPolicyList{}
	if err := c.List(ctx, sbps); err != nil {
		return nil, fmt.Errorf("listing StagedBindingPolicies: %w", err)
	}
	bps := &controlv1alpha1.BindingPolicyList{}
	if err := c.List(ctx, bps); err != nil {
		return nil, fmt.Errorf("listing BindingPolicies: %w", err)
	}
	cel := sbpcel.NewCache(sbpcel.Options{})
	out := make([]preview.Report, 0, len(sbps.Items))
	for i := range sbps.Items {
		sbp := &sbps.Items[i]
		if sbp.DeletionTimestamp != nil {
			out = append(out, preview.Report{Owner: "StagedBindingPolicy " + sbp.Name,
				Notices: []string{"being deleted: drover does nothing to it"}})
			continue
		}
		obs, err := previewObserve(ctx, c, sbp, bps.Items)
		if err != nil {
			return nil, err
		}
		out = append(out, previewSBP(sbp, obs, now, cel))
	}
	return out, nil
}

// previewObserve reads what the controller's observe reads from its cache: the BindingPolicies the policy
// controls and those named as its stages name theirs, their Bindings, and the CombinedStatuses of the active
// stage's BindingPolicy (status.activeStage as stored).
func previewObserve(ctx context.Context, c client.Reader, sbp *communityv1alpha1.StagedBindingPolicy,
	all []controlv1alpha1.BindingPolicy) (stager.Observed, error) {
	obs := stager.Observed{BindingPolicies: map[string]*controlv1alpha1.BindingPolicy{}, Bindings: map[string]*controlv1alpha1.Binding{}}
	names := map[string]bool{}
	for _, s := range sbp.Spec.Stages {
		names[stager.BindingPolicyName(sbp.Name, s.Name)] = true
	}
	for i := range all {
		bp := &all[i]
		if ref := metav1.GetControllerOfNoCopy(bp); names[bp.Name] || (ref != nil && ref.UID == sbp.UID) {
			obs.BindingPolicies[bp.Name] = bp
		}
	}
	if err := readBindings(ctx, c, obs); err != nil {
		return obs, err
	}
	if sbp.Status.ActiveStage == "" {
		return obs, nil
	}
	active := stager.BindingPolicyName(sbp.Name, sbp.Status.ActiveStage)
	list := combinedStatusListObject()
	if err := c.List(ctx, list, client.MatchingLabels{controlv1alpha1.LabelCombinedStatusBindingPolicy: active}); err != nil {
		return obs, fmt.Errorf("listing the CombinedStatuses of BindingPolicy %s: %w", active, err)
	}
	for i := range list.Items {
		obs.CombinedStatuses = append(obs.CombinedStatuses, &list.Items[i])
	}
	return obs, nil
}

// previewSBP runs the first pass on one policy, describes its writes, then runs the second pass on the state
// the first leaves and says where it leaves the rollout.
func previewSBP(sbp *communityv1alpha1.StagedBindingPolicy, obs stager.Observed, now time.Time, cel *sbpcel.Cache) preview.Report {
	r := preview.Report{Owner: "StagedBindingPolicy " + sbp.Name}
	d := stager.Decide(stager.Input{SBP: sbp, Observed: obs, Now: now, CEL: cel})
	r.Items = append(r.Items, statusItem(sbp, &d.Status))
	written := map[string]bool{}
	for _, w := range d.Writes {
		written[w.Desired.Name] = true
		r.Items = append(r.Items, writeItem(w))
	}
	for _, del := range d.Deletes {
		written[del.Name] = true
		r.Items = append(r.Items, preview.Item{Object: "BindingPolicy " + del.Name, Effect: preview.Delete,
			Why: "drover's, and no stage places it any more: KubeStellar removes the workload from the clusters only it selected"})
	}
	desired := desiredNames(sbp, &d.Status)
	for _, name := range slices.Sorted(maps.Keys(obs.BindingPolicies)) {
		if !written[name] {
			r.Items = append(r.Items, untouchedItem(sbp, obs.BindingPolicies[name], desired[name]))
		}
	}
	if c := meta.FindStatusCondition(d.Status.Conditions, communityv1alpha1.ConditionInvalidSpec); c != nil && c.Status == metav1.ConditionTrue {
		r.Notices = append(r.Notices, "the spec breaks drover's rules, so nothing moves and no BindingPolicy is written: "+c.Message)
	}
	if d.Commit {
		r.Notices = append(r.Notices, fmt.Sprintf("the first pass commits a transition: %s", transitionsOf(d.Transitions)))
	}
	r.Notices = append(r.Notices, "then: "+nextPass(sbp, obs, d, now, cel))
	return r
}

// statusItem describes the status the first pass writes, starting from the one stored.
func statusItem(sbp *communityv1alpha1.StagedBindingPolicy, st *communityv1alpha1.StagedBindingPolicyStatus) preview.Item {
	it := preview.Item{Object: "status", Effect: preview.Status}
	old := sbp.Status.ActiveStage
	switch {
	case old == "":
		it.Why = fmt.Sprintf("no active stage: the rollout starts at stage %s", st.ActiveStage)
	case len(sbp.Status.Stages) == 0 && old == st.ActiveStage:
		it.Why = fmt.Sprintf("activeStage %s as the stager wrote it, with no history: drover continues at %s (index %d), "+
			"records it Active with its clock starting now and the stages before it as Succeeded; no transition, no event",
			old, st.ActiveStage, derefIndex(st.ActiveStageIndex))
	case old != st.ActiveStage:
		it.Why = fmt.Sprintf("activeStage %s is no longer a stage of the spec: stage %s at its position is active", old, st.ActiveStage)
	default:
		it.Why = fmt.Sprintf("drover's status: the rollout continues at stage %s", st.ActiveStage)
	}
	it.Why += fmt.Sprintf("; phase %s", st.Phase)
	if c := meta.FindStatusCondition(st.Conditions, communityv1alpha1.ConditionProgressing); c != nil && c.Reason != "" {
		it.Why += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
	}
	return it
}

// writeItem describes one BindingPolicy write of the first pass.
func writeItem(w stager.Write) preview.Item {
	it := preview.Item{Object: "BindingPolicy " + w.Desired.Name}
	specSame := w.Existing != nil && equality.Semantic.DeepEqual(w.Existing.Spec, w.Desired.Spec)
	switch {
	case w.Kind == stager.WriteCreate:
		it.Effect, it.Why = preview.Create, "the stage's BindingPolicy does not exist: drover creates it (clusters are added, none removed)"
	case w.Kind == stager.WriteAdopt && specSame:
		it.Effect, it.Why = preview.Adopt, "owned by this policy without a controller reference (as the stager makes it): drover "+
			"replaces that owner reference with its controller reference and adds its labels; spec, UID, finalizers and Binding unchanged"
	case w.Kind == stager.WriteAdopt:
		it.Effect, it.Why = preview.Update, "adopted (controller reference and labels added), and its spec is rewritten to the stage's: "+
			specDiff(w.Existing, w.Desired)+"; clusters or objects it no longer selects lose the workload"
	case specSame:
		it.Effect, it.Why = preview.Relabel, "drover's; its labels are restored"
	default:
		it.Effect, it.Why = preview.Update, "drover's, and its spec differs from the stage's: "+specDiff(w.Existing, w.Desired)+
			"; clusters or objects it no longer selects lose the workload"
	}
	return it
}

// untouchedItem describes a BindingPolicy of the policy the first pass does not write, and why; one of
// drover's that no stage places any more is deleted by a later pass, once the desired ones are current.
func untouchedItem(sbp *communityv1alpha1.StagedBindingPolicy, bp *controlv1alpha1.BindingPolicy, desired bool) preview.Item {
	it := preview.Item{Object: "BindingPolicy " + bp.Name, Effect: preview.Keep}
	ref := metav1.GetControllerOfNoCopy(bp)
	ownedBy := slices.ContainsFunc(bp.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == sbp.UID })
	switch {
	case bp.DeletionTimestamp != nil:
		it.Why = "being deleted; drover waits for it to be gone"
	case ref != nil && ref.UID == sbp.UID && desired:
		it.Why = "drover's, as the stage wants it"
	case ref != nil && ref.UID == sbp.UID:
		it.Why = "drover's and not placed by the active stage: deleted once the stage's BindingPolicy is current (handover)"
		it.Effect = preview.Delete
	case ref == nil && ownedBy:
		it.Why = "the stager's, but no stage drover places names it: drover neither adopts nor deletes it, so it keeps placing " +
			"the workload on its clusters until you delete it (deleting the policy deletes it too)"
	default:
		it.Why = "not this policy's (no reference to it): never modified or deleted; a stage that needs the name waits (Conflict)"
	}
	return it
}

// nextPass runs the second pass on the state the first leaves: the status it writes, and the
// BindingPolicies as its writes leave them (an adoption or a label fix changes no generation; a created or
// respecified BindingPolicy is not current until KubeStellar processes it).
func nextPass(sbp *communityv1alpha1.StagedBindingPolicy, obs stager.Observed, d *stager.Decision, now time.Time, cel *sbpcel.Cache) string {
	next := sbp.DeepCopy()
	next.Status = *d.Status.DeepCopy()
	after := stager.Observed{BindingPolicies: map[string]*controlv1alpha1.BindingPolicy{}, Bindings: obs.Bindings,
		CombinedStatuses: obs.CombinedStatuses}
	for name, bp := range obs.BindingPolicies {
		after.BindingPolicies[name] = bp
	}
	for _, w := range d.Writes {
		switch w.Kind {
		case stager.WriteCreate:
			return fmt.Sprintf("the stage waits for KubeStellar to process the new BindingPolicy %s", w.Desired.Name)
		default:
			merged := stager.MergeDesired(w.Existing, w.Desired)
			if !equality.Semantic.DeepEqual(w.Existing.Spec, w.Desired.Spec) {
				return fmt.Sprintf("the stage waits for KubeStellar to process the new spec of BindingPolicy %s", w.Desired.Name)
			}
			after.BindingPolicies[w.Desired.Name] = merged
		}
	}
	for _, del := range d.Deletes {
		delete(after.BindingPolicies, del.Name)
	}
	d2 := stager.Decide(stager.Input{SBP: next, Observed: after, Now: now, CEL: cel})
	msg := fmt.Sprintf("the next pass leaves the rollout at stage %s, %s", d2.Status.ActiveStage, d2.Status.Phase)
	if c := meta.FindStatusCondition(d2.Status.Conditions, communityv1alpha1.ConditionProgressing); c != nil && c.Reason != "" && c.Status == metav1.ConditionTrue {
		msg += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
	}
	if d2.Commit && len(d2.Transitions) > 0 {
		msg += fmt.Sprintf("; it commits %s by drover's gates", transitionsOf(d2.Transitions))
	}
	return msg
}

func transitionsOf(ts []stager.Transition) string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Stage+" "+t.Result)
	}
	return strings.Join(out, ", ")
}

// specDiff names the parts of the spec that differ.
func specDiff(have, want *controlv1alpha1.BindingPolicy) string {
	var parts []string
	if !equality.Semantic.DeepEqual(have.Spec.ClusterSelectors, want.Spec.ClusterSelectors) {
		parts = append(parts, "clusterSelectors")
	}
	if !equality.Semantic.DeepEqual(have.Spec.Downsync, want.Spec.Downsync) {
		parts = append(parts, "downsync")
	}
	if len(parts) == 0 {
		parts = append(parts, "other spec fields")
	}
	return strings.Join(parts, " and ") + " differ"
}

func derefIndex(i *int32) int32 {
	if i == nil {
		return 0
	}
	return *i
}

// desiredNames are the names of the BindingPolicies the status's stages place: the active stage's
// (Exclusive), or every stage's up to it (Cumulative).
func desiredNames(sbp *communityv1alpha1.StagedBindingPolicy, st *communityv1alpha1.StagedBindingPolicyStatus) map[string]bool {
	out := map[string]bool{}
	for _, s := range sbp.Spec.Stages {
		if sbp.Spec.Mode == communityv1alpha1.ModeCumulative || s.Name == st.ActiveStage {
			out[stager.BindingPolicyName(sbp.Name, s.Name)] = true
		}
		if s.Name == st.ActiveStage {
			break
		}
	}
	return out
}
