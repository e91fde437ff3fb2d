package stager

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
)

// object is one workload object of a Binding, as its entry reads.
type object struct {
	clause sbpcel.DownsyncClause
	cs     *unstructured.Unstructured // the CombinedStatus of the stage that counts for it; nil for none
}

// key identifies the object across a Binding and the labels of a CombinedStatus.
type objectKey struct{ group, resource, namespace, name string }

func (o *object) key() objectKey {
	return objectKey{o.clause.Group, o.clause.Resource, o.clause.Namespace, o.clause.Name}
}

// String renders the object for messages: group/resource namespace/name.
func (o *object) String() string {
	gr := o.clause.Resource
	if o.clause.Group != "" {
		gr = o.clause.Group + "/" + o.clause.Resource
	}
	if o.clause.Namespace == "" {
		return gr + " " + o.clause.Name
	}
	return gr + " " + o.clause.Namespace + "/" + o.clause.Name
}

// bindingObjects lists the workload objects of a Binding in (namespace, name, group, resource) order, so
// that evaluation and its counts do not depend on the Binding's list order.
func bindingObjects(b *controlv1alpha1.Binding) []*object {
	out := make([]*object, 0, len(b.Spec.Workload.ClusterScope)+len(b.Spec.Workload.NamespaceScope))
	for _, c := range b.Spec.Workload.ClusterScope {
		out = append(out, &object{clause: clauseOf(c.Group, c.Version, c.Resource, "", c.Name,
			c.ResourceVersion, c.DownsyncModulation)})
	}
	for _, c := range b.Spec.Workload.NamespaceScope {
		out = append(out, &object{clause: clauseOf(c.Group, c.Version, c.Resource, c.Namespace, c.Name,
			c.ResourceVersion, c.DownsyncModulation)})
	}
	slices.SortFunc(out, func(a, b *object) int {
		return cmp.Or(cmp.Compare(a.clause.Namespace, b.clause.Namespace), cmp.Compare(a.clause.Name, b.clause.Name),
			cmp.Compare(a.clause.Group, b.clause.Group), cmp.Compare(a.clause.Resource, b.clause.Resource))
	})
	return out
}

func clauseOf(group, version, resource, namespace, name, rv string, m controlv1alpha1.DownsyncModulation) sbpcel.DownsyncClause {
	return sbpcel.DownsyncClause{
		Group: group, Version: version, Resource: resource, Namespace: namespace, Name: name, ResourceVersion: rv,
		CreateOnly: m.CreateOnly, WantSingletonReportedState: m.WantSingletonReportedState,
		StatusCollectors: m.StatusCollectors,
	}
}

// selectCombinedStatuses gives each object the CombinedStatus that counts for it: labelled with the
// BindingPolicy's name and the object's group, resource, namespace and name, named "<object UID>.<the
// BindingPolicy's UID>" (the recorded incarnation), and created no earlier than the BindingPolicy. If two
// qualify, the newest counts. CombinedStatuses of other stages, of earlier incarnations of a BindingPolicy
// of the same name or of other policies never count.
func selectCombinedStatuses(objects []*object, css []*unstructured.Unstructured, bp *controlv1alpha1.BindingPolicy) {
	byKey := make(map[objectKey]*object, len(objects))
	for _, o := range objects {
		byKey[o.key()] = o
	}
	suffix := "." + string(bp.UID)
	for _, cs := range css {
		labels := cs.GetLabels()
		if labels[controlv1alpha1.LabelCombinedStatusBindingPolicy] != bp.Name || !strings.HasSuffix(cs.GetName(), suffix) {
			continue
		}
		created := cs.GetCreationTimestamp()
		if created.Before(&bp.CreationTimestamp) {
			continue
		}
		o := byKey[objectKey{
			labels[controlv1alpha1.LabelCombinedStatusAPIGroup], labels[controlv1alpha1.LabelCombinedStatusResource],
			labels[controlv1alpha1.LabelCombinedStatusNamespace], labels[controlv1alpha1.LabelCombinedStatusName],
		}]
		if o == nil {
			continue
		}
		if o.cs == nil || o.cs.GetCreationTimestamp().Time.Before(created.Time) {
			o.cs = cs
		}
	}
}

// destinationsOf lists the Binding's destination cluster ids, sorted.
func destinationsOf(b *controlv1alpha1.Binding) []string {
	out := make([]string, 0, len(b.Spec.Destinations))
	for _, d := range b.Spec.Destinations {
		out = append(out, d.ClusterID)
	}
	slices.Sort(out)
	return out
}

// collectorsMissing returns KubeStellar's message when it reports that a StatusCollector the Binding names
// does not exist (the StatusCollectorsAvailable condition is False on the BindingPolicy or its Binding).
func collectorsMissing(bp *controlv1alpha1.BindingPolicy, b *controlv1alpha1.Binding) (string, bool) {
	for _, conds := range [][]controlv1alpha1.BindingPolicyCondition{bp.Status.Conditions, b.Status.Conditions} {
		for _, c := range conds {
			if c.Type == controlv1alpha1.TypeStatusCollectorsAvailable && c.Status == corev1.ConditionFalse {
				return fmt.Sprintf("KubeStellar reports: %s", c.Message), true
			}
		}
	}
	return "", false
}

// examples renders at most five objects for a message, and how many more there are.
func examples(objs []*object) string {
	const most = 5
	names := make([]string, 0, min(len(objs), most))
	for _, o := range objs[:min(len(objs), most)] {
		names = append(names, o.String())
	}
	s := strings.Join(names, ", ")
	if len(objs) > most {
		s += fmt.Sprintf(" and %d more", len(objs)-most)
	}
	return s
}
