package e2e

// The admission fuzz's CEL for StagedBindingPolicy: expressions the webhook admits and refuses, by field,
// and the nested expressions of the largest valid object. TestAdmissionFuzzCEL checks every one of them
// against drover's compiler, so a refused expression here is certainly refused by the webhook.

import (
	"fmt"
	"strings"
)

// The expression fields of a stage.
const (
	celFilter           = "filter"
	celCondition        = "condition"
	celFailureCondition = "failureCondition"
)

var celFields = []string{celFilter, celCondition, celFailureCondition}

// validCEL are expressions that compile in each field's environment and give a bool.
var validCEL = map[string][]string{
	celFilter: {
		`downsyncClause.resource == "deployments"`,
		`downsyncClause.group == 'apps' && downsyncClause.resource == 'deployments'`,
		`stage.index >= 0 && size(downsyncClause.statusCollectors) > 0`,
	},
	celCondition: {
		`'fz-sbp' in results && results['fz-sbp'].exists(r, r['available'] >= 1.0)`,
		`size(destinations) > 0`,
		`combinedStatus.results.exists(r, r.name == 'fz-sbp')`,
		`obj.results.all(r, r.rows.all(row, row.columns.all(c, c.type != 'Number' || double(c.float) >= 1.0)))`,
	},
	celFailureCondition: {
		`'fz-sbp' in resultErrors && size(resultErrors['fz-sbp']) > 0`,
		`false`,
		`'fz-sbp' in results && results['fz-sbp'].exists(r, r['count'] > double(size(destinations)))`,
	},
}

// dynCEL are expressions typed dyn: admitted, and a non-boolean value fails only when it runs (GateError).
var dynCEL = map[string][]string{
	celFilter:           {`dyn(1)`, `dyn('x')`},
	celCondition:        {`dyn(1)`, `dyn('x')`, `results['fz-sbp'][0]['available']`},
	celFailureCondition: {`dyn(1)`, `results['fz-sbp'][0]['count']`},
}

// invalidCEL are expressions each field's environment refuses: syntax errors, undeclared variables, fields
// and functions, type errors, and results of a known non-boolean type.
var invalidCEL = func() map[string][]string {
	common := []string{
		`1 +`, `results[`, `a &&& b`, `)(`, `'unterminated`, `downsyncClause.`, `undeclared == 1`, `nosuchfn(1)`,
		`downsyncClause.nosuch == 'x'`, `stage.index == 'x'`, `1 + 1`, `'x'`, `[true]`, `{'a': true}`,
		`stage.index`, `downsyncClause.name`, `stage.name + 1`,
	}
	return map[string][]string{
		celFilter:           append([]string{`combinedStatus.results.size() > 0`, `size(destinations) > 0`, `'x' in results`}, common...),
		celCondition:        append([]string{`size(destinations)`, `combinedStatus.nosuch`, `results['x'] + 1 > 0`}, common...),
		celFailureCondition: append([]string{`destinations`, `obj.metadata`}, common...),
	}
}()

// overlongCEL returns a valid-looking expression of n characters, past the CRD's bound when n is.
func overlongCEL(n int) string {
	head := `true || '`
	return head + strings.Repeat("x", max(n-len(head)-len(`' == ''`), 0)) + `' == ''`
}

// The expressions of the largest valid StagedBindingPolicies. The webhook bounds each expression to
// MaxExpressionLength characters and sbpcel.MaxExpressionNodes (500) syntax nodes, and all of an object's
// expressions to MaxTotalExpressionLength characters together (the parser's recursion limit, 250, is never
// reached within 500 nodes). Two shapes of object fill these bounds (largestSBP): every expression field of
// every stage set, each an exists nested as deep as its share of the total length allows; or as many
// expressions of the costliest shape to check as the total length allows, each at the node bound.

// maxNestDepth is the deepest nesting of nestedCEL within the node bound, by field (TestAdmissionFuzzCEL).
func maxNestDepth(field string) int {
	if field == celFilter {
		return 49
	}
	return 55
}

// nestedCEL returns the parts of a field's expression of nested exists, depth deep, over a list variable of
// the field's environment: the opening, the innermost test up to its string literal's content (tag), and the
// closing ("'" and the parentheses).
func nestedCEL(field string, depth int, tag string) (open, leaf, closing string) {
	list, v := "destinations", "d"
	if field == celFilter {
		list, v = "downsyncClause.statusCollectors", "s"
	}
	var b strings.Builder
	for i := range depth {
		fmt.Fprintf(&b, "%s.exists(%s%d, ", list, v, i)
	}
	return b.String(), fmt.Sprintf("%s%d == '%s", v, depth-1, tag), "'" + strings.Repeat(")", depth)
}

// fitCEL returns an expression of field of exactly n characters: exists nested as deep as n (and the node
// bound) allows, its innermost string literal padded. tag makes expressions distinct, so that none is answered
// from the webhook's compile cache.
func fitCEL(field, tag string, n int) string {
	for depth := maxNestDepth(field); depth > 1; depth-- {
		open, leaf, closing := nestedCEL(field, depth, tag)
		if pad := n - len(open) - len(leaf) - len(closing); pad >= 0 {
			return open + leaf + strings.Repeat("x", pad) + closing
		}
	}
	return overlongCEL(n)
}

// costliestTerms is the number of terms of costliestCEL: 83 terms of 5 nodes or-ed together are 497 nodes.
const costliestTerms = 83

// costliestCEL returns an expression of the shape the type checker is slowest on, at the node bound:
// size([k]) > 0 or-ed together (docs/stagedbindingpolicy.md, Admission). first makes it distinct.
func costliestCEL(first int) string {
	terms := make([]string, costliestTerms)
	terms[0] = fmt.Sprintf("size([%d]) > 0", first)
	for j := 1; j < costliestTerms; j++ {
		terms[j] = fmt.Sprintf("size([%d]) > 0", j)
	}
	return strings.Join(terms, " || ")
}
