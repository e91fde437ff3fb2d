package kubestellarsim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"google.golang.org/protobuf/types/known/structpb"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// clusterReport is the status one destination returned for the object, with the time it last changed.
type clusterReport struct {
	Cluster string
	Status  map[string]any
	Updated time.Time
}

// activation builds the variables of one evaluation: obj (the object without its status), returned.status,
// inventory.name and propagation.lastReturnedUpdateTimestamp.
func activation(obj map[string]any, r *clusterReport) map[string]any {
	return map[string]any{
		varObj:         obj,
		varReturned:    map[string]any{"status": r.Status},
		varInventory:   map[string]any{"name": r.Cluster},
		varPropagation: map[string]any{"lastReturnedUpdateTimestamp": r.Updated},
	}
}

// withoutStatus returns a shallow copy of an object's content without its status.
func withoutStatus(content map[string]any) map[string]any {
	out := make(map[string]any, len(content))
	for k, v := range content {
		if k != "status" {
			out[k] = v
		}
	}
	return out
}

// rowErrorSet records at most one row error per column, the first met.
type rowErrorSet struct {
	errs []controlv1alpha1.RowEvaluationError
	seen map[string]bool
}

func (s *rowErrorSet) add(cluster, column string, err error) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[column] {
		return
	}
	s.seen[column] = true
	s.errs = append(s.errs, controlv1alpha1.RowEvaluationError{
		WEC: controlv1alpha1.Destination{ClusterID: cluster}, ColumnName: column, Error: err.Error(),
	})
}

// combine evaluates one collector for one object over the reports of its destinations (sorted by cluster).
// obj is the object's content without status.
func combine(c *compiledCollector, obj map[string]any, reports []clusterReport) controlv1alpha1.NamedStatusCombination {
	if c.aggregating() {
		return aggregate(c, obj, reports)
	}
	return selectRows(c, obj, reports)
}

// passesFilter evaluates the filter: true keeps the row, false or null drops it, anything else is an error.
func passesFilter(prg cel.Program, act map[string]any) (bool, error) {
	if prg == nil {
		return true, nil
	}
	out, err := eval(prg, act)
	if err != nil {
		return false, err
	}
	switch v := out.(type) {
	case celtypes.Bool:
		return bool(v), nil
	case celtypes.Null:
		return false, nil
	default:
		return false, fmt.Errorf("filter yielded a %s, not a bool", out.Type().TypeName())
	}
}

// eval runs one expression; its error is CEL's, unwrapped, as it ends up in a CombinedStatus.
func eval(prg cel.Program, act map[string]any) (ref.Val, error) {
	out, _, err := prg.Eval(act)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// selectRows gives one row per reporting cluster that passes the filter. A column that fails to evaluate
// holds the error text as a String; a filter that fails drops the row and is recorded under column "".
func selectRows(c *compiledCollector, obj map[string]any, reports []clusterReport) controlv1alpha1.NamedStatusCombination {
	res := controlv1alpha1.NamedStatusCombination{Name: c.name, ColumnNames: c.columnNames()}
	var rowErrs rowErrorSet
	for i := range reports {
		act := activation(obj, &reports[i])
		keep, err := passesFilter(c.filter, act)
		if err != nil {
			rowErrs.add(reports[i].Cluster, "", err)
			continue
		}
		if !keep {
			continue
		}
		row := controlv1alpha1.StatusCombinationRow{Columns: make([]controlv1alpha1.Value, 0, len(c.selects))}
		for _, s := range c.selects {
			out, err := eval(s.prg, act)
			if err != nil {
				row.Columns = append(row.Columns, stringValue(err.Error()))
				continue
			}
			row.Columns = append(row.Columns, toValue(out))
		}
		res.Rows = append(res.Rows, row)
	}
	res.RowErrors = rowErrs.errs
	return res
}

// toValue converts a CEL result to a cell: null as Null, bool as Bool, numbers as Number, strings as String,
// anything else (maps, lists, timestamps, durations, bytes) as Object holding its JSON.
func toValue(v ref.Val) controlv1alpha1.Value {
	switch x := v.(type) {
	case nil, celtypes.Null:
		return controlv1alpha1.Value{Type: controlv1alpha1.TypeNull}
	case celtypes.Bool:
		return controlv1alpha1.Value{Type: controlv1alpha1.TypeBool, Bool: ptr.To(bool(x))}
	case celtypes.Int:
		return numberValue(strconv.FormatInt(int64(x), 10))
	case celtypes.Uint:
		return numberValue(strconv.FormatUint(uint64(x), 10))
	case celtypes.Double:
		return numberValue(FormatNumber(float64(x)))
	case celtypes.String:
		return stringValue(string(x))
	}
	raw, err := toJSON(v)
	if err != nil {
		return stringValue(err.Error())
	}
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeObject, Object: &apiextensionsv1.JSON{Raw: raw}}
}

var jsonValueType = reflect.TypeFor[*structpb.Value]()

// toJSON renders a CEL value as JSON, map keys sorted.
func toJSON(v ref.Val) ([]byte, error) {
	native, err := v.ConvertToNative(jsonValueType)
	if err != nil {
		return nil, fmt.Errorf("converting a %s to JSON: %w", v.Type().TypeName(), err)
	}
	pv, ok := native.(*structpb.Value)
	if !ok {
		return nil, fmt.Errorf("converting a %s to JSON: got %T", v.Type().TypeName(), native)
	}
	raw, err := json.Marshal(pv.AsInterface())
	if err != nil {
		return nil, fmt.Errorf("marshalling a %s: %w", v.Type().TypeName(), err)
	}
	return raw, nil
}

func stringValue(s string) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeString, String: ptr.To(s)}
}

func numberValue(s string) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeNumber, Number: ptr.To(s)}
}

// FormatNumber writes a number the way KubeStellar writes it into a CombinedStatus: a whole number that fits
// an int64 in base 10 ("2"), anything else in Go's shortest %g form ("2.5", "1e+21", "+Inf", "-Inf", "NaN").
func FormatNumber(f float64) string {
	if !math.IsInf(f, 0) && !math.IsNaN(f) && f == math.Trunc(f) && math.Abs(f) < math.MaxInt64 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// numeric returns a CEL value as a float64: numbers as they are, strings parsed. isNull marks a null, which
// aggregations skip silently.
func numeric(v ref.Val) (f float64, isNull bool, err error) {
	switch x := v.(type) {
	case celtypes.Int:
		return float64(x), false, nil
	case celtypes.Uint:
		return float64(x), false, nil
	case celtypes.Double:
		return float64(x), false, nil
	case celtypes.Null:
		return 0, true, nil
	case celtypes.String:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, false, fmt.Errorf("value %q is not a number", string(x))
		}
		return f, false, nil
	}
	return 0, false, fmt.Errorf("value of type %s is not a number", v.Type().TypeName())
}

// sortedReports returns the reports sorted by cluster name.
func sortedReports(reports []clusterReport) []clusterReport {
	out := slices.Clone(reports)
	slices.SortFunc(out, func(a, b clusterReport) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return out
}
