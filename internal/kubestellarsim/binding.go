package kubestellarsim

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// resolveBinding computes the spec of a policy's Binding: destinations sorted by cluster, workload entries
// sorted by their keys, so that an unchanged world gives an identical spec.
func resolveBinding(spec *controlv1alpha1.BindingPolicySpec, clusters []clusterInfo, objects []objectInfo,
	namespaces namespaceLabels) controlv1alpha1.BindingSpec {
	var out controlv1alpha1.BindingSpec
	clauses := parseClauses(spec.Downsync)
	for _, name := range selectDestinations(spec.ClusterSelectors, clusters) {
		out.Destinations = append(out.Destinations, controlv1alpha1.Destination{ClusterID: name})
	}
	for i := range objects {
		obj := &objects[i]
		modulation, ok := matchObject(clauses, obj, namespaces)
		if !ok {
			continue
		}
		gvr := metav1.GroupVersionResource{Group: obj.Group, Version: obj.Version, Resource: obj.Resource}
		if obj.Namespaced {
			out.Workload.NamespaceScope = append(out.Workload.NamespaceScope, controlv1alpha1.NamespaceScopeDownsyncClause{
				NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
					GroupVersionResource: gvr, Namespace: obj.Namespace, Name: obj.Name, ResourceVersion: obj.ResourceVersion,
				},
				DownsyncModulation: modulation,
			})
			continue
		}
		out.Workload.ClusterScope = append(out.Workload.ClusterScope, controlv1alpha1.ClusterScopeDownsyncClause{
			ClusterScopeDownsyncObject: controlv1alpha1.ClusterScopeDownsyncObject{
				GroupVersionResource: gvr, Name: obj.Name, ResourceVersion: obj.ResourceVersion,
			},
			DownsyncModulation: modulation,
		})
	}
	sortWorkload(&out.Workload)
	return out
}

func sortWorkload(w *controlv1alpha1.DownsyncObjectClauses) {
	slices.SortFunc(w.ClusterScope, func(a, b controlv1alpha1.ClusterScopeDownsyncClause) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(w.NamespaceScope, func(a, b controlv1alpha1.NamespaceScopeDownsyncClause) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// bindingOwner is the only ownerReference of a Binding: its policy, as controller, not blocking deletion.
func bindingOwner(bp *controlv1alpha1.BindingPolicy) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         controlv1alpha1.GroupVersion.String(),
		Kind:               "BindingPolicy",
		Name:               bp.Name,
		UID:                bp.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(false),
	}
}

// bindingUpToDate reports whether a stored Binding already has the desired spec and owner.
func bindingUpToDate(stored *controlv1alpha1.Binding, spec *controlv1alpha1.BindingSpec, owner metav1.OwnerReference) bool {
	return equality.Semantic.DeepEqual(stored.Spec, *spec) &&
		equality.Semantic.DeepEqual(stored.OwnerReferences, []metav1.OwnerReference{owner})
}

// bindingEntry is one workload entry of a Binding, cluster-scoped or namespaced, with its modulation.
type bindingEntry struct {
	Ref        ObjectRef
	Version    string
	Modulation controlv1alpha1.DownsyncModulation
	RV         string
}

func clusterScopeEntry(c *controlv1alpha1.ClusterScopeDownsyncClause) bindingEntry {
	return bindingEntry{
		Ref:     ObjectRef{Group: c.Group, Resource: c.Resource, Name: c.Name},
		Version: c.Version, Modulation: c.DownsyncModulation, RV: c.ResourceVersion,
	}
}

func namespaceScopeEntry(c *controlv1alpha1.NamespaceScopeDownsyncClause) bindingEntry {
	return bindingEntry{
		Ref:     ObjectRef{Group: c.Group, Resource: c.Resource, Namespace: c.Namespace, Name: c.Name},
		Version: c.Version, Modulation: c.DownsyncModulation, RV: c.ResourceVersion,
	}
}

// bindingEntries lists the workload entries of a Binding spec.
func bindingEntries(spec *controlv1alpha1.BindingSpec) []bindingEntry {
	out := make([]bindingEntry, 0, len(spec.Workload.ClusterScope)+len(spec.Workload.NamespaceScope))
	for i := range spec.Workload.ClusterScope {
		out = append(out, clusterScopeEntry(&spec.Workload.ClusterScope[i]))
	}
	for i := range spec.Workload.NamespaceScope {
		out = append(out, namespaceScopeEntry(&spec.Workload.NamespaceScope[i]))
	}
	return out
}

// findEntry returns the entry of one object in a Binding spec, searching the entries in place.
func findEntry(spec *controlv1alpha1.BindingSpec, ref ObjectRef) (bindingEntry, bool) {
	for i := range spec.Workload.ClusterScope {
		c := &spec.Workload.ClusterScope[i]
		if ref.Namespace == "" && c.Name == ref.Name && c.Resource == ref.Resource && c.Group == ref.Group {
			return clusterScopeEntry(c), true
		}
	}
	for i := range spec.Workload.NamespaceScope {
		c := &spec.Workload.NamespaceScope[i]
		if c.Name == ref.Name && c.Namespace == ref.Namespace && c.Resource == ref.Resource && c.Group == ref.Group {
			return namespaceScopeEntry(c), true
		}
	}
	return bindingEntry{}, false
}

// entryMap indexes the entries of a Binding spec by object.
func entryMap(spec *controlv1alpha1.BindingSpec) map[ObjectRef]bindingEntry {
	entries := bindingEntries(spec)
	m := make(map[ObjectRef]bindingEntry, len(entries))
	for _, e := range entries {
		m[e.Ref] = e
	}
	return m
}

// referencedCollectors returns the sorted, distinct collector names the entries of a Binding use.
func referencedCollectors(spec *controlv1alpha1.BindingSpec) []string {
	var names []string
	for _, e := range bindingEntries(spec) {
		names = append(names, e.Modulation.StatusCollectors...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// collectorsCondition is the StatusCollectorsAvailable condition for the given missing collector names.
func collectorsCondition(missing []string, now metav1.Time) controlv1alpha1.BindingPolicyCondition {
	c := controlv1alpha1.BindingPolicyCondition{
		Type:               controlv1alpha1.TypeStatusCollectorsAvailable,
		Status:             corev1.ConditionTrue,
		LastTransitionTime: now,
		Reason:             controlv1alpha1.ReasonReconcileSuccess,
		Message:            controlv1alpha1.MessageStatusCollectorsAvailable,
	}
	if len(missing) > 0 {
		sorted := slices.Sorted(slices.Values(missing))
		c.Status = corev1.ConditionFalse
		c.Reason = controlv1alpha1.ReasonReconcileError
		c.Message = fmt.Sprintf(controlv1alpha1.MessageStatusCollectorsMissingFormat, sorted)
	}
	return c
}

// setCondition replaces the condition of c's type in conds, keeping the old transition time when type,
// status, reason and message are unchanged. It returns a new slice.
func setCondition(conds []controlv1alpha1.BindingPolicyCondition,
	c controlv1alpha1.BindingPolicyCondition) []controlv1alpha1.BindingPolicyCondition {
	out := make([]controlv1alpha1.BindingPolicyCondition, 0, len(conds)+1)
	replaced := false
	for _, old := range conds {
		if old.Type != c.Type {
			out = append(out, old)
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, c)
		replaced = true
	}
	if !replaced {
		out = append(out, c)
	}
	return out
}

// desiredBindingStatus is the Binding status after a pass: the collectors condition set, everything else
// kept. As in KubeStellar's controller-manager, observedGeneration is not written here (it stays 0): only the
// BindingPolicy's status records the generation observed.
func desiredBindingStatus(b *controlv1alpha1.Binding, missing []string, now metav1.Time) controlv1alpha1.BindingStatus {
	status := *b.Status.DeepCopy()
	status.Conditions = setCondition(status.Conditions, collectorsCondition(missing, now))
	return status
}

// desiredPolicyStatus is the BindingPolicy status after a pass: its generation observed and the Binding's
// conditions copied.
func desiredPolicyStatus(bp *controlv1alpha1.BindingPolicy, b *controlv1alpha1.Binding) controlv1alpha1.BindingPolicyStatus {
	status := *bp.Status.DeepCopy()
	status.ObservedGeneration = bp.Generation
	status.Conditions = slices.Clone(b.Status.Conditions)
	status.Errors = slices.Clone(b.Status.Errors)
	return status
}
