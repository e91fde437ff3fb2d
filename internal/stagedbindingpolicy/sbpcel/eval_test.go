package sbpcel

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// evalCase evaluates expr of kind with the given inputs; want is the result, or wantReason and
// wantMessage (a substring) the error.
type evalCase struct {
	kind         Kind
	expr         string
	cs           string // fixture; "" for none
	clause       DownsyncClause
	stage        StageRef
	destinations []string
	want         bool
	wantReason   Reason
	wantMessage  string
}

func runEvalCases(t *testing.T, cases map[string]evalCase) {
	t.Helper()
	c := NewCache(Options{})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kind := tc.kind
			if kind == "" {
				kind = Condition
			}
			prg, err := c.Compile(kind, tc.expr)
			if err != nil {
				t.Fatalf("Compile() error = %v", err)
			}
			in := Input{Clause: tc.clause, Stage: tc.stage, Destinations: tc.destinations}
			if tc.cs != "" {
				in.CombinedStatus = csInput(t, tc.cs)
			}
			got, err := prg.Eval(in)
			checkEval(t, got, err, tc)
		})
	}
}

func checkEval(t *testing.T, got bool, err error, tc evalCase) {
	t.Helper()
	if tc.wantReason == "" {
		if err != nil {
			t.Fatalf("Eval() error = %v", err)
		}
		if got != tc.want {
			t.Errorf("Eval() = %v, want %v", got, tc.want)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Eval() = %v, %v; want an *Error with reason %s", got, err, tc.wantReason)
	}
	if got {
		t.Errorf("Eval() = true with an error")
	}
	if e.Reason != tc.wantReason || !strings.Contains(e.Message, tc.wantMessage) {
		t.Errorf("error = %s %q; want %s containing %q", e.Reason, e.Message, tc.wantReason, tc.wantMessage)
	}
}

func TestREADMECondition(t *testing.T) {
	runEvalCases(t, map[string]evalCase{
		"one dev cluster: true":                      {expr: readmeCondition, cs: csDevOne, want: true},
		"two dev clusters, every Number is 2: false": {expr: readmeCondition, cs: csDevTwo, want: false},
		"zero reporting clusters: false":             {expr: readmeCondition, cs: csZero, want: false},
		"numbers other than the aggregator: false":   {expr: readmeCondition, cs: csNumbers, want: false},
		"a Number 2 does not equal '1'": {
			expr: `obj.results.exists(r, r.rows.exists(w, w.columns.exists(c, c.type == 'Number' && c.float == '2')))` +
				` && !obj.results.exists(r, r.rows.exists(w, w.columns.exists(c, c.type == 'Number' && c.float == '1')))`,
			cs: csDevTwo, want: true,
		},
		"double() of the raw float": {
			expr: `obj.results.exists(r, r.name == 'deployments-aggregator' && r.rows.exists(w, w.columns.exists(c,
				c.type == 'Number' && double(c.float) >= 1.0)))`,
			cs: csDevTwo, want: true,
		},
		"as a failure condition": {kind: FailureCondition, expr: readmeCondition, cs: csDevOne, want: true},
	})
}

func TestObjAlias(t *testing.T) {
	c := NewCache(Options{})
	exprs := []string{
		readmeCondition,
		`combinedStatus.metadata.generation == 3 && combinedStatus.metadata.labels['status.kubestellar.io/api-group'] == 'apps'`,
		`combinedStatus.results.map(r, r.name) == ['deployment-status', 'deployments-aggregator']`,
		`combinedStatus == combinedStatus`,
	}
	for _, fixture := range []string{csDevOne, csDevTwo, csZero, csNumbers} {
		for _, expr := range exprs {
			var got [2]bool
			for i, e := range []string{expr, strings.ReplaceAll(expr, "combinedStatus", "obj")} {
				prg, err := c.Compile(Condition, e)
				if err != nil {
					t.Fatal(err)
				}
				if got[i], err = prg.Eval(Input{CombinedStatus: csInput(t, fixture)}); err != nil {
					t.Fatalf("%s: %v", e, err)
				}
			}
			if got[0] != got[1] {
				t.Errorf("%q: combinedStatus gives %v, obj gives %v", expr, got[0], got[1])
			}
		}
	}
	prg, err := c.Compile(Condition, `obj == combinedStatus`)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := prg.Eval(Input{CombinedStatus: csInput(t, csDevOne)}); err != nil || !ok {
		t.Errorf("obj == combinedStatus: %v, %v", ok, err)
	}
}

func TestCombinedStatusVariable(t *testing.T) {
	runEvalCases(t, map[string]evalCase{
		"metadata": {
			expr: `obj.metadata.name.endsWith('.2c9d0e7f-11aa-4c3b-8d2e-5f6a7b8c9d01') && obj.metadata.namespace == 'nginx' &&
				obj.metadata.uid == '6b1e2f3a-4c5d-4e6f-8a9b-0c1d2e3f4a5b' && obj.metadata.generation == 3`,
			cs: csDevOne, want: true,
		},
		"cluster-scoped object": {
			expr: `obj.metadata.namespace == 'kubestellar-report' && obj.metadata.labels['status.kubestellar.io/namespace'] == '' &&
				obj.metadata.labels['status.kubestellar.io/api-group'] == '' && downsyncClause.namespace == ''`,
			cs: csNamespace, clause: namespaceClause, want: true,
		},
		"String, Bool and Null cells": {
			expr: `obj.results[0].rows[0].columns[0].string == 'cluster-dev-1' && obj.results[0].rows[0].columns[2].bool == false &&
				obj.results[0].rows[0].columns[5].type == 'Null' && !has(obj.results[0].rows[0].columns[5].string)`,
			cs: csDevOne, want: true,
		},
		"Object cell holding a JSON list": {
			expr: `obj.results[0].rows[0].columns[3].type == 'Object' &&
				obj.results[0].rows[0].columns[3].object.exists(c, c.type == 'Available' && c.status == 'True')`,
			cs: csDevOne, want: true,
		},
		"Object numbers are kept as stored": {
			expr: `type(obj.results[0].rows[0].columns[4].object.replicas) == int && obj.results[0].rows[0].columns[4].object.ratio == 0.5`,
			cs:   csDevOne, want: true,
		},
		"has() guards an absent payload": {
			expr: guardedCondition, cs: csDevOne, want: true,
		},
		"optional access of an absent field": {
			expr: `obj.results[0].rows[0].columns[0].?float.orValue('none') == 'none'`, cs: csDevOne, want: true,
		},
		"optional access of an absent result list": {
			expr: `obj.results[0].?rowErrors.orValue([]).size() == 0`, cs: csDevOne, want: true,
		},
		"rows absent when no cluster reported": {
			expr: `!has(obj.results[0].rows) && obj.results[1].rows.size() == 1`, cs: csZero, want: true,
		},
		"list membership and concatenation": {
			expr: `'count' in obj.results[1].columnNames && !('ready' in obj.results[1].columnNames) &&
				size(obj.results[1].columnNames + ['extra']) == 6 && obj.results[1].columnNames[0] == 'count'`,
			cs: csDevOne, want: true,
		},
		"results list omitted (no collector exists)": {
			expr: `!has(obj.results) && size(results) == 0 && size(resultErrors) == 0`, cs: csMetaNginx, want: true,
		},
		"README condition without a results list": {
			expr: readmeCondition, cs: csMetaNginx, wantReason: ReasonEvaluationError, wantMessage: "no such key: results",
		},
		"row and aggregation errors": {
			expr: `obj.results[1].rowErrors[0].wec.clusterId == 'cluster-dev-3' && obj.results[1].aggregationErrors[0].columnName == 'maxAvailable'`,
			cs:   csDevTwo, want: true,
		},
	})
}

const guardedCondition = `obj.results.exists(r, r.rows.exists(w, w.columns.exists(c, has(c.float) && c.float == '1')))`

func TestFilter(t *testing.T) {
	configMap := DownsyncClause{Version: "v1", Resource: "configmaps", Namespace: "nginx", Name: "nginx-config"}
	runEvalCases(t, map[string]evalCase{
		"group is the API group of a namespaced Deployment": {
			kind: Filter, expr: `downsyncClause.group == 'apps'`, clause: deploymentClause, want: true,
		},
		"group is never the version": {
			kind: Filter, expr: `downsyncClause.group == 'v1'`, clause: deploymentClause, want: false,
		},
		"README filter keeps a Deployment": {kind: Filter, expr: readmeFilter, clause: deploymentClause, want: true},
		"README filter drops a ConfigMap":  {kind: Filter, expr: readmeFilter, clause: configMap, want: false},
		"core group is empty":              {kind: Filter, expr: `downsyncClause.group == '' && downsyncClause.version == 'v1'`, clause: configMap, want: true},
		"cluster-scoped namespace is empty": {
			kind: Filter, expr: `downsyncClause.namespace == '' && downsyncClause.name == 'team-a'`, clause: namespaceClause, want: true,
		},
		"all fields": {
			kind: Filter,
			expr: `downsyncClause.resourceVersion == '1234' && !downsyncClause.createOnly && !downsyncClause.wantSingletonReportedState &&
				'deployments-aggregator' in downsyncClause.statusCollectors`,
			clause: deploymentClause, want: true,
		},
		"no status collectors": {kind: Filter, expr: `downsyncClause.statusCollectors.size() == 0`, clause: configMap, want: true},
		"stage": {
			kind: Filter, expr: `stage.name == 'prod' && stage.index == 1`, stage: StageRef{Name: "prod", Index: 1}, want: true,
		},
	})
}

func TestDestinations(t *testing.T) {
	const aggregatorCovers = `results['deployments-aggregator'][0].count >= double(size(destinations))`
	const everyClusterReady = `destinations.all(d, results['deployment-status'].exists(r, r.cluster == d && r.availableReplicas >= 1.0))`
	runEvalCases(t, map[string]evalCase{
		"count covers the destinations": {
			expr: aggregatorCovers, cs: csDevOne, destinations: []string{"cluster-dev-1"}, want: true,
		},
		"a joined cluster has not reported": {
			expr: aggregatorCovers, cs: csDevOne, destinations: []string{"cluster-dev-1", "cluster-dev-9"}, want: false,
		},
		"every destination has a ready row": {
			expr: everyClusterReady, cs: csDevTwo, destinations: []string{"cluster-dev-2", "cluster-dev-1"}, want: true,
		},
		"a destination without a row": {
			expr: everyClusterReady, cs: csDevTwo, destinations: []string{"cluster-dev-1", "cluster-dev-3"}, want: false,
		},
		"sorted": {
			expr: `destinations == ['a', 'b', 'c']`, cs: csDevOne, destinations: []string{"c", "a", "b"}, want: true,
		},
		"none": {expr: `size(destinations) == 0`, cs: csDevOne, want: true},
	})
}

func TestRuntimeErrors(t *testing.T) {
	runEvalCases(t, map[string]evalCase{
		"no such key": {
			expr: `obj.results[0].rows[0].columns[0].float == '1'`, cs: csDevOne,
			wantReason: ReasonEvaluationError, wantMessage: "no such key: float",
		},
		"no such key in results": {
			expr: `results['ghost-collector'].size() == 0`, cs: csZero,
			wantReason: ReasonEvaluationError, wantMessage: "no such key: ghost-collector",
		},
		"no such column": {
			expr: `results['deployments-aggregator'][0].ready == 1.0`, cs: csDevOne,
			wantReason: ReasonEvaluationError, wantMessage: "no such key: ready",
		},
		"index out of range": {
			expr: `obj.results[5].name == 'x'`, cs: csDevOne, wantReason: ReasonEvaluationError, wantMessage: "index",
		},
		"row index out of range": {
			expr: `results['deployment-status'][0].availableReplicas > 0.0`, cs: csZero,
			wantReason: ReasonEvaluationError, wantMessage: "index",
		},
		"dyn non-bool": {
			expr: `results['deployment-status'][0].cluster`, cs: csDevOne,
			wantReason: ReasonNonBoolResult, wantMessage: "string",
		},
		// The types of dyn(...) are known only when it runs: admitted, and a NonBoolResult on evaluation.
		"dyn literal": {expr: `dyn(1)`, cs: csDevOne, wantReason: ReasonNonBoolResult, wantMessage: "int"},
		"dyn string":  {expr: `dyn('x')`, cs: csDevOne, wantReason: ReasonNonBoolResult, wantMessage: "string"},
		"dyn null": {
			expr: `results['deployment-status'][0].observedAt`, cs: csDevOne,
			wantReason: ReasonNonBoolResult, wantMessage: "null_type",
		},
		"no CombinedStatus given": {
			expr: readmeCondition, wantReason: ReasonEvaluationError, wantMessage: "none was given",
		},
		"bad conversion": {
			expr: `double(obj.results[0].rows[0].columns[0].string) > 0.0`, cs: csDevOne,
			wantReason: ReasonEvaluationError, wantMessage: "type conversion error",
		},
	})
}

func TestCostLimit(t *testing.T) {
	c := NewCache(Options{})
	prg, err := c.Compile(Condition,
		`obj.results[0].rows.all(a, obj.results[0].rows.all(b, a.columns.size() == b.columns.size()))`)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := prg.Eval(Input{CombinedStatus: bigSelectCS(1000, bigUID(1), "1")})
	checkEval(t, ok, err, evalCase{wantReason: ReasonCostLimitExceeded, wantMessage: "1000000"})

	// The same expression over a small status stays under the limit.
	if ok, err := prg.Eval(Input{CombinedStatus: bigSelectCS(20, bigUID(2), "1")}); err != nil || !ok {
		t.Errorf("small status: %v, %v", ok, err)
	}
}

func TestUncachedStatusMayChange(t *testing.T) {
	// Without UID and resourceVersion nothing is cached: each evaluation sees its own object.
	c := NewCache(Options{})
	prg, err := c.Compile(Condition, `results['deployments-aggregator'][0].count == 1.0`)
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, fixture := range []string{csDevOne, csDevTwo} {
		in := csInput(t, fixture)
		in.UID, in.ResourceVersion = "", ""
		ok, err := prg.Eval(Input{CombinedStatus: in})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ok)
	}
	if diff := cmp.Diff([]bool{true, false}, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

// TestDestinationsKey: a caller's precomputed key of the destinations stands for the list in the remembered
// outcomes, so two lists with their own keys never share an answer, and a key gives the answer the list
// alone gives.
func TestDestinationsKey(t *testing.T) {
	prg, err := NewCache(Options{}).Compile(Condition, `results['deployments-aggregator'][0].count >= double(size(destinations))`)
	if err != nil {
		t.Fatal(err)
	}
	cs := csInput(t, csDevOne)
	one, two := []string{"cluster-dev-1"}, []string{"cluster-dev-1", "cluster-dev-9"}
	for name, tc := range map[string]struct {
		dests []string
		key   uint64
		want  bool
	}{
		"one destination, no key":   {dests: one, want: true},
		"one destination, its key":  {dests: one, key: DestinationsKey(one), want: true},
		"two destinations, its key": {dests: two, key: DestinationsKey(two), want: false},
		"one destination again":     {dests: one, key: DestinationsKey(one), want: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := prg.Eval(Input{CombinedStatus: cs, Destinations: tc.dests, DestinationsKey: tc.key})
			if err != nil || got != tc.want {
				t.Errorf("Eval = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if DestinationsKey(one) == DestinationsKey(two) {
		t.Error("two lists share a key")
	}
}
