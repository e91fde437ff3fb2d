package sbpcel

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// Variable names.
const (
	varDownsyncClause = "downsyncClause"
	varStage          = "stage"
	varCombinedStatus = "combinedStatus"
	varObj            = "obj"
	varResults        = "results"
	varResultErrors   = "resultErrors"
	varDestinations   = "destinations"
)

// Size assumptions for the cost estimate (EstimatedCost). They bound nothing at run time: the runtime
// cost limit does. They describe a large but ordinary rollout: up to maxClusters clusters reporting, each
// contributing one row to a select collector.
const (
	maxClusters   = 1000 // rows of a select collector, destinations
	maxCollectors = 4    // results of one CombinedStatus (objects name one or two collectors)
	maxColumns    = 16   // columns of one row
	maxErrors     = 1000 // rowErrors / aggregationErrors of one result
	maxLabels     = 64   // labels or annotations
	maxNameLen    = 253  // object names, group, resource, collector names, cluster ids
	maxStringLen  = 4096 // cell strings, error messages, label and annotation values
)

// str is a string type whose size estimate is maxLen characters.
func str(maxLen int64) *apiservercel.DeclType {
	t := apiservercel.NewSimpleTypeWithMinSize("string", cel.StringType, types.String(""), apiservercel.MinStringSize)
	t.MaxElements = maxLen
	return t
}

func field(name string, t *apiservercel.DeclType) *apiservercel.DeclField {
	return apiservercel.NewDeclField(name, t, false, nil, nil)
}

func object(name string, fields ...*apiservercel.DeclField) *apiservercel.DeclType {
	m := make(map[string]*apiservercel.DeclField, len(fields))
	for _, f := range fields {
		m[f.Name] = f
	}
	return apiservercel.NewObjectType(name, m)
}

// downsyncClauseType is the Binding's workload entry of the object under test. group is the API group
// (never the version); namespace is "" for a cluster-scoped object.
func downsyncClauseType() *apiservercel.DeclType {
	name := str(maxNameLen)
	return object("sbp.DownsyncClause",
		field("group", name),
		field("version", name),
		field("resource", name),
		field("namespace", name),
		field("name", name),
		field("resourceVersion", name),
		field("createOnly", apiservercel.BoolType),
		field("wantSingletonReportedState", apiservercel.BoolType),
		field("statusCollectors", apiservercel.NewListType(name, maxCollectors)),
	)
}

func stageType() *apiservercel.DeclType {
	return object("sbp.Stage",
		field("name", str(63)),
		field("index", apiservercel.IntType),
	)
}

// combinedStatusType declares the part of a KubeStellar CombinedStatus that expressions may read, in its
// wire layout. A Number cell's value is the string in "float".
func combinedStatusType() *apiservercel.DeclType {
	name, text := str(maxNameLen), str(maxStringLen)
	stringMap := apiservercel.NewMapType(str(maxNameLen), text, maxLabels)
	meta := object("kubestellar.CombinedStatus.metadata",
		field("name", name),
		field("namespace", name),
		field("uid", str(36)),
		field("generation", apiservercel.IntType),
		field("labels", stringMap),
		field("annotations", stringMap),
	)
	value := object("kubestellar.Value",
		field("type", str(6)),
		field("string", text),
		field("float", str(32)),
		field("bool", apiservercel.BoolType),
		field("object", apiservercel.DynType),
		field("array", apiservercel.DynType),
	)
	row := object("kubestellar.StatusCombinationRow",
		field("columns", apiservercel.NewListType(value, maxColumns)),
	)
	rowError := object("kubestellar.RowEvaluationError",
		field("wec", object("kubestellar.Destination", field("clusterId", name))),
		field("columnName", name),
		field("error", text),
	)
	columnError := object("kubestellar.ErrorInColumn",
		field("columnName", name),
		field("error", text),
	)
	result := object("kubestellar.NamedStatusCombination",
		field("name", name),
		field("columnNames", apiservercel.NewListType(name, maxColumns)),
		field("rows", apiservercel.NewListType(row, maxClusters)),
		field("rowErrors", apiservercel.NewListType(rowError, maxErrors)),
		field("aggregationErrors", apiservercel.NewListType(columnError, maxErrors)),
	)
	return object("kubestellar.CombinedStatus",
		field("metadata", meta),
		field("results", apiservercel.NewListType(result, maxCollectors)),
	)
}

// resultsType is map(string, list(map(string, dyn))): collector name to its rows keyed by column name.
func resultsType() *apiservercel.DeclType {
	row := apiservercel.NewMapType(str(maxNameLen), apiservercel.DynType, maxColumns)
	return apiservercel.NewMapType(str(maxNameLen), apiservercel.NewListType(row, maxClusters), maxCollectors)
}

// resultErrorsType is map(string, list(map(string, string))): collector name to {cluster, column, error}.
func resultErrorsType() *apiservercel.DeclType {
	entry := apiservercel.NewMapType(str(8), str(maxStringLen), 3)
	return apiservercel.NewMapType(str(maxNameLen), apiservercel.NewListType(entry, 2*maxErrors), maxCollectors)
}

func destinationsType() *apiservercel.DeclType {
	return apiservercel.NewListType(str(maxNameLen), maxClusters)
}

// variables returns the declared type of each variable of the environment of kind.
func variables(kind Kind) map[string]*apiservercel.DeclType {
	vars := map[string]*apiservercel.DeclType{
		varDownsyncClause: downsyncClauseType(),
		varStage:          stageType(),
	}
	if kind == Filter {
		return vars
	}
	cs := combinedStatusType()
	vars[varCombinedStatus] = cs
	vars[varObj] = cs
	vars[varResults] = resultsType()
	vars[varResultErrors] = resultErrorsType()
	vars[varDestinations] = destinationsType()
	return vars
}

// sizeEstimator gives the checker's cost estimate the sizes of the variables' lists, maps and strings,
// walking the declared types along the path of an expression node (the way CRD validation rules do).
type sizeEstimator struct {
	roots map[string]*apiservercel.DeclType
}

// EstimateSize implements checker.CostEstimator.
func (e *sizeEstimator) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	path := element.Path()
	if len(path) == 0 {
		return nil
	}
	t, ok := e.roots[path[0]]
	if !ok {
		return nil
	}
	for _, step := range path[1:] {
		switch step {
		case "@items", "@values":
			t = t.ElemType
		case "@keys":
			t = t.KeyType
		default:
			f, found := t.Fields[step]
			if !found {
				return nil
			}
			t = f.Type
		}
		if t == nil {
			return nil
		}
	}
	if t.MaxElements <= 0 {
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(t.MaxElements)}
}

// EstimateCallCost implements checker.CostEstimator; the Kubernetes library estimator prices calls.
func (e *sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
