package kubestellarsim

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/types"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// The variables of a StatusCollector expression, all dynamically typed as in KubeStellar.
const (
	varObj         = "obj"
	varReturned    = "returned"
	varInventory   = "inventory"
	varPropagation = "propagation"
)

// evalCostLimit bounds the runtime cost of one expression evaluation, so that a runaway expression fails
// with an error instead of stalling the simulator.
const evalCostLimit = 1_000_000

var (
	celEnvOnce sync.Once
	celEnv     *cel.Env
	celEnvErr  error
)

// collectorEnv returns the CEL environment of StatusCollector expressions.
func collectorEnv() (*cel.Env, error) {
	celEnvOnce.Do(func() {
		celEnv, celEnvErr = cel.NewEnv(
			cel.Variable(varObj, cel.DynType),
			cel.Variable(varReturned, cel.DynType),
			cel.Variable(varInventory, cel.DynType),
			cel.Variable(varPropagation, cel.DynType),
		)
	})
	return celEnv, celEnvErr
}

// namedProgram is one compiled column expression.
type namedProgram struct {
	name string
	prg  cel.Program
}

// aggregator is one compiled combined field; prg is nil for COUNT and for unknown types without subject.
type aggregator struct {
	name string
	typ  controlv1alpha1.AggregatorType
	prg  cel.Program
}

// compiledCollector is a valid StatusCollector with its expressions compiled.
type compiledCollector struct {
	name     string
	filter   cel.Program
	groupBy  []namedProgram
	combined []aggregator
	selects  []namedProgram
}

// aggregating reports whether the collector aggregates (combinedFields given) rather than selects.
func (c *compiledCollector) aggregating() bool { return len(c.combined) > 0 }

// columnNames are the select names, or the groupBy names followed by the combinedFields names. Never nil.
func (c *compiledCollector) columnNames() []string {
	names := make([]string, 0, len(c.groupBy)+len(c.combined)+len(c.selects))
	if c.aggregating() {
		for _, g := range c.groupBy {
			names = append(names, g.name)
		}
		for _, a := range c.combined {
			names = append(names, a.name)
		}
		return names
	}
	for _, s := range c.selects {
		names = append(names, s.name)
	}
	return names
}

// compileCollector checks the structural rules KubeStellar's controller applies to a StatusCollector and
// compiles its expressions. A collector with errors is unusable and counts as missing.
func compileCollector(name string, spec *controlv1alpha1.StatusCollectorSpec) (*compiledCollector, []string) {
	errs := structuralErrors(spec)
	env, err := collectorEnv()
	if err != nil {
		return nil, append(errs, fmt.Sprintf("building the CEL environment: %v", err))
	}
	c := &compiledCollector{name: name}
	compile := func(where string, expr controlv1alpha1.Expression) cel.Program {
		prg, cerr := compileExpression(env, string(expr))
		if cerr != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", where, cerr))
		}
		return prg
	}
	if spec.Filter != nil {
		c.filter = compile("filter", *spec.Filter)
	}
	for i, g := range spec.GroupBy {
		c.groupBy = append(c.groupBy, namedProgram{name: g.Name, prg: compile(fmt.Sprintf("groupBy[%d]", i), g.Def)})
	}
	for i, s := range spec.Select {
		c.selects = append(c.selects, namedProgram{name: s.Name, prg: compile(fmt.Sprintf("select[%d]", i), s.Def)})
	}
	for i, a := range spec.CombinedFields {
		agg := aggregator{name: a.Name, typ: a.Type}
		if a.Subject != nil {
			agg.prg = compile(fmt.Sprintf("combinedFields[%d].subject", i), *a.Subject)
		}
		c.combined = append(c.combined, agg)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// structuralErrors are the rules on which parts a collector may combine.
func structuralErrors(spec *controlv1alpha1.StatusCollectorSpec) []string {
	var errs []string
	if len(spec.GroupBy) > 0 && len(spec.CombinedFields) == 0 {
		errs = append(errs, "groupBy must be empty when combinedFields is empty")
	}
	if len(spec.CombinedFields) > 0 && len(spec.Select) > 0 {
		errs = append(errs, "select must be empty when combinedFields is given")
	}
	for i, a := range spec.CombinedFields {
		switch a.Type {
		case controlv1alpha1.AggregatorTypeCount:
			if a.Subject != nil {
				errs = append(errs, fmt.Sprintf("combinedFields[%d]: COUNT takes no subject", i))
			}
		case controlv1alpha1.AggregatorTypeSum, controlv1alpha1.AggregatorTypeAvg,
			controlv1alpha1.AggregatorTypeMin, controlv1alpha1.AggregatorTypeMax:
			if a.Subject == nil {
				errs = append(errs, fmt.Sprintf("combinedFields[%d]: %s needs a subject", i, a.Type))
			}
		}
	}
	return errs
}

func compileExpression(env *cel.Env, expr string) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compiling %q: %w", expr, iss.Err())
	}
	prg, err := env.Program(ast, cel.CostLimit(evalCostLimit))
	if err != nil {
		return nil, fmt.Errorf("planning %q: %w", expr, err)
	}
	return prg, nil
}

// collectorCache keeps the compiled form of each StatusCollector, recompiled when its generation changes.
type collectorCache struct {
	mu      sync.Mutex
	entries map[string]collectorCacheEntry
}

type collectorCacheEntry struct {
	uid        types.UID
	generation int64
	compiled   *compiledCollector
	errs       []string
}

func newCollectorCache() *collectorCache {
	return &collectorCache{entries: map[string]collectorCacheEntry{}}
}

// get returns the compiled collector, or nil with the reasons it is unusable.
func (cc *collectorCache) get(sc *controlv1alpha1.StatusCollector) (*compiledCollector, []string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if e, ok := cc.entries[sc.Name]; ok && e.uid == sc.UID && e.generation == sc.Generation {
		return e.compiled, e.errs
	}
	compiled, errs := compileCollector(sc.Name, &sc.Spec)
	cc.entries[sc.Name] = collectorCacheEntry{uid: sc.UID, generation: sc.Generation, compiled: compiled, errs: errs}
	return compiled, errs
}

// forget drops a deleted collector.
func (cc *collectorCache) forget(name string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.entries, name)
}
