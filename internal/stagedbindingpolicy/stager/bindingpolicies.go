package stager

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// ownership says how a BindingPolicy with a desired name relates to the policy.
type ownership int

const (
	// missing: no BindingPolicy has the name.
	missing ownership = iota
	// ours: it carries the policy's controller reference.
	ours
	// adoptable: it carries a reference to the policy that is not a controller reference, the shape the
	// stager wrote.
	adoptable
	// foreign: anything else; it is never modified or deleted.
	foreign
)

// ownershipOf classifies bp against the policy of uid.
func ownershipOf(bp *controlv1alpha1.BindingPolicy, uid types.UID) ownership {
	if bp == nil {
		return missing
	}
	if c := metav1.GetControllerOfNoCopy(bp); c != nil {
		if c.UID == uid {
			return ours
		}
		return foreign
	}
	for _, ref := range bp.OwnerReferences {
		if ref.UID == uid {
			return adoptable
		}
	}
	return foreign
}

// DesiredBindingPolicy is the BindingPolicy of stage i: the policy's downsync and the stage's cluster
// selectors, copied so that nil and empty stay as written (a nil apiGroup means any group, "" the core
// group), drover's labels and one controller reference to the policy.
func DesiredBindingPolicy(sbp *communityv1alpha1.StagedBindingPolicy, i int) *controlv1alpha1.BindingPolicy {
	stage := sbp.Spec.Stages[i]
	bp := &controlv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: BindingPolicyName(sbp.Name, stage.Name),
			Labels: map[string]string{
				communityv1alpha1.LabelStagedBindingPolicy: sbp.Name,
				communityv1alpha1.LabelStage:               stage.Name,
				communityv1alpha1.LabelManagedBy:           communityv1alpha1.ManagedByValue,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         communityv1alpha1.GroupVersion.String(),
				Kind:               "StagedBindingPolicy",
				Name:               sbp.Name,
				UID:                sbp.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
	}
	for _, c := range sbp.Spec.Downsync {
		bp.Spec.Downsync = append(bp.Spec.Downsync, *c.DeepCopy())
	}
	for _, s := range stage.ClusterSelectors {
		bp.Spec.ClusterSelectors = append(bp.Spec.ClusterSelectors, *s.DeepCopy())
	}
	return bp
}

// upToDate reports whether an existing BindingPolicy of ours has the desired spec, drover's labels and the
// controller reference. Other labels, annotations, finalizers and references (KubeStellar's) do not matter.
func upToDate(existing, desired *controlv1alpha1.BindingPolicy) bool {
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(existing.Spec, desired.Spec)
}

// MergeDesired returns existing with drover's parts of desired applied: the spec, drover's labels and the
// controller reference (replacing a plain reference to the same policy). Everything else of existing is kept.
func MergeDesired(existing, desired *controlv1alpha1.BindingPolicy) *controlv1alpha1.BindingPolicy {
	out := existing.DeepCopy()
	out.Spec = *desired.Spec.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	maps.Copy(out.Labels, desired.Labels)
	ref := desired.OwnerReferences[0]
	refs := make([]metav1.OwnerReference, 0, len(out.OwnerReferences)+1)
	for _, r := range out.OwnerReferences {
		if r.UID != ref.UID {
			refs = append(refs, r)
		}
	}
	refs = append(refs, ref)
	out.OwnerReferences = refs
	return out
}

// bpState is the state of the active stage's BindingPolicy: the BindingPolicyReady condition.
type bpState struct {
	current bool
	reason  string
	message string
}

// observeBindingPolicies records the UID of each desired stage's BindingPolicy of ours in its history entry.
// A BindingPolicy re-created under the active stage (a new UID) restarts the stage's clock: the evidence of
// the old incarnation no longer counts. It then judges whether the active stage's BindingPolicy is current.
func (p *pass) observeBindingPolicies() {
	for _, i := range p.desiredStages() {
		e := entryOf(p.st, p.spec.Stages[i].Name)
		if e == nil {
			continue
		}
		name := BindingPolicyName(p.sbp.Name, e.Name)
		e.BindingPolicyName = name
		bp := p.in.Observed.BindingPolicies[name]
		if ownershipOf(bp, p.sbp.UID) != ours || bp.DeletionTimestamp != nil || bp.UID == e.BindingPolicyUID {
			continue
		}
		if e.BindingPolicyUID != "" {
			p.restartClock(i) // another incarnation replaced the recorded one
		}
		e.BindingPolicyUID = bp.UID
	}
	p.bp = p.judgeActive()
}

// judgeActive judges the active stage's BindingPolicy: current when it is ours, of the recorded incarnation,
// not being deleted, as desired, processed by KubeStellar (its observed generation) and with its Binding.
func (p *pass) judgeActive() bpState {
	e := p.activeEntry()
	name := BindingPolicyName(p.sbp.Name, p.spec.Stages[p.active].Name)
	bp := p.in.Observed.BindingPolicies[name]
	if bp != nil && bp.DeletionTimestamp != nil {
		// Whoever's it is, it is going: the stage waits for it to be gone, then creates its own.
		return bpState{reason: communityv1alpha1.ReasonTerminating, message: fmt.Sprintf("BindingPolicy %s is being deleted; it is created again once gone", name)}
	}
	switch ownershipOf(bp, p.sbp.UID) {
	case missing:
		return bpState{reason: communityv1alpha1.ReasonPending, message: fmt.Sprintf("BindingPolicy %s does not exist yet", name)}
	case foreign, adoptable:
		if ownershipOf(bp, p.sbp.UID) == foreign {
			return bpState{reason: communityv1alpha1.ReasonConflict,
				message: fmt.Sprintf("BindingPolicy %s exists and is not controlled by this StagedBindingPolicy; it is left alone", name)}
		}
		return bpState{reason: communityv1alpha1.ReasonPending, message: fmt.Sprintf("BindingPolicy %s is being adopted", name)}
	}
	if e == nil || bp.UID != e.BindingPolicyUID || !upToDate(bp, DesiredBindingPolicy(p.sbp, p.active)) {
		return bpState{reason: communityv1alpha1.ReasonPending, message: fmt.Sprintf("BindingPolicy %s is being updated", name)}
	}
	if ok, why := Current(bp, p.in.Observed.Bindings[name]); !ok {
		return bpState{reason: communityv1alpha1.ReasonPending, message: why}
	}
	return bpState{current: true, reason: communityv1alpha1.ReasonCurrent, message: fmt.Sprintf("BindingPolicy %s is current", name)}
}

// Current reports whether KubeStellar has processed bp: its status has caught up with its generation and
// its Binding (same name) is controlled by this incarnation. Otherwise it says why not.
func Current(bp *controlv1alpha1.BindingPolicy, binding *controlv1alpha1.Binding) (bool, string) {
	if bp == nil {
		return false, "the BindingPolicy does not exist"
	}
	if bp.DeletionTimestamp != nil {
		return false, fmt.Sprintf("BindingPolicy %s is being deleted", bp.Name)
	}
	if bp.Status.ObservedGeneration < bp.Generation {
		return false, fmt.Sprintf("KubeStellar has not processed generation %d of BindingPolicy %s yet", bp.Generation, bp.Name)
	}
	if binding == nil {
		return false, fmt.Sprintf("KubeStellar has not made the Binding of BindingPolicy %s yet", bp.Name)
	}
	if c := metav1.GetControllerOfNoCopy(binding); c == nil || c.UID != bp.UID {
		return false, fmt.Sprintf("Binding %s belongs to another incarnation of BindingPolicy %s", binding.Name, bp.Name)
	}
	return true, ""
}

// desiredStages lists the stages whose BindingPolicies must exist: the active one (Exclusive), or every
// stage up to it (Cumulative).
func (p *pass) desiredStages() []int {
	if p.spec.Mode != communityv1alpha1.ModeCumulative {
		return []int{p.active}
	}
	out := make([]int, 0, p.active+1)
	for i := 0; i <= p.active; i++ {
		out = append(out, i)
	}
	return out
}

// Reconcilable says how to make an existing BindingPolicy (read after a create found its name taken) the
// desired one: an update of one of ours, an adoption of the stager's, or nothing for someone else's or one
// being deleted.
func Reconcilable(existing, desired *controlv1alpha1.BindingPolicy) (WriteKind, bool) {
	if existing.DeletionTimestamp != nil {
		return "", false
	}
	uid := desired.OwnerReferences[0].UID
	switch ownershipOf(existing, uid) {
	case ours:
		return WriteUpdate, !upToDate(existing, desired)
	case adoptable:
		return WriteAdopt, true
	}
	return "", false
}
