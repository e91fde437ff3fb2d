package v1alpha1_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// jsonEqual compares arbitrary JSON values by meaning, not by bytes.
var jsonEqual = cmp.Comparer(func(a, b apiextensionsv1.JSON) bool {
	var x, y any
	if json.Unmarshal(a.Raw, &x) != nil || json.Unmarshal(b.Raw, &y) != nil {
		return bytes.Equal(a.Raw, b.Raw)
	}
	return cmp.Equal(x, y)
})

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: "control.kubestellar.io/v1alpha1", Kind: kind}
}

// transitionTime is a whole second in UTC, so that it survives RFC 3339.
var transitionTime = metav1.NewTime(time.Date(2026, 5, 13, 10, 0, 0, 0, time.UTC))

// TestWireFormat: each Go value encodes to the JSON KubeStellar writes for it, and that JSON decodes back to the
// same value. keys are dotted paths (a number indexes a list) whose presence in the JSON is checked explicitly:
// the zero values KubeStellar always sends, and the nil pointers it leaves out.
func TestWireFormat(t *testing.T) {
	tests := map[string]struct {
		obj  any
		wire string
		keys map[string]bool
	}{
		"BindingPolicy clause with nil apiGroup": {
			obj: &controlv1alpha1.BindingPolicy{
				TypeMeta:   typeMeta("BindingPolicy"),
				ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
				Spec: controlv1alpha1.BindingPolicySpec{
					ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"location-group": "edge"}}},
					Downsync: []controlv1alpha1.DownsyncPolicyClause{{
						DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{Resources: []string{"*"}, Namespaces: []string{"nginx"}},
						DownsyncModulation: controlv1alpha1.DownsyncModulation{WantSingletonReportedState: true},
					}},
				},
				Status: controlv1alpha1.BindingPolicyStatus{ObservedGeneration: 0},
			},
			wire: `{"apiVersion":"control.kubestellar.io/v1alpha1","kind":"BindingPolicy","metadata":{"name":"nginx"},
				"spec":{"clusterSelectors":[{"matchLabels":{"location-group":"edge"}}],
					"downsync":[{"resources":["*"],"namespaces":["nginx"],"wantSingletonReportedState":true}]},
				"status":{"observedGeneration":0}}`,
			keys: map[string]bool{"spec.downsync.0.apiGroup": false, "spec.downsync.0.createOnly": false, "status.observedGeneration": true},
		},
		"BindingPolicy clause with the core group": {
			obj: &controlv1alpha1.BindingPolicy{
				TypeMeta:   typeMeta("BindingPolicy"),
				ObjectMeta: metav1.ObjectMeta{Name: "cm"},
				Spec: controlv1alpha1.BindingPolicySpec{
					Downsync: []controlv1alpha1.DownsyncPolicyClause{{
						DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{
							APIGroup: ptr.To(""), Resources: []string{"configmaps"}, ObjectNames: []string{"a"},
						},
						DownsyncModulation: controlv1alpha1.DownsyncModulation{
							CreateOnly: true, StatusCollectors: []string{"count"}, WantMultiWECReportedState: true,
						},
					}},
				},
			},
			wire: `{"apiVersion":"control.kubestellar.io/v1alpha1","kind":"BindingPolicy","metadata":{"name":"cm"},
				"spec":{"downsync":[{"apiGroup":"","resources":["configmaps"],"objectNames":["a"],
					"createOnly":true,"statusCollectors":["count"],"wantMultiWECReportedState":true}]},
				"status":{"observedGeneration":0}}`,
			keys: map[string]bool{"spec.downsync.0.apiGroup": true, "spec.clusterSelectors": false},
		},
		"Binding with a core-group namespaced object": {
			obj: &controlv1alpha1.Binding{
				TypeMeta:   typeMeta("Binding"),
				ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
				Spec: controlv1alpha1.BindingSpec{
					Workload: controlv1alpha1.DownsyncObjectClauses{
						ClusterScope: []controlv1alpha1.ClusterScopeDownsyncClause{{
							ClusterScopeDownsyncObject: controlv1alpha1.ClusterScopeDownsyncObject{
								GroupVersionResource: metav1.GroupVersionResource{Group: "", Version: "v1", Resource: "namespaces"},
								Name:                 "nginx", ResourceVersion: "17",
							},
						}},
						NamespaceScope: []controlv1alpha1.NamespaceScopeDownsyncClause{{
							NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
								GroupVersionResource: metav1.GroupVersionResource{Group: "", Version: "v1", Resource: "configmaps"},
								Namespace:            "nginx", Name: "cfg", ResourceVersion: "42",
							},
							DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"count"}},
						}},
					},
					Destinations: []controlv1alpha1.Destination{{ClusterID: "cluster1"}, {ClusterID: "cluster2"}},
				},
				Status: controlv1alpha1.BindingStatus{
					Conditions: []controlv1alpha1.BindingPolicyCondition{{
						Type: controlv1alpha1.TypeStatusCollectorsAvailable, Status: corev1.ConditionTrue,
						LastTransitionTime: transitionTime, Reason: controlv1alpha1.ReasonReconcileSuccess,
						Message: "All StatusCollector(s) are available",
					}},
				},
			},
			wire: `{"apiVersion":"control.kubestellar.io/v1alpha1","kind":"Binding","metadata":{"name":"nginx"},
				"spec":{"workload":{
					"clusterScope":[{"group":"","version":"v1","resource":"namespaces","name":"nginx","resourceVersion":"17"}],
					"namespaceScope":[{"group":"","version":"v1","resource":"configmaps","namespace":"nginx","name":"cfg",
						"resourceVersion":"42","statusCollectors":["count"]}]},
					"destinations":[{"clusterId":"cluster1"},{"clusterId":"cluster2"}]},
				"status":{"conditions":[{"type":"StatusCollectorsAvailable","status":"True","lastTransitionTime":"2026-05-13T10:00:00Z",
					"reason":"ReconcileSuccess","message":"All StatusCollector(s) are available"}],"observedGeneration":0}}`,
			keys: map[string]bool{
				"spec.workload.namespaceScope.0.group": true, "spec.workload.clusterScope.0.group": true,
				"status.observedGeneration": true, "status.errors": false,
			},
		},
		"CombinedStatus as KubeStellar writes it": {
			obj: &controlv1alpha1.CombinedStatus{
				TypeMeta: typeMeta("CombinedStatus"),
				ObjectMeta: metav1.ObjectMeta{
					Name: "1b2f.9a7c", Namespace: "nginx",
					Labels: map[string]string{
						controlv1alpha1.LabelCombinedStatusAPIGroup: "apps", controlv1alpha1.LabelCombinedStatusResource: "deployments",
						controlv1alpha1.LabelCombinedStatusNamespace: "nginx", controlv1alpha1.LabelCombinedStatusName: "web",
						controlv1alpha1.LabelCombinedStatusBindingPolicy: "nginx",
					},
				},
				Results: []controlv1alpha1.NamedStatusCombination{
					{
						Name:        "count-ready",
						ColumnNames: []string{"ready", "count"},
						Rows: []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{
							{Type: controlv1alpha1.TypeBool, Bool: ptr.To(true)},
							{Type: controlv1alpha1.TypeNumber, Number: ptr.To("1")},
						}}},
						RowErrors: []controlv1alpha1.RowEvaluationError{
							{WEC: controlv1alpha1.Destination{ClusterID: "cluster2"}, ColumnName: "", Error: "no such key: readyReplicas"},
						},
						AggregationErrors: []controlv1alpha1.ErrorInColumn{{ColumnName: "avg", Error: "no values to average"}},
					},
					{
						Name:        "full",
						ColumnNames: []string{"wec", "status", "nothing", "ratio"},
						Rows: []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{
							{Type: controlv1alpha1.TypeString, String: ptr.To("cluster1")},
							{Type: controlv1alpha1.TypeObject, Object: &apiextensionsv1.JSON{
								Raw: []byte(`{"replicas":2,"conditions":[{"type":"Available","status":"True"}]}`),
							}},
							{Type: controlv1alpha1.TypeNull},
							{Type: controlv1alpha1.TypeNumber, Number: ptr.To("2.5")},
						}}},
					},
				},
			},
			wire: `{"apiVersion":"control.kubestellar.io/v1alpha1","kind":"CombinedStatus",
				"metadata":{"name":"1b2f.9a7c","namespace":"nginx","labels":{"status.kubestellar.io/api-group":"apps",
					"status.kubestellar.io/resource":"deployments","status.kubestellar.io/namespace":"nginx",
					"status.kubestellar.io/name":"web","status.kubestellar.io/binding-policy":"nginx"}},
				"results":[
					{"name":"count-ready","columnNames":["ready","count"],
						"rows":[{"columns":[{"type":"Bool","bool":true},{"type":"Number","float":"1"}]}],
						"rowErrors":[{"wec":{"clusterId":"cluster2"},"columnName":"","error":"no such key: readyReplicas"}],
						"aggregationErrors":[{"columnName":"avg","error":"no values to average"}]},
					{"name":"full","columnNames":["wec","status","nothing","ratio"],
						"rows":[{"columns":[{"type":"String","string":"cluster1"},
							{"type":"Object","object":{"replicas":2,"conditions":[{"type":"Available","status":"True"}]}},
							{"type":"Null"},{"type":"Number","float":"2.5"}]}]}]}`,
			keys: map[string]bool{
				"results.0.rowErrors.0.columnName": true, "results.1.rows.0.columns.2.float": false,
				"results.1.rowErrors": false, "spec": false, "status": false,
			},
		},
		"CombinedStatus with an empty table": {
			obj: &controlv1alpha1.CombinedStatus{
				TypeMeta:   typeMeta("CombinedStatus"),
				ObjectMeta: metav1.ObjectMeta{Name: "a.b", Namespace: controlv1alpha1.ReportNamespace},
				Results: []controlv1alpha1.NamedStatusCombination{{
					Name: "none", ColumnNames: []string{}, Rows: []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{}}},
				}},
			},
			wire: `{"apiVersion":"control.kubestellar.io/v1alpha1","kind":"CombinedStatus",
				"metadata":{"name":"a.b","namespace":"kubestellar-report"},
				"results":[{"name":"none","columnNames":[],"rows":[{"columns":[]}]}]}`,
			keys: map[string]bool{"results.0.columnNames": true, "results.0.rows.0.columns": true},
		},
		"StatusCollector with limit 0": {
			obj: &controlv1alpha1.StatusCollector{
				TypeMeta:   typeMeta("StatusCollector"),
				ObjectMeta: metav1.ObjectMeta{Name: "count-ready"},
				Spec: controlv1alpha1.StatusCollectorSpec{
					Filter:  ptr.To(controlv1alpha1.Expression("has(returned.status.readyReplicas)")),
					GroupBy: []controlv1alpha1.NamedExpression{{Name: "ready", Def: "returned.status.readyReplicas > 0"}},
					CombinedFields: []controlv1alpha1.NamedAggregator{
						{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
						{Name: "avg", Type: controlv1alpha1.AggregatorTypeAvg, Subject: ptr.To(controlv1alpha1.Expression("returned.status.replicas"))},
					},
				},
				Status: controlv1alpha1.StatusCollectorStatus{Errors: []string{"bad"}},
			},
			wire: `{"apiVersion":"control.kubestellar.io/v1alpha1","kind":"StatusCollector","metadata":{"name":"count-ready"},
				"spec":{"filter":"has(returned.status.readyReplicas)",
					"groupBy":[{"name":"ready","def":"returned.status.readyReplicas > 0"}],
					"combinedFields":[{"name":"count","type":"COUNT"},{"name":"avg","type":"AVG","subject":"returned.status.replicas"}],
					"limit":0},
				"status":{"observedGeneration":0,"errors":["bad"]}}`,
			keys: map[string]bool{"spec.limit": true, "spec.select": false, "spec.combinedFields.0.subject": false, "status.observedGeneration": true},
		},
		"BindingPolicyStatus with observedGeneration 0": {
			obj:  &controlv1alpha1.BindingPolicyStatus{Errors: []string{"Singleton reported status return is requested but ..."}},
			wire: `{"observedGeneration":0,"errors":["Singleton reported status return is requested but ..."]}`,
			keys: map[string]bool{"observedGeneration": true, "conditions": false},
		},
		"BindingPolicyCondition with an empty message": {
			obj: &controlv1alpha1.BindingPolicyCondition{
				Type: controlv1alpha1.TypeStatusCollectorsAvailable, Status: corev1.ConditionFalse,
				LastTransitionTime: transitionTime, Reason: controlv1alpha1.ReasonReconcileError,
			},
			wire: `{"type":"StatusCollectorsAvailable","status":"False","lastTransitionTime":"2026-05-13T10:00:00Z","reason":"ReconcileError","message":""}`,
			keys: map[string]bool{"message": true},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			encoded, err := json.Marshal(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(encoded, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.wire), &want); err != nil {
				t.Fatalf("the case's JSON: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("encoding (-want +got):\n%s", diff)
			}
			decoded := reflect.New(reflect.TypeOf(tt.obj).Elem()).Interface()
			if err := json.Unmarshal([]byte(tt.wire), decoded); err != nil {
				t.Fatalf("decoding: %v", err)
			}
			if diff := cmp.Diff(tt.obj, decoded, jsonEqual); diff != "" {
				t.Errorf("decoding (-want +got):\n%s", diff)
			}
			for path, present := range tt.keys {
				if has := hasKey(t, got, path); has != present {
					t.Errorf("key %s present = %t, want %t in %s", path, has, present, encoded)
				}
			}
		})
	}
}

// hasKey reports whether the decoded JSON doc holds the dotted path; a number steps into a list.
func hasKey(t *testing.T, doc any, path string) bool {
	t.Helper()
	node := doc
	for seg := range strings.SplitSeq(path, ".") {
		switch n := node.(type) {
		case map[string]any:
			next, ok := n[seg]
			if !ok {
				return false
			}
			node = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i >= len(n) {
				t.Fatalf("path %s: %q does not index a list of %d", path, seg, len(n))
			}
			node = n[i]
		default:
			t.Fatalf("path %s: cannot step into %T at %q", path, node, seg)
		}
	}
	return true
}

func TestCombinedStatusName(t *testing.T) {
	if got := controlv1alpha1.CombinedStatusName("1b2f-obj", "9a7c-bp"); got != "1b2f-obj.9a7c-bp" {
		t.Errorf("CombinedStatusName = %q, want 1b2f-obj.9a7c-bp", got)
	}
}

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := controlv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{
		"BindingPolicy", "BindingPolicyList", "Binding", "BindingList",
		"StatusCollector", "StatusCollectorList", "CombinedStatus", "CombinedStatusList",
	} {
		gvk := schema.GroupVersionKind{Group: "control.kubestellar.io", Version: "v1alpha1", Kind: kind}
		if !s.Recognizes(gvk) {
			t.Errorf("the scheme does not recognize %s", gvk)
		}
	}
	if s.Recognizes(controlv1alpha1.GroupVersion.WithKind("CustomTransform")) {
		t.Error("CustomTransform is registered, but drover does not declare it")
	}
}
