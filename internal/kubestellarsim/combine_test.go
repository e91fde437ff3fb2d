package kubestellarsim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/scheme"
)

func expr(s string) *controlv1alpha1.Expression {
	e := controlv1alpha1.Expression(s)
	return &e
}

func num(s string) controlv1alpha1.Value { return numberValue(s) }
func str(s string) controlv1alpha1.Value { return stringValue(s) }
func null() controlv1alpha1.Value        { return controlv1alpha1.Value{Type: controlv1alpha1.TypeNull} }
func object(raw string) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeObject, Object: &apiextensionsv1.JSON{Raw: []byte(raw)}}
}

func row(values ...controlv1alpha1.Value) controlv1alpha1.StatusCombinationRow {
	if values == nil {
		values = []controlv1alpha1.Value{}
	}
	return controlv1alpha1.StatusCombinationRow{Columns: values}
}

func rowErr(cluster, column, msg string) controlv1alpha1.RowEvaluationError {
	return controlv1alpha1.RowEvaluationError{WEC: controlv1alpha1.Destination{ClusterID: cluster}, ColumnName: column, Error: msg}
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// reportsOf builds reports from cluster → status, sorted by cluster.
func reportsOf(statuses map[string]map[string]any) []clusterReport {
	var out []clusterReport
	for cluster, st := range statuses {
		norm, err := normalizeStatus(st)
		if err != nil {
			panic(err)
		}
		out = append(out, clusterReport{Cluster: cluster, Status: norm, Updated: t0})
	}
	return sortedReports(out)
}

var (
	count = controlv1alpha1.NamedAggregator{Name: "count", Type: controlv1alpha1.AggregatorTypeCount}
	sum   = controlv1alpha1.NamedAggregator{Name: "sum", Type: controlv1alpha1.AggregatorTypeSum, Subject: expr("returned.status.availableReplicas")}
	avg   = controlv1alpha1.NamedAggregator{Name: "avg", Type: controlv1alpha1.AggregatorTypeAvg, Subject: expr("returned.status.availableReplicas")}
	minA  = controlv1alpha1.NamedAggregator{Name: "min", Type: controlv1alpha1.AggregatorTypeMin, Subject: expr("returned.status.availableReplicas")}
	maxA  = controlv1alpha1.NamedAggregator{Name: "max", Type: controlv1alpha1.AggregatorTypeMax, Subject: expr("returned.status.availableReplicas")}
	all5  = []controlv1alpha1.NamedAggregator{count, sum, avg, minA, maxA}
)

var workloadObj = map[string]any{
	"apiVersion": "apps/v1", "kind": "Deployment",
	"metadata": map[string]any{"name": "nginx", "namespace": "demo", "labels": map[string]any{"app": "nginx"}},
	"spec":     map[string]any{"replicas": int64(3)},
}

func TestCombine(t *testing.T) {
	cases := map[string]struct {
		spec    controlv1alpha1.StatusCollectorSpec
		reports []clusterReport
		want    controlv1alpha1.NamedStatusCombination
	}{
		"all five aggregations": {
			spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: all5},
			reports: reportsOf(map[string]map[string]any{
				"c1": {"availableReplicas": 1}, "c2": {"availableReplicas": 2}, "c3": {"availableReplicas": 4},
			}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"count", "sum", "avg", "min", "max"},
				Rows:        []controlv1alpha1.StatusCombinationRow{row(num("3"), num("7"), num("2.3333333333333335"), num("1"), num("4"))},
			},
		},
		"zero clusters give one row of identity elements": {
			spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: all5},
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames:       []string{"count", "sum", "avg", "min", "max"},
				Rows:              []controlv1alpha1.StatusCombinationRow{row(num("0"), num("0"), num("NaN"), num("+Inf"), num("-Inf"))},
				AggregationErrors: []controlv1alpha1.ErrorInColumn{{ColumnName: "avg", Error: "no values to average"}},
			},
		},
		"groupBy gives one row per group, sorted": {
			spec: controlv1alpha1.StatusCollectorSpec{
				GroupBy:        []controlv1alpha1.NamedExpression{{Name: "ready", Def: "returned.status.ready"}},
				CombinedFields: []controlv1alpha1.NamedAggregator{count, sum},
			},
			reports: reportsOf(map[string]map[string]any{
				"c1": {"ready": true, "availableReplicas": 2}, "c2": {"ready": false, "availableReplicas": 0},
				"c3": {"ready": true, "availableReplicas": 3},
			}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"ready", "count", "sum"},
				Rows: []controlv1alpha1.StatusCombinationRow{
					row(controlv1alpha1.Value{Type: controlv1alpha1.TypeBool, Bool: ptr.To(false)}, num("1"), num("0")),
					row(controlv1alpha1.Value{Type: controlv1alpha1.TypeBool, Bool: ptr.To(true)}, num("2"), num("5")),
				},
			},
		},
		"groupBy over zero clusters gives no row": {
			spec: controlv1alpha1.StatusCollectorSpec{
				GroupBy:        []controlv1alpha1.NamedExpression{{Name: "ready", Def: "returned.status.ready"}},
				CombinedFields: []controlv1alpha1.NamedAggregator{count},
			},
			want: controlv1alpha1.NamedStatusCombination{ColumnNames: []string{"ready", "count"}},
		},
		"filter false excludes the cluster": {
			spec: controlv1alpha1.StatusCollectorSpec{
				Filter:         expr("inventory.name != 'c2'"),
				CombinedFields: []controlv1alpha1.NamedAggregator{count, sum},
			},
			reports: reportsOf(map[string]map[string]any{"c1": {"availableReplicas": 1}, "c2": {"availableReplicas": 5}}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"count", "sum"},
				Rows:        []controlv1alpha1.StatusCombinationRow{row(num("1"), num("1"))},
			},
		},
		"filter error is a row error of column empty and excludes the cluster": {
			spec: controlv1alpha1.StatusCollectorSpec{
				Filter:         expr("returned.status.phase == 'Running'"),
				CombinedFields: []controlv1alpha1.NamedAggregator{count},
			},
			reports: reportsOf(map[string]map[string]any{"c1": {"phase": "Running"}, "c2": {}}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"count"},
				Rows:        []controlv1alpha1.StatusCombinationRow{row(num("1"))},
				RowErrors:   []controlv1alpha1.RowEvaluationError{rowErr("c2", "", "no such key: phase")},
			},
		},
		"filter error in select mode": {
			spec: controlv1alpha1.StatusCollectorSpec{
				Filter: expr("returned.status.phase == 'Running'"),
				Select: []controlv1alpha1.NamedExpression{{Name: "cluster", Def: "inventory.name"}},
			},
			reports: reportsOf(map[string]map[string]any{"c1": {"phase": "Running"}, "c2": {}}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"cluster"},
				Rows:        []controlv1alpha1.StatusCombinationRow{row(str("c1"))},
				RowErrors:   []controlv1alpha1.RowEvaluationError{rowErr("c2", "", "no such key: phase")},
			},
		},
		"filter yielding a non-bool is an error": {
			spec: controlv1alpha1.StatusCollectorSpec{
				Filter: expr("inventory.name"), CombinedFields: []controlv1alpha1.NamedAggregator{count},
			},
			reports: reportsOf(map[string]map[string]any{"c1": {}}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"count"},
				RowErrors:   []controlv1alpha1.RowEvaluationError{rowErr("c1", "", "filter yielded a string, not a bool")},
			},
		},
		"null filter drops the row": {
			spec: controlv1alpha1.StatusCollectorSpec{
				Filter: expr("null"), CombinedFields: []controlv1alpha1.NamedAggregator{count},
			},
			reports: reportsOf(map[string]map[string]any{"c1": {}}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"count"}, Rows: []controlv1alpha1.StatusCombinationRow{row(num("0"))},
			},
		},
		"subject not numeric is skipped and recorded": {
			spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{count, sum, avg, maxA}},
			reports: reportsOf(map[string]map[string]any{
				"c1": {"availableReplicas": 4}, "c2": {"availableReplicas": "many"}, "c3": {"availableReplicas": true},
			}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"count", "sum", "avg", "max"},
				Rows:        []controlv1alpha1.StatusCombinationRow{row(num("3"), num("4"), num("1.3333333333333333"), num("4"))},
				AggregationErrors: []controlv1alpha1.ErrorInColumn{
					{ColumnName: "sum", Error: `for WEC c2, value "many" is not a number`},
					{ColumnName: "avg", Error: `for WEC c2, value "many" is not a number`},
					{ColumnName: "max", Error: `for WEC c2, value "many" is not a number`},
				},
			},
		},
		"numeric string subject is parsed, null subject skipped": {
			spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{sum, minA}},
			reports: reportsOf(map[string]map[string]any{
				"c1": {"availableReplicas": "2.5"}, "c2": {"availableReplicas": 3}, "c3": {"availableReplicas": nil},
			}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"sum", "min"},
				Rows:        []controlv1alpha1.StatusCombinationRow{row(num("5.5"), num("2.5"))},
			},
		},
		"failing column excludes the cluster, recorded once per column": {
			spec: controlv1alpha1.StatusCollectorSpec{
				GroupBy:        []controlv1alpha1.NamedExpression{{Name: "phase", Def: "returned.status.phase"}},
				CombinedFields: []controlv1alpha1.NamedAggregator{count, sum},
			},
			reports: reportsOf(map[string]map[string]any{
				"c1": {"phase": "Running", "availableReplicas": 1}, "c2": {}, "c3": {"availableReplicas": 1},
			}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"phase", "count", "sum"},
				Rows:        []controlv1alpha1.StatusCombinationRow{row(str("Running"), num("1"), num("1"))},
				RowErrors: []controlv1alpha1.RowEvaluationError{
					rowErr("c2", "phase", "no such key: phase"),
					rowErr("c2", "sum", "no such key: availableReplicas"),
				},
			},
		},
		"every row failing gives no row, even without groupBy": {
			spec:    controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{count, sum}},
			reports: reportsOf(map[string]map[string]any{"c1": {}}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"count", "sum"},
				RowErrors:   []controlv1alpha1.RowEvaluationError{rowErr("c1", "sum", "no such key: availableReplicas")},
			},
		},
		"unsupported aggregation type": {
			spec:    controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "x", Type: "MEDIAN"}}},
			reports: reportsOf(map[string]map[string]any{"c1": {}}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames:       []string{"x"},
				Rows:              []controlv1alpha1.StatusCombinationRow{row(null())},
				AggregationErrors: []controlv1alpha1.ErrorInColumn{{ColumnName: "x", Error: "unsupported aggregation type MEDIAN"}},
			},
		},
		"limit is not enforced": {
			spec: controlv1alpha1.StatusCollectorSpec{
				Limit:  1,
				Select: []controlv1alpha1.NamedExpression{{Name: "cluster", Def: "inventory.name"}},
			},
			reports: reportsOf(map[string]map[string]any{"c1": {}, "c2": {}}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"cluster"},
				Rows:        []controlv1alpha1.StatusCombinationRow{row(str("c1")), row(str("c2"))},
			},
		},
		"select values: Null, Object from maps and lists, numbers, bools, errors as strings": {
			spec: controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{
				{Name: "null", Def: "null"},
				{Name: "labels", Def: "obj.metadata.labels"},
				{Name: "list", Def: "returned.status.conditions"},
				{Name: "int", Def: "returned.status.replicas"},
				{Name: "float", Def: "returned.status.ratio"},
				{Name: "bool", Def: "returned.status.ready"},
				{Name: "time", Def: "propagation.lastReturnedUpdateTimestamp"},
				{Name: "noStatus", Def: "has(obj.status)"},
				{Name: "missing", Def: "returned.status.nope"},
			}},
			reports: reportsOf(map[string]map[string]any{"c1": {
				"conditions": []any{map[string]any{"type": "Available", "status": "True"}, "x"},
				"replicas":   2, "ratio": 0.5, "ready": true,
			}}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"null", "labels", "list", "int", "float", "bool", "time", "noStatus", "missing"},
				Rows: []controlv1alpha1.StatusCombinationRow{row(
					null(), object(`{"app":"nginx"}`), object(`[{"status":"True","type":"Available"},"x"]`),
					num("2"), num("0.5"), controlv1alpha1.Value{Type: controlv1alpha1.TypeBool, Bool: ptr.To(true)},
					object(`"2026-05-01T12:00:00Z"`), controlv1alpha1.Value{Type: controlv1alpha1.TypeBool, Bool: ptr.To(false)},
					str("no such key: nope"),
				)},
			},
		},
		"select rows are one per reporting cluster, sorted": {
			spec: controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{
				{Name: "cluster", Def: "inventory.name"}, {Name: "replicas", Def: "returned.status.replicas"},
			}},
			reports: reportsOf(map[string]map[string]any{"b": {"replicas": 1}, "a": {"replicas": 2}, "c": {"replicas": 3}}),
			want: controlv1alpha1.NamedStatusCombination{
				ColumnNames: []string{"cluster", "replicas"},
				Rows: []controlv1alpha1.StatusCombinationRow{
					row(str("a"), num("2")), row(str("b"), num("1")), row(str("c"), num("3")),
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, errs := compileCollector("sc", &tc.spec)
			if errs != nil {
				t.Fatalf("compiling: %v", errs)
			}
			got := combine(c, withoutStatus(map[string]any{"status": map[string]any{"x": 1}, "metadata": workloadObj["metadata"]}), tc.reports)
			tc.want.Name = "sc"
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("combine (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatNumber(t *testing.T) {
	cases := map[string]struct {
		in   float64
		want string
	}{
		"integer":           {2, "2"},
		"negative integer":  {-7, "-7"},
		"negative zero":     {math.Copysign(0, -1), "0"},
		"large integer":     {1234567, "1234567"},
		"fraction":          {2.5, "2.5"},
		"beyond int64":      {1e21, "1e+21"},
		"small":             {0.0001, "0.0001"},
		"tiny":              {1e-7, "1e-07"},
		"positive infinity": {math.Inf(1), "+Inf"},
		"negative infinity": {math.Inf(-1), "-Inf"},
		"not a number":      {math.NaN(), "NaN"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := FormatNumber(tc.in); got != tc.want {
				t.Errorf("FormatNumber(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCompileCollectorRejects(t *testing.T) {
	cases := map[string]struct {
		spec controlv1alpha1.StatusCollectorSpec
		want []string
	}{
		"groupBy without combinedFields": {
			spec: controlv1alpha1.StatusCollectorSpec{GroupBy: []controlv1alpha1.NamedExpression{{Name: "g", Def: "1"}}},
			want: []string{"groupBy must be empty when combinedFields is empty"},
		},
		"select with combinedFields": {
			spec: controlv1alpha1.StatusCollectorSpec{
				Select: []controlv1alpha1.NamedExpression{{Name: "s", Def: "1"}}, CombinedFields: []controlv1alpha1.NamedAggregator{count},
			},
			want: []string{"select must be empty when combinedFields is given"},
		},
		"COUNT with subject, SUM without": {
			spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{
				{Name: "c", Type: controlv1alpha1.AggregatorTypeCount, Subject: expr("1")},
				{Name: "s", Type: controlv1alpha1.AggregatorTypeSum},
			}},
			want: []string{"combinedFields[0]: COUNT takes no subject", "combinedFields[1]: SUM needs a subject"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, errs := compileCollector("sc", &tc.spec)
			if c != nil {
				t.Fatal("compileCollector accepted an invalid collector")
			}
			if diff := cmp.Diff(tc.want, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	if c, errs := compileCollector("sc", &controlv1alpha1.StatusCollectorSpec{Filter: expr("returned.")}); c != nil || len(errs) != 1 {
		t.Errorf("a CEL syntax error gave %v, %v; want one error", c, errs)
	}
}

// TestResults checks the results of a CombinedStatus: one entry per referenced collector that exists and is
// valid, in name order.
func TestResults(t *testing.T) {
	collector := func(name string, spec controlv1alpha1.StatusCollectorSpec) *controlv1alpha1.StatusCollector {
		return &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Spec: spec}
	}
	countOnly := controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{count}}
	s := New(Config{})
	s.client = fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		collector("zeta", countOnly), collector("alpha", countOnly), collector("mid", countOnly),
		collector("broken", controlv1alpha1.StatusCollectorSpec{Filter: expr("(")}),
	).Build()
	obj := &unstructured.Unstructured{Object: workloadObj}
	got, err := s.results(context.Background(), []string{"alpha", "broken", "mid", "nope", "zeta"}, obj,
		reportsOf(map[string]map[string]any{"c1": {}}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"alpha", "mid", "zeta"}, names); diff != "" {
		t.Errorf("result names (-want +got):\n%s", diff)
	}
}
