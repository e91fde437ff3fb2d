package sbpcel

import (
	"math"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// native turns a CEL value into plain Go values for comparison.
func native(t *testing.T, v ref.Val) any {
	t.Helper()
	switch x := v.(type) {
	case traits.Mapper:
		out := map[string]any{}
		for it := x.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			out[string(k.(types.String))] = native(t, x.Get(k))
		}
		return out
	case traits.Lister:
		out := []any{}
		for it := x.Iterator(); it.HasNext() == types.True; {
			out = append(out, native(t, it.Next()))
		}
		return out
	case types.Null:
		return nil
	}
	return v.Value()
}

func TestResultsVariable(t *testing.T) {
	cases := map[string]struct {
		cs   string
		want map[string]any
	}{
		"select and aggregation": {cs: csDevOne, want: map[string]any{
			"deployment-status": []any{map[string]any{
				"cluster": "cluster-dev-1", "availableReplicas": 1.0, "paused": false, "observedAt": nil,
				"conditions": []any{
					map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
					map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
				},
				// JSON numbers inside Object values are doubles.
				"spec": map[string]any{"replicas": 1.0, "image": "nginx:1.27", "ratio": 0.5},
			}},
			"deployments-aggregator": []any{map[string]any{
				"count": 1.0, "sumAvailable": 1.0, "minAvailable": 1.0, "maxAvailable": 1.0, "avgAvailable": 1.0,
			}},
		}},
		"zero reporting clusters, missing collector": {cs: csZero, want: map[string]any{
			"deployment-status": []any{},
			"deployments-aggregator": []any{map[string]any{
				"count": 0.0, "sumAvailable": 0.0, "minAvailable": math.Inf(1), "maxAvailable": math.Inf(-1), "avgAvailable": math.NaN(),
			}},
		}},
		"number formats, extra and missing columns": {cs: csNumbers, want: map[string]any{
			"numbers": []any{map[string]any{
				"int": 2.0, "frac": 2.5, "big": 1e21, "tiny": 1e-7, "posInf": math.Inf(1), "negInf": math.Inf(-1),
				"nan": math.NaN(), "neg": -0.5,
			}},
			"ragged": []any{map[string]any{"a": 1.0, "b": 2.0}, map[string]any{"a": 4.0}},
		}},
		"cluster-scoped object": {cs: csNamespace, want: map[string]any{
			"namespace-phase": []any{map[string]any{"cluster": "cluster-dev-1", "phase": "Active"}},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, err := buildResults(decode(t, tc.cs))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, native(t, v), cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResultErrorsVariable(t *testing.T) {
	cases := map[string]struct {
		cs   string
		want map[string]any
	}{
		"no errors, a key per collector": {cs: csDevOne, want: map[string]any{
			"deployment-status": []any{}, "deployments-aggregator": []any{},
		}},
		"row and aggregation errors": {cs: csDevTwo, want: map[string]any{
			"deployment-status": []any{},
			"deployments-aggregator": []any{
				map[string]any{"cluster": "cluster-dev-3", "column": "sumAvailable", "error": "no such key: availableReplicas"},
				map[string]any{"cluster": "", "column": "maxAvailable", "error": `subject is not a number: "n/a"`},
			},
			"replicas-by-image": []any{},
		}},
		"no values to average": {cs: csZero, want: map[string]any{
			"deployment-status": []any{},
			"deployments-aggregator": []any{
				map[string]any{"cluster": "", "column": "avgAvailable", "error": "no values to average"},
			},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, native(t, buildResultErrors(decode(t, tc.cs)))); diff != "" {
				t.Errorf("resultErrors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResultsInExpressions(t *testing.T) {
	const agg = `results['deployments-aggregator'][0]`
	runEvalCases(t, map[string]evalCase{
		"named column":        {expr: agg + `.count >= 1.0`, cs: csDevOne, want: true},
		"named column, false": {expr: agg + `.count == 1.0`, cs: csDevTwo, want: false},
		"groupBy rows":        {expr: `results['replicas-by-image'].exists(r, r.image == 'nginx:1.27' && r.count == 2.0)`, cs: csDevTwo, want: true},
		"zero count and sum":  {expr: agg + `.count == 0.0 && ` + agg + `.sumAvailable == 0.0`, cs: csZero, want: true},
		"+Inf and -Inf":       {expr: agg + `.minAvailable > 1.7e308 && ` + agg + `.maxAvailable < -1.7e308`, cs: csZero, want: true},
		"Inf equals double()": {expr: agg + `.minAvailable == double('+Inf') && ` + agg + `.maxAvailable == double('-Inf')`, cs: csZero, want: true},
		"NaN is not equal":    {expr: agg + `.avgAvailable != ` + agg + `.avgAvailable`, cs: csZero, want: true},
		// CEL refuses to order NaN: an average over zero clusters fails a comparison instead of passing.
		"NaN cannot be ordered": {
			expr: agg + `.avgAvailable >= 0.0`, cs: csZero, wantReason: ReasonEvaluationError, wantMessage: "NaN values cannot be ordered",
		},
		"exponent":              {expr: `results.numbers[0].big == 1e21 && results.numbers[0].tiny < 1e-6`, cs: csNumbers, want: true},
		"fraction and negative": {expr: `results.numbers[0].frac == 2.5 && results.numbers[0].neg == -0.5 && results.numbers[0].int == 2.0`, cs: csNumbers, want: true},
		"int literal compares":  {expr: `results.numbers[0].int == 2 && results.numbers[0].int > 1`, cs: csNumbers, want: true},
		"missing column absent": {expr: `!('b' in results.ragged[1]) && results.ragged[1].size() == 1 && results.ragged[0].size() == 2`, cs: csNumbers, want: true},
		"missing column has()":  {expr: `has(results.ragged[0].b) && !has(results.ragged[1].b)`, cs: csNumbers, want: true},
		"missing column ?.":     {expr: `results.ragged[1].?b.orValue(-1.0) == -1.0`, cs: csNumbers, want: true},
		"missing collector":     {expr: `!('ghost-collector' in results) && !results[?'ghost-collector'].hasValue()`, cs: csZero, want: true},
		"collector with no rows": {
			expr: `results['deployment-status'].size() == 0`, cs: csZero, want: true,
		},
		"String, Bool, Null, Object": {
			expr: `results['deployment-status'].all(r, r.cluster.startsWith('cluster-dev-') && type(r.paused) == bool &&
				r.observedAt == null && r.conditions.exists(c, c.type == 'Available') && r.spec.replicas == 2.0)`,
			cs: csDevTwo, want: true,
		},
		"JSON numbers are doubles": {expr: `type(results['deployment-status'][0].spec.replicas) == double`, cs: csDevOne, want: true},
		"row iteration":            {expr: `results.ragged[0].all(k, k in ['a', 'b'])`, cs: csNumbers, want: true},
		"row equality":             {expr: `results.ragged[0] == {'a': 1.0, 'b': 2.0} && results.ragged[1] != {'a': 1.0}`, cs: csNumbers, want: true},
		"two-variable comprehension": {
			expr: `results.ragged[0].all(k, v, v < 3.0) && results['ragged'].exists(i, r, i == 1 && r.a == 4.0)`, cs: csNumbers, want: true,
		},
		"resultErrors entry": {
			expr: `resultErrors['deployments-aggregator'].exists(e, e.cluster == 'cluster-dev-3' && e.column == 'sumAvailable')`,
			cs:   csDevTwo, want: true,
		},
		"resultErrors literal": {
			expr: `resultErrors['deployments-aggregator'] == [{'cluster': '', 'column': 'avgAvailable', 'error': 'no values to average'}]`,
			cs:   csZero, want: true,
		},
		"resultErrors empty": {expr: `resultErrors.all(k, resultErrors[k].size() == 0)`, cs: csDevOne, want: true},
		"invalid number": {
			expr: agg + `.count >= 1.0`, cs: csBadNumber,
			wantReason: ReasonInvalidNumber, wantMessage: `collector "deployments-aggregator", row 0, column "count": invalid number "1,5"`,
		},
		"invalid number, even if another collector is read": {
			expr: `results[?'other'].hasValue()`, cs: csBadNumber, wantReason: ReasonInvalidNumber, wantMessage: `"1,5"`,
		},
		"invalid number is only a raw string in combinedStatus": {
			expr: `obj.results[0].rows[0].columns[0].float == '1,5'`, cs: csBadNumber, want: true,
		},
		"resultErrors do not parse numbers": {expr: `resultErrors['deployments-aggregator'].size() == 0`, cs: csBadNumber, want: true},
	})
}
