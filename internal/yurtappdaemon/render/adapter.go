package render

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// Adapter is the small per-workload-kind interface: what differs between Deployments and StatefulSets.
type Adapter interface {
	// Kind is the template type the adapter renders.
	Kind() openyurtv1alpha1.TemplateType
	// GVK is the child's group, version and kind (apps/v1).
	GVK() schema.GroupVersionKind
	// NewObject returns an empty typed child.
	NewObject() client.Object
	// NewList returns an empty typed child list.
	NewList() client.ObjectList
	// Items returns the items of a list made by NewList, as pointers into it.
	Items(list client.ObjectList) []client.Object
	// NameLimit is the longest deterministic child name of the kind.
	NameLimit() int
	// Summary reads a live child: spec replicas, ready replicas, the availableCondition string and
	// whether it counts as Ready and Updated (the status counters; Updated needs the current revision name).
	Summary(obj client.Object, currentRevision string) Summary
	// ImmutableChanges lists, for a template update, the spec fields Kubernetes does not let this kind
	// change (none for Deployments besides the selector, which the webhook's selector-immutability check covers). fldPath is the path of
	// the workload template (normally spec.workloadTemplate); errors are Forbidden at <member>.spec.
	ImmutableChanges(oldTmpl, newTmpl *openyurtv1alpha1.WorkloadTemplate, fldPath *field.Path) field.ErrorList
}

// Summary is what the owner's status needs of a live child.
type Summary struct {
	Replicas, ReadyReplicas int32
	// Available is "True", "False" or "Unknown".
	Available string
	// Ready: the status is current and readyReplicas == spec.replicas.
	// Updated: the status is current, the child carries the current revision label and
	// updatedReplicas == spec.replicas.
	Ready, Updated bool
}

// AdapterFor returns the adapter of kind, and false for an unknown kind.
func AdapterFor(kind openyurtv1alpha1.TemplateType) (Adapter, bool) {
	switch kind {
	case openyurtv1alpha1.DeploymentTemplateType:
		return deploymentAdapter{}, true
	case openyurtv1alpha1.StatefulSetTemplateType:
		return statefulSetAdapter{}, true
	default:
		return nil, false
	}
}

// Adapters returns the adapters of both kinds, Deployment first.
func Adapters() []Adapter {
	return []Adapter{deploymentAdapter{}, statefulSetAdapter{}}
}

// conditionString maps a condition status to "True", "False" or "Unknown".
func conditionString(s string) string {
	if s == "True" || s == "False" {
		return s
	}
	return "Unknown"
}

// objects returns pointers to the items of a typed list (shared with it, not copies).
func objects[T any, P interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}
