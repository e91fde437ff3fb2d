package kubestellarsim

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/google/cel-go/common/types/ref"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// Aggregation error messages, as KubeStellar writes them.
const (
	messageNoValuesToAverage = "no values to average"
	messageUnsupportedType   = "unsupported aggregation type %s"
	messageForWEC            = "for WEC %s, %v"
)

// aggErrorSet records at most one aggregation error per column, the first met, reported in column order.
type aggErrorSet struct {
	byColumn map[int]controlv1alpha1.ErrorInColumn
}

func (s *aggErrorSet) add(column int, name, msg string) {
	if s.byColumn == nil {
		s.byColumn = map[int]controlv1alpha1.ErrorInColumn{}
	}
	if _, seen := s.byColumn[column]; seen {
		return
	}
	s.byColumn[column] = controlv1alpha1.ErrorInColumn{ColumnName: name, Error: msg}
}

func (s *aggErrorSet) list() []controlv1alpha1.ErrorInColumn {
	if len(s.byColumn) == 0 {
		return nil
	}
	cols := make([]int, 0, len(s.byColumn))
	for c := range s.byColumn {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	out := make([]controlv1alpha1.ErrorInColumn, 0, len(cols))
	for _, c := range cols {
		out = append(out, s.byColumn[c])
	}
	return out
}

// columnAcc accumulates one combined field over the rows of a group.
type columnAcc struct {
	sum      float64
	min, max float64
}

// group is one distinct groupBy tuple and its accumulators.
type group struct {
	values []controlv1alpha1.Value
	rows   int
	cols   []columnAcc
}

func newGroup(values []controlv1alpha1.Value, columns int) *group {
	g := &group{values: values, cols: make([]columnAcc, columns)}
	for i := range g.cols {
		g.cols[i].min, g.cols[i].max = math.Inf(1), math.Inf(-1)
	}
	return g
}

// aggregate gives one row per distinct groupBy tuple (exactly one without groupBy, even over no clusters,
// unless every cluster's row failed). A cluster whose filter, groupBy or subject fails is left out and
// recorded in rowErrors, once per column; a subject that is neither a number nor a numeric string is skipped
// and recorded in aggregationErrors.
func aggregate(c *compiledCollector, obj map[string]any, reports []clusterReport) controlv1alpha1.NamedStatusCombination {
	res := controlv1alpha1.NamedStatusCombination{Name: c.name, ColumnNames: c.columnNames()}
	var rowErrs rowErrorSet
	var aggErrs aggErrorSet
	groups := map[string]*group{}
	okRows, failedRows := 0, 0
	for i := range reports {
		act := activation(obj, &reports[i])
		keep, err := passesFilter(c.filter, act)
		if err != nil {
			rowErrs.add(reports[i].Cluster, "", err)
			failedRows++
			continue
		}
		if !keep {
			continue
		}
		keyValues, subjects, ok := evaluateRow(c, act, reports[i].Cluster, &rowErrs)
		if !ok {
			failedRows++
			continue
		}
		okRows++
		g := groupFor(groups, keyValues, len(c.combined))
		accumulate(c, g, subjects, reports[i].Cluster, &aggErrs)
	}
	if len(c.groupBy) == 0 && len(groups) == 0 && (okRows > 0 || failedRows == 0) {
		groups[""] = newGroup(nil, len(c.combined))
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		res.Rows = append(res.Rows, finishRow(c, groups[k], &aggErrs))
	}
	res.RowErrors = rowErrs.errs
	res.AggregationErrors = aggErrs.list()
	return res
}

// evaluateRow evaluates the groupBy expressions and the subjects of one cluster's row. Every failing column
// is recorded; ok is false if any failed.
func evaluateRow(c *compiledCollector, act map[string]any, cluster string,
	rowErrs *rowErrorSet) (keyValues []controlv1alpha1.Value, subjects []ref.Val, ok bool) {
	ok = true
	keyValues = make([]controlv1alpha1.Value, 0, len(c.groupBy))
	for _, g := range c.groupBy {
		out, err := eval(g.prg, act)
		if err != nil {
			rowErrs.add(cluster, g.name, err)
			ok = false
			continue
		}
		keyValues = append(keyValues, toValue(out))
	}
	subjects = make([]ref.Val, len(c.combined))
	for i, a := range c.combined {
		if a.prg == nil {
			continue
		}
		out, err := eval(a.prg, act)
		if err != nil {
			rowErrs.add(cluster, a.name, err)
			ok = false
			continue
		}
		subjects[i] = out
	}
	return keyValues, subjects, ok
}

// groupFor returns the group of a groupBy tuple, creating it on first use.
func groupFor(groups map[string]*group, keyValues []controlv1alpha1.Value, columns int) *group {
	raw, err := json.Marshal(keyValues)
	if err != nil { // cannot happen: values are built from strings, bools and raw JSON
		raw = fmt.Appendf(nil, "%v", keyValues)
	}
	key := string(raw)
	g, ok := groups[key]
	if !ok {
		g = newGroup(keyValues, columns)
		groups[key] = g
	}
	return g
}

// accumulate adds one error-free row to a group.
func accumulate(c *compiledCollector, g *group, subjects []ref.Val, cluster string, aggErrs *aggErrorSet) {
	g.rows++
	for i, a := range c.combined {
		if !numericAggregator(a.typ) || subjects[i] == nil {
			continue
		}
		f, isNull, err := numeric(subjects[i])
		if isNull {
			continue
		}
		if err != nil {
			aggErrs.add(len(c.groupBy)+i, a.name, fmt.Sprintf(messageForWEC, cluster, err))
			continue
		}
		acc := &g.cols[i]
		acc.sum += f
		acc.min = math.Min(acc.min, f)
		acc.max = math.Max(acc.max, f)
	}
}

func numericAggregator(t controlv1alpha1.AggregatorType) bool {
	switch t {
	case controlv1alpha1.AggregatorTypeSum, controlv1alpha1.AggregatorTypeAvg,
		controlv1alpha1.AggregatorTypeMin, controlv1alpha1.AggregatorTypeMax:
		return true
	}
	return false
}

// finishRow turns a group into a row: its groupBy values, then each aggregate.
func finishRow(c *compiledCollector, g *group, aggErrs *aggErrorSet) controlv1alpha1.StatusCombinationRow {
	row := controlv1alpha1.StatusCombinationRow{Columns: slices.Clone(g.values)}
	if row.Columns == nil {
		row.Columns = make([]controlv1alpha1.Value, 0, len(c.combined))
	}
	for i, a := range c.combined {
		column := len(c.groupBy) + i
		acc := g.cols[i]
		switch a.typ {
		case controlv1alpha1.AggregatorTypeCount:
			row.Columns = append(row.Columns, numberValue(FormatNumber(float64(g.rows))))
		case controlv1alpha1.AggregatorTypeSum:
			row.Columns = append(row.Columns, numberValue(FormatNumber(acc.sum)))
		case controlv1alpha1.AggregatorTypeAvg:
			avg := math.NaN()
			if g.rows > 0 {
				avg = acc.sum / float64(g.rows)
			} else {
				aggErrs.add(column, a.name, messageNoValuesToAverage)
			}
			row.Columns = append(row.Columns, numberValue(FormatNumber(avg)))
		case controlv1alpha1.AggregatorTypeMin:
			row.Columns = append(row.Columns, numberValue(FormatNumber(acc.min)))
		case controlv1alpha1.AggregatorTypeMax:
			row.Columns = append(row.Columns, numberValue(FormatNumber(acc.max)))
		default:
			aggErrs.add(column, a.name, fmt.Sprintf(messageUnsupportedType, a.typ))
			row.Columns = append(row.Columns, controlv1alpha1.Value{Type: controlv1alpha1.TypeNull})
		}
	}
	return row
}
