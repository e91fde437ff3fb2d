package kubestellarsim

import (
	"encoding/json"
	"maps"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// combinedStatusNamespace is where the CombinedStatus of an object lives: the object's namespace, or
// kubestellar-report for a cluster-scoped object.
func combinedStatusNamespace(ref ObjectRef) string {
	if ref.Namespace == "" {
		return controlv1alpha1.ReportNamespace
	}
	return ref.Namespace
}

// combinedStatusLabels are the exactly five labels of a CombinedStatus.
func combinedStatusLabels(bindingPolicy string, ref ObjectRef) map[string]string {
	return map[string]string{
		controlv1alpha1.LabelCombinedStatusAPIGroup:      ref.Group,
		controlv1alpha1.LabelCombinedStatusResource:      ref.Resource,
		controlv1alpha1.LabelCombinedStatusNamespace:     ref.Namespace,
		controlv1alpha1.LabelCombinedStatusName:          ref.Name,
		controlv1alpha1.LabelCombinedStatusBindingPolicy: bindingPolicy,
	}
}

// refFromLabels reads the object and policy a CombinedStatus is about from its labels; ok is false when a
// label is missing.
func refFromLabels(l map[string]string) (bindingPolicy string, ref ObjectRef, ok bool) {
	keys := []string{
		controlv1alpha1.LabelCombinedStatusAPIGroup, controlv1alpha1.LabelCombinedStatusResource,
		controlv1alpha1.LabelCombinedStatusNamespace, controlv1alpha1.LabelCombinedStatusName,
		controlv1alpha1.LabelCombinedStatusBindingPolicy,
	}
	for _, k := range keys {
		if _, found := l[k]; !found {
			return "", ObjectRef{}, false
		}
	}
	ref = ObjectRef{
		Group:     l[controlv1alpha1.LabelCombinedStatusAPIGroup],
		Resource:  l[controlv1alpha1.LabelCombinedStatusResource],
		Namespace: l[controlv1alpha1.LabelCombinedStatusNamespace],
		Name:      l[controlv1alpha1.LabelCombinedStatusName],
	}
	return l[controlv1alpha1.LabelCombinedStatusBindingPolicy], ref, ref.Name != "" && ref.Resource != ""
}

// newCombinedStatus builds the CombinedStatus of a workload object for a policy: its name, namespace, five
// labels, one ownerReference to the object (without controller or blockOwnerDeletion) and the results.
func newCombinedStatus(bindingPolicy string, policyUID types.UID, ref ObjectRef, obj *unstructured.Unstructured,
	results []controlv1alpha1.NamedStatusCombination) *controlv1alpha1.CombinedStatus {
	return &controlv1alpha1.CombinedStatus{
		ObjectMeta: metav1.ObjectMeta{
			Name:      controlv1alpha1.CombinedStatusName(obj.GetUID(), policyUID),
			Namespace: combinedStatusNamespace(ref),
			Labels:    combinedStatusLabels(bindingPolicy, ref),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID(),
			}},
		},
		Results: results,
	}
}

// combinedStatusUpToDate reports whether a stored CombinedStatus already has the desired labels and
// results. Results are compared as JSON values, so that formatting of embedded JSON does not count.
func combinedStatusUpToDate(stored, desired *controlv1alpha1.CombinedStatus) bool {
	if !maps.Equal(stored.Labels, desired.Labels) {
		return false
	}
	if len(stored.Results) == 0 || len(desired.Results) == 0 {
		return len(stored.Results) == len(desired.Results)
	}
	return sameJSON(stored.Results, desired.Results)
}

// sameJSON reports whether a and b marshal to the same JSON value.
func sameJSON(a, b any) bool {
	va, errA := jsonValue(a)
	vb, errB := jsonValue(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

func jsonValue(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}
