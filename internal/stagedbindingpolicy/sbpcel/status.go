package sbpcel

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/utils/lru"
)

// statusValues are the CEL values derived from one CombinedStatus at one resourceVersion. Each is built
// on first use by a program that references it, at most once.
type statusValues struct {
	rv     string
	raw    map[string]any
	object ref.Val // combinedStatus and obj: a lazy view of raw

	resultsOnce sync.Once
	results     ref.Val
	resultsErr  error // an invalid number

	errorsOnce   sync.Once
	resultErrors ref.Val

	// outcomes memoizes evaluations against this content (see Program.Eval).
	outcomesMu sync.Mutex
	outcomes   map[outcomeKey]outcome
}

// maxOutcomes bounds the memoized evaluations of one CombinedStatus version (programs times distinct
// other inputs); past it the memo starts over.
const maxOutcomes = 64

// outcomeKey identifies an evaluation against one CombinedStatus version: the program and a hash of the
// other inputs it references (clause, stage, destinations).
type outcomeKey struct {
	prg    *Program
	inputs uint64
}

// outcome is the result of an evaluation.
type outcome struct {
	ok  bool
	err *Error
}

func (s *statusValues) outcome(key outcomeKey) (outcome, bool) {
	s.outcomesMu.Lock()
	defer s.outcomesMu.Unlock()
	o, ok := s.outcomes[key]
	return o, ok
}

func (s *statusValues) remember(key outcomeKey, o outcome) {
	s.outcomesMu.Lock()
	defer s.outcomesMu.Unlock()
	if s.outcomes == nil || len(s.outcomes) >= maxOutcomes {
		s.outcomes = make(map[outcomeKey]outcome)
	}
	s.outcomes[key] = o
}

func newStatusValues(cs *CSInput) *statusValues {
	return &statusValues{
		rv:     cs.ResourceVersion,
		raw:    cs.Object,
		object: types.NewStringInterfaceMap(storedAdapter, cs.Object),
	}
}

func (s *statusValues) resultsValue() (ref.Val, error) {
	s.resultsOnce.Do(func() { s.results, s.resultsErr = buildResults(s.raw) })
	return s.results, s.resultsErr
}

func (s *statusValues) resultErrorsValue() ref.Val {
	s.errorsOnce.Do(func() { s.resultErrors = buildResultErrors(s.raw) })
	return s.resultErrors
}

// statusCache holds the derived values of recently seen CombinedStatuses, keyed by UID; an entry is
// valid for one resourceVersion and replaced when a newer one is seen. CombinedStatuses have no status
// subresource, so every change of their results changes the resourceVersion.
type statusCache struct {
	entries *lru.Cache
}

func newStatusCache(size int) *statusCache {
	return &statusCache{entries: lru.New(size)}
}

// cacheable reports whether values derived from cs may be cached: its UID and resourceVersion are known.
func cacheable(cs *CSInput) bool {
	return cs.UID != "" && cs.ResourceVersion != ""
}

// values returns the derived values of cs, from the cache when cs is cacheable.
func (c *statusCache) values(cs *CSInput) *statusValues {
	if !cacheable(cs) {
		return newStatusValues(cs)
	}
	if v, ok := c.entries.Get(cs.UID); ok {
		if sv := v.(*statusValues); sv.rv == cs.ResourceVersion {
			return sv
		}
	}
	sv := newStatusValues(cs)
	c.entries.Add(cs.UID, sv)
	return sv
}

// resultList returns the results entries of a CombinedStatus that are objects, with their names.
// A later entry with an already seen name is ignored (KubeStellar writes one per collector).
func resultList(obj map[string]any, visit func(name string, result map[string]any) error) error {
	list, _ := obj["results"].([]any)
	seen := make(map[string]bool, len(list))
	for _, item := range list {
		result, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _ := result["name"].(string)
		if seen[name] {
			continue
		}
		seen[name] = true
		if err := visit(name, result); err != nil {
			return err
		}
	}
	return nil
}

// buildResults builds the results variable: collector name to its rows, each row a map from column name
// to the column's value.
func buildResults(obj map[string]any) (ref.Val, error) {
	out := make(map[ref.Val]ref.Val)
	err := resultList(obj, func(name string, result map[string]any) error {
		rows, err := buildRows(name, result)
		out[types.String(name)] = rows
		return err
	})
	if err != nil {
		return nil, err
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out), nil
}

// newColumnIndex indexes the distinct column names of a result; src maps each name to its position in
// the raw rows.
func newColumnIndex(raw any) (*columnIndex, []int) {
	names, _ := raw.([]any)
	cols := &columnIndex{names: make([]string, 0, len(names)), pos: make(map[string]int, len(names))}
	src := make([]int, 0, len(names))
	for j, n := range names {
		name, ok := n.(string)
		if _, dup := cols.pos[name]; !ok || dup {
			continue
		}
		cols.pos[name] = len(cols.names)
		cols.names = append(cols.names, name)
		src = append(src, j)
	}
	return cols, src
}

// buildRows converts the rows of one result. All rows share one column index and one backing array.
func buildRows(name string, result map[string]any) (ref.Val, error) {
	cols, src := newColumnIndex(result["columnNames"])
	rawRows, _ := result["rows"].([]any)
	n := len(cols.names)
	vals := make([]ref.Val, len(rawRows)*n)
	rows := make([]rowMap, len(rawRows))
	list := make([]ref.Val, len(rawRows))
	for i, raw := range rawRows {
		row := vals[i*n : (i+1)*n : (i+1)*n]
		rawRow, _ := raw.(map[string]any)
		columns, _ := rawRow["columns"].([]any)
		for k, j := range src {
			if j >= len(columns) {
				break // a short row: the missing columns are absent
			}
			v, err := cellValue(columns[j])
			if err != nil {
				return nil, fmt.Errorf("collector %q, row %d, column %q: %w", name, i, cols.names[k], err)
			}
			row[k] = v
		}
		rows[i] = rowMap{cols: cols, vals: row}
		list[i] = &rows[i]
	}
	return types.NewRefValList(types.DefaultTypeAdapter, list), nil
}

// cellValue converts one KubeStellar column value. A Number must hold a float string (Go ParseFloat
// syntax, including "+Inf", "-Inf", "NaN" and exponents); a value of unknown type or without its
// payload is absent (nil).
func cellValue(raw any) (ref.Val, error) {
	c, _ := raw.(map[string]any)
	t, _ := c["type"].(string)
	switch t {
	case "Number":
		s, ok := c["float"].(string)
		if !ok {
			return nil, fmt.Errorf("invalid number: float is %T, not a string", c["float"])
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid number %q", s)
		}
		return types.Double(f), nil
	case "String":
		if s, ok := c["string"].(string); ok {
			return types.String(s), nil
		}
	case "Bool":
		if b, ok := c["bool"].(bool); ok {
			return types.Bool(b), nil
		}
	case "Null":
		return types.NullValue, nil
	case "Object", "Array":
		key := "object"
		if t == "Array" {
			key = "array"
		}
		if v, ok := c[key]; ok {
			return doubleAdapter.NativeToValue(v), nil
		}
	}
	return nil, nil
}

// buildResultErrors builds the resultErrors variable: for every collector present, its row errors
// ({cluster, column, error}) followed by its aggregation errors (cluster "").
func buildResultErrors(obj map[string]any) ref.Val {
	out := make(map[ref.Val]ref.Val)
	_ = resultList(obj, func(name string, result map[string]any) error {
		rowErrors, _ := result["rowErrors"].([]any)
		aggErrors, _ := result["aggregationErrors"].([]any)
		entries := make([]ref.Val, 0, len(rowErrors)+len(aggErrors))
		for _, e := range rowErrors {
			m, _ := e.(map[string]any)
			wec, _ := m["wec"].(map[string]any)
			entries = append(entries, errorEntry(asString(wec["clusterId"]), asString(m["columnName"]), asString(m["error"])))
		}
		for _, e := range aggErrors {
			m, _ := e.(map[string]any)
			entries = append(entries, errorEntry("", asString(m["columnName"]), asString(m["error"])))
		}
		out[types.String(name)] = types.NewRefValList(types.DefaultTypeAdapter, entries)
		return nil
	})
	return types.NewRefValMap(types.DefaultTypeAdapter, out)
}

func errorEntry(cluster, column, message string) ref.Val {
	return types.NewStringStringMap(types.DefaultTypeAdapter,
		map[string]string{"cluster": cluster, "column": column, "error": message})
}

// asString returns v if it is a string, else "".
func asString(v any) string {
	s, _ := v.(string)
	return s
}
