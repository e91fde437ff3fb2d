package kubestellarsim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

var deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// bindingTo is a Binding placing nothing in particular on the given destinations.
func bindingTo(clusters ...string) *controlv1alpha1.Binding {
	b := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}}
	for _, c := range clusters {
		b.Spec.Destinations = append(b.Spec.Destinations, controlv1alpha1.Destination{ClusterID: c})
	}
	return b
}

var nginxRef = ObjectRef{Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx"}

// reportsFor runs Sim.reports for the nginx Deployment of workloadObj over a Binding to clusters.
func reportsFor(t *testing.T, s *Sim, clusters ...string) []clusterReport {
	t.Helper()
	obj := &unstructured.Unstructured{Object: workloadObj}
	reports, _, err := s.reports(bindingTo(clusters...), nginxRef, obj)
	if err != nil {
		t.Fatalf("reports: %v", err)
	}
	return reports
}

// TestUnreportedDestinationsAreBlank reproduces KubeStellar's status combiner: every destination of the
// Binding is evaluated, and one that has not reported (no script entry, a nil scripted status, an automatic
// status not due yet) is a blank report: an empty returned.status and a zero lastReturnedUpdateTimestamp.
func TestUnreportedDestinationsAreBlank(t *testing.T) {
	s := New(Config{Now: func() time.Time { return t0 }})
	if err := s.SetReturnedStatuses([]ScriptEntry{
		{Cluster: "c2", Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx", Status: map[string]any{"availableReplicas": 1}},
		{Cluster: "c3", Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx"}, // nil: has not reported
	}); err != nil {
		t.Fatal(err)
	}
	want := []clusterReport{
		{Cluster: "c1", Status: map[string]any{}},
		{Cluster: "c2", Status: map[string]any{"availableReplicas": int64(1)}, Updated: t0},
		{Cluster: "c3", Status: map[string]any{}},
	}
	if diff := cmp.Diff(want, reportsFor(t, s, "c3", "c1", "c2")); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}

	held := New(Config{Now: func() time.Time { return t0 }, AutoStatus: DeploymentsAutoStatus, AutoStatusDelay: time.Minute})
	if diff := cmp.Diff([]clusterReport{{Cluster: "c1", Status: map[string]any{}}}, reportsFor(t, held, "c1")); diff != "" {
		t.Errorf("reports while the automatic status is held back (-want +got):\n%s", diff)
	}
}

// TestUnreportedDestinationsInACombinedStatus: as in KubeStellar, a counting column counts a destination
// that has not reported, while a column reading returned.status.<field> fails for it, so an aggregating
// collector has no row for it, only a rowErrors entry (at most one per column). When no destination has
// reported, the collector of the stager's example has no row at all.
func TestUnreportedDestinationsInACombinedStatus(t *testing.T) {
	countOnly := mustCompile(t, controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{count}})
	example := mustCompile(t, controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{count, sum}})
	noSuchKey := "no such key: availableReplicas"
	cases := map[string]struct {
		compiled *compiledCollector
		reports  []clusterReport
		want     controlv1alpha1.NamedStatusCombination
	}{
		"COUNT counts the blank ones": {
			compiled: countOnly,
			reports:  []clusterReport{blankReport("c1"), blankReport("c2")},
			want:     controlv1alpha1.NamedStatusCombination{Name: "sc", ColumnNames: []string{"count"}, Rows: []controlv1alpha1.StatusCombinationRow{row(num("2"))}},
		},
		"SUM over returned.status has no row before any report": {
			compiled: example,
			reports:  []clusterReport{blankReport("c1"), blankReport("c2")},
			want: controlv1alpha1.NamedStatusCombination{Name: "sc", ColumnNames: []string{"count", "sum"},
				RowErrors: []controlv1alpha1.RowEvaluationError{rowErr("c1", "sum", noSuchKey)}},
		},
		"one reported, one not": {
			compiled: example,
			reports:  []clusterReport{blankReport("c1"), {Cluster: "c2", Status: map[string]any{"availableReplicas": int64(2)}, Updated: t0}},
			want: controlv1alpha1.NamedStatusCombination{Name: "sc", ColumnNames: []string{"count", "sum"},
				Rows:      []controlv1alpha1.StatusCombinationRow{row(num("1"), num("2"))},
				RowErrors: []controlv1alpha1.RowEvaluationError{rowErr("c1", "sum", noSuchKey)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, combine(tc.compiled, workloadObj, tc.reports)); diff != "" {
				t.Errorf("combination (-want +got):\n%s", diff)
			}
		})
	}
}

func mustCompile(t *testing.T, spec controlv1alpha1.StatusCollectorSpec) *compiledCollector {
	t.Helper()
	c, errs := compileCollector("sc", &spec)
	if c == nil {
		t.Fatalf("compiling %+v: %v", spec, errs)
	}
	return c
}

// TestZeroFieldsAreAbsent reproduces what a cluster returns: the Deployment status type leaves a field out
// when it is zero, so a Deployment with no available replicas has no availableReplicas key. A pointer field
// is left out only when null; custom kinds and nested fields are returned as they are.
func TestZeroFieldsAreAbsent(t *testing.T) {
	cases := map[string]struct {
		gvk          schema.GroupVersionKind
		status, want map[string]any
	}{
		"zero counts, empty conditions and false go": {
			gvk:    deploymentGVK,
			status: map[string]any{"replicas": int64(2), "availableReplicas": int64(0), "readyReplicas": int64(0), "conditions": []any{}},
			want:   map[string]any{"replicas": int64(2)},
		},
		"a pointer to zero stays, a null pointer goes": {
			gvk:    deploymentGVK,
			status: map[string]any{"terminatingReplicas": int64(0), "collisionCount": nil},
			want:   map[string]any{"terminatingReplicas": int64(0)},
		},
		"unknown fields and nested zeros stay": {
			gvk:    deploymentGVK,
			status: map[string]any{"custom": int64(0), "conditions": []any{map[string]any{"type": "Available", "status": "False", "reason": ""}}},
			want:   map[string]any{"custom": int64(0), "conditions": []any{map[string]any{"type": "Available", "status": "False", "reason": ""}}},
		},
		"a ReplicaSet always has replicas, its other zero counts go": {
			gvk:    schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
			status: map[string]any{"replicas": int64(0), "availableReplicas": int64(0), "observedGeneration": int64(3)},
			want:   map[string]any{"replicas": int64(0), "observedGeneration": int64(3)},
		},
		"a kind the scheme does not know is returned as it is": {
			gvk:    schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
			status: map[string]any{"availableReplicas": int64(0)},
			want:   map[string]any{"availableReplicas": int64(0)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := runtime.DeepCopyJSON(tc.status)
			if diff := cmp.Diff(tc.want, returnedStatus(tc.gvk, tc.status)); diff != "" {
				t.Errorf("returned status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.status); diff != "" {
				t.Errorf("returnedStatus modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

// TestZeroAvailableFailsTheSum: in KubeStellar a cluster reporting a Deployment with no available replicas
// gives SUM(returned.status.availableReplicas) no row and a rowErrors entry, not a row reading 0; the same
// for the automatic status of a Deployment scaled to zero.
func TestZeroAvailableFailsTheSum(t *testing.T) {
	s := New(Config{Now: func() time.Time { return t0 }})
	if err := s.SetReturnedStatus("c1", nginxRef, map[string]any{"replicas": 1, "availableReplicas": 0, "unavailableReplicas": 1}); err != nil {
		t.Fatal(err)
	}
	example := mustCompile(t, controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{count, sum}})
	want := controlv1alpha1.NamedStatusCombination{Name: "sc", ColumnNames: []string{"count", "sum"},
		RowErrors: []controlv1alpha1.RowEvaluationError{rowErr("c1", "sum", "no such key: availableReplicas")}}
	if diff := cmp.Diff(want, combine(example, workloadObj, reportsFor(t, s, "c1"))); diff != "" {
		t.Errorf("combination of a zero report (-want +got):\n%s", diff)
	}

	scaledToZero := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "nginx", "namespace": "demo"},
		"spec": map[string]any{"replicas": int64(0)},
	}}
	auto := New(Config{AutoStatus: DeploymentsAutoStatus})
	reports, _, err := auto.reports(bindingTo("c1"), nginxRef, scaledToZero)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || len(reports[0].Status) != 0 {
		t.Errorf("the automatic status of a Deployment scaled to zero = %v, want an empty status", reports)
	}
}
