package kubestellarsim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

func TestNewCombinedStatus(t *testing.T) {
	results := []controlv1alpha1.NamedStatusCombination{{Name: "sc", ColumnNames: []string{}}}
	cases := map[string]struct {
		ref  ObjectRef
		obj  map[string]any
		want *controlv1alpha1.CombinedStatus
	}{
		"namespaced object": {
			ref: ObjectRef{Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx"},
			obj: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{
				"name": "nginx", "namespace": "demo", "uid": "obj-uid",
			}},
			want: &controlv1alpha1.CombinedStatus{
				ObjectMeta: metav1.ObjectMeta{
					Name: "obj-uid.bp-uid", Namespace: "demo",
					Labels: map[string]string{
						"status.kubestellar.io/api-group": "apps", "status.kubestellar.io/resource": "deployments",
						"status.kubestellar.io/namespace": "demo", "status.kubestellar.io/name": "nginx",
						"status.kubestellar.io/binding-policy": "policy",
					},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx", UID: "obj-uid"}},
				},
				Results: results,
			},
		},
		"cluster-scoped core object": {
			ref: ObjectRef{Resource: "namespaces", Name: "demo"},
			obj: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "demo", "uid": "ns-uid"}},
			want: &controlv1alpha1.CombinedStatus{
				ObjectMeta: metav1.ObjectMeta{
					Name: "ns-uid.bp-uid", Namespace: "kubestellar-report",
					Labels: map[string]string{
						"status.kubestellar.io/api-group": "", "status.kubestellar.io/resource": "namespaces",
						"status.kubestellar.io/namespace": "", "status.kubestellar.io/name": "demo",
						"status.kubestellar.io/binding-policy": "policy",
					},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "demo", UID: "ns-uid"}},
				},
				Results: results,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := newCombinedStatus("policy", "bp-uid", tc.ref, &unstructured.Unstructured{Object: tc.obj}, results)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CombinedStatus (-want +got):\n%s", diff)
			}
			binding, ref, ok := refFromLabels(got.Labels)
			if !ok || binding != "policy" || ref != tc.ref {
				t.Errorf("refFromLabels = %q, %v, %v; want policy, %v, true", binding, ref, ok, tc.ref)
			}
		})
	}
}

func TestRefFromLabelsNeedsAllFive(t *testing.T) {
	l := combinedStatusLabels("p", ObjectRef{Resource: "configmaps", Namespace: "a", Name: "b"})
	delete(l, controlv1alpha1.LabelCombinedStatusNamespace)
	if _, _, ok := refFromLabels(l); ok {
		t.Error("refFromLabels accepted four labels")
	}
}

func TestCombinedStatusUpToDate(t *testing.T) {
	ref := ObjectRef{Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx"}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "nginx", "namespace": "demo", "uid": "u"}}}
	withObject := func(raw string) []controlv1alpha1.NamedStatusCombination {
		return []controlv1alpha1.NamedStatusCombination{{Name: "sc", ColumnNames: []string{"o"}, Rows: []controlv1alpha1.StatusCombinationRow{{
			Columns: []controlv1alpha1.Value{{Type: controlv1alpha1.TypeObject, Object: &apiextensionsv1.JSON{Raw: []byte(raw)}}},
		}}}}
	}
	desired := newCombinedStatus("p", "bp", ref, obj, withObject(`{"a":1,"b":[1,2]}`))
	cases := map[string]struct {
		mutate func(*controlv1alpha1.CombinedStatus)
		want   bool
	}{
		"same":                                {mutate: func(*controlv1alpha1.CombinedStatus) {}, want: true},
		"embedded JSON formatted differently": {mutate: func(cs *controlv1alpha1.CombinedStatus) { cs.Results = withObject(`{ "b": [1, 2.0], "a": 1 }`) }, want: true},
		"an extra label":                      {mutate: func(cs *controlv1alpha1.CombinedStatus) { cs.Labels["x"] = "y" }},
		"a wrong label": {mutate: func(cs *controlv1alpha1.CombinedStatus) {
			cs.Labels[controlv1alpha1.LabelCombinedStatusBindingPolicy] = "q"
		}},
		"other results":            {mutate: func(cs *controlv1alpha1.CombinedStatus) { cs.Results = withObject(`{"a":2}`) }},
		"no results":               {mutate: func(cs *controlv1alpha1.CombinedStatus) { cs.Results = nil }},
		"annotations do not count": {mutate: func(cs *controlv1alpha1.CombinedStatus) { cs.Annotations = map[string]string{"x": "y"} }, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stored := desired.DeepCopy()
			tc.mutate(stored)
			if got := combinedStatusUpToDate(stored, desired); got != tc.want {
				t.Errorf("combinedStatusUpToDate = %v, want %v", got, tc.want)
			}
		})
	}
	empty := newCombinedStatus("p", "bp", ref, obj, nil)
	if !combinedStatusUpToDate(newCombinedStatus("p", "bp", ref, obj, []controlv1alpha1.NamedStatusCombination{}), empty) {
		t.Error("empty and nil results differ")
	}
}
