package sbpcel

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

var lineColumn = regexp.MustCompile(`<input>:\d+:\d+: `)

func TestCompileRejects(t *testing.T) {
	cases := map[string]struct {
		kind Kind
		expr string
		want []string // substrings of the message
		// noPosition: the rejection concerns the whole expression, so there is no line:column.
		noPosition bool
	}{
		"syntax error": {
			kind: Condition, expr: "combinedStatus.results.exists(r,\n  r.name == )",
			want: []string{"<input>:2:13: Syntax error"},
		},
		"undeclared variable": {
			kind: Filter, expr: `object.metadata.name == 'x'`,
			want: []string{"<input>:1:1: undeclared reference to 'object'"},
		},
		"combinedStatus in a filter": {
			kind: Filter, expr: `combinedStatus.results.size() > 0`,
			want: []string{"undeclared reference to 'combinedStatus'"},
		},
		"results in a filter": {
			kind: Filter, expr: `size(results) > 0`, want: []string{"undeclared reference to 'results'"},
		},
		"destinations in a filter": {
			kind: Filter, expr: `size(destinations) > 0`, want: []string{"undeclared reference to 'destinations'"},
		},
		"unknown field of combinedStatus": {
			kind: Condition, expr: `combinedStatus.reslts.size() > 0`, want: []string{"<input>:1:15: undefined field 'reslts'"},
		},
		"unknown field of obj": {
			kind: FailureCondition, expr: `obj.status.phase == 'Failed'`, want: []string{"undefined field 'status'"},
		},
		"unknown field of downsyncClause": {
			kind: Filter, expr: `downsyncClause.kind == 'Deployment'`, want: []string{"undefined field 'kind'"},
		},
		"unknown field of a column": {
			kind: Condition, expr: `combinedStatus.results.exists(r, r.rows.exists(w, w.columns.exists(c, c.number == '1')))`,
			want: []string{"undefined field 'number'"},
		},
		"float compared with an int": {
			kind: Condition, expr: `combinedStatus.results.exists(r, r.rows.exists(w, w.columns.exists(c, c.float == 1)))`,
			want: []string{"found no matching overload for '_==_' applied to '(string, int)'"},
		},
		"generation compared with a string": {
			kind: Condition, expr: `obj.metadata.generation == '3'`, want: []string{"no matching overload"},
		},
		"stage index compared with a string": {
			kind: Filter, expr: `stage.index == '0'`, want: []string{"no matching overload"},
		},
		"int output": {
			kind: Condition, expr: `1 + 1`, want: []string{"<input>:1:3: expression must evaluate to bool, but its type is int"},
		},
		"string output": {
			kind: Filter, expr: `downsyncClause.name`, want: []string{"<input>:1:15: expression must evaluate to bool, but its type is string"},
		},
		"list output": {
			kind: Condition, expr: `destinations`, want: []string{"<input>:1:1: expression must evaluate to bool, but its type is list(string)"},
		},
		"too long": {
			kind: Filter, expr: `true` + strings.Repeat(" ", MaxExpressionLength), want: []string{"longer than 10240"}, noPosition: true,
		},
		"over the compile budget": { // 101 terms of 4 nodes, joined by 100 ||
			kind: Condition, expr: strings.Repeat(`size([]) > 0 || `, 100) + `size([]) > 0`,
			want: []string{"expression has 504 syntax nodes, more than the 500 one expression may have"}, noPosition: true,
		},
		"unknown kind": {
			kind: "gate", expr: `true`, want: []string{`unknown expression kind "gate"`}, noPosition: true,
		},
	}
	c := NewCache(Options{})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prg, err := c.Compile(tc.kind, tc.expr)
			if prg != nil || err == nil {
				t.Fatalf("Compile() = %v, %v; want a compile error", prg, err)
			}
			var e *Error
			if !errors.As(err, &e) || e.Reason != ReasonCompileError || e.Kind != tc.kind {
				t.Fatalf("error = %#v; want an *Error with reason %s and kind %s", err, ReasonCompileError, tc.kind)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not contain %q", e.Message, w)
				}
			}
			if !tc.noPosition && !lineColumn.MatchString(e.Message) {
				t.Errorf("message %q has no line:column", e.Message)
			}
		})
	}
}

func TestCompileAccepts(t *testing.T) {
	cases := map[string]struct {
		kind Kind
		expr string
	}{
		"README filter":               {Filter, readmeFilter},
		"README condition":            {Condition, readmeCondition},
		"README condition as failure": {FailureCondition, readmeCondition},
		"obj alias":                   {Condition, strings.ReplaceAll(readmeCondition, "combinedStatus", "obj")},
		"dyn output":                  {Condition, `results['deployments-aggregator'][0].ready`},
		"has on a column":             {Condition, `obj.results.all(r, r.rows.all(w, w.columns.all(c, !has(c.float) || double(c.float) >= 1.0)))`},
		"optional field":              {Condition, `obj.results[0].rows[0].columns[0].?float.orValue('') == '1'`},
		"optional index":              {Condition, `results[?'x'].hasValue()`},
		"namespace field":             {Filter, `downsyncClause.namespace == '' && downsyncClause.group == ''`},
		"labels":                      {Condition, `obj.metadata.labels['status.kubestellar.io/namespace'] == ''`},
		"clause in a gate":            {Condition, `downsyncClause.resource == 'deployments' && stage.index >= 0`},
		"resultErrors":                {FailureCondition, `resultErrors.exists(k, resultErrors[k].size() > 0)`},
		"destinations coverage":       {Condition, `results['deployments-aggregator'][0].count >= double(size(destinations))`},
		"kubernetes library function": {Condition, `destinations.all(d, d.matches('^cluster-'))`},
	}
	c := NewCache(Options{})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prg, err := c.Compile(tc.kind, tc.expr)
			if err != nil {
				t.Fatalf("Compile() error = %v", err)
			}
			if prg.kind != tc.kind {
				t.Errorf("kind = %s, want %s", prg.kind, tc.kind)
			}
		})
	}
}

func TestReferencedVariables(t *testing.T) {
	cases := map[string]struct {
		expr string
		want uses
	}{
		"README":           {readmeCondition, useObject},
		"obj":              {`obj.metadata.generation > 0`, useObject},
		"results":          {`results['a'][0].x == 1.0`, useResults},
		"resultErrors":     {`size(resultErrors) == 0`, useResultErrors},
		"clause and stage": {`downsyncClause.name == stage.name`, useClause | useStage},
		"destinations":     {`size(destinations) > 0`, useDestinations},
		// A local named like a variable counts as a use: the set may be larger, never smaller.
		"shadowing local":       {`[1].all(results, results > 0)`, useResults},
		"no variable":           {`true`, 0},
		"results and obj":       {`has(results.a) || obj.results.size() > 0`, useResults | useObject},
		"destinations in macro": {`['a'].all(d, d in destinations)`, useDestinations},
	}
	c := NewCache(Options{})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prg, err := c.Compile(Condition, tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if prg.uses != tc.want {
				t.Errorf("uses = %b, want %b", prg.uses, tc.want)
			}
		})
	}
}

func TestEstimatedCost(t *testing.T) {
	c := NewCache(Options{})
	cheap, err := c.Compile(Condition, `results['deployments-aggregator'][0].count >= double(size(destinations))`)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := c.Compile(Condition, readmeCondition)
	if err != nil {
		t.Fatal(err)
	}
	cheapCost, err := cheap.EstimatedCost()
	if err != nil {
		t.Fatal(err)
	}
	readmeCost, err := readme.EstimatedCost()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("estimated cost: results lookup %d, README condition %d (limit %d)", cheapCost, readmeCost, CostLimit)
	if cheapCost == 0 || cheapCost > 100 {
		t.Errorf("lookup cost = %d, want small and positive", cheapCost)
	}
	if readmeCost < 100*cheapCost {
		t.Errorf("README condition cost %d should reflect the nested loops over results, rows and columns", readmeCost)
	}
}

// A compile error report quotes the first errors in source order, each with its position and source line,
// and counts the rest: formatting every error of a long one-line expression with its line took longer than
// compiling it.
func TestCompileReportIsBounded(t *testing.T) {
	terms := make([]string, 40)
	for i := range terms {
		terms[i] = fmt.Sprintf("undeclared%d == 1", i)
	}
	_, err := NewCache(Options{}).Compile(Condition, strings.Join(terms, " && "))
	if err == nil {
		t.Fatal("an expression of undeclared variables compiled")
	}
	msg := err.Error()
	if got := strings.Count(msg, "ERROR: <input>:1:"); got != maxReportedIssues {
		t.Errorf("the report quotes %d errors, want %d:\n%s", got, maxReportedIssues, msg)
	}
	if !strings.Contains(msg, "undeclared reference to 'undeclared0'") || strings.Contains(msg, "'undeclared5'") {
		t.Errorf("the report does not quote the first errors in source order:\n%s", msg)
	}
	if !strings.Contains(msg, "35 more errors were truncated") {
		t.Errorf("the report does not count the rest:\n%s", msg)
	}
}

// An expression at the compile budget compiles: 100 terms of 4 nodes joined by 99 || are 499 nodes.
func TestCompileAtTheNodeBudget(t *testing.T) {
	expr := strings.Repeat(`size([]) > 0 || `, 99) + `size([]) > 0`
	if _, err := NewCache(Options{}).Compile(Condition, expr); err != nil {
		t.Fatalf("Compile() = %v, want a program", err)
	}
}
