package sbpcel

import (
	"encoding/binary"
	"errors"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// DownsyncClause is the Binding's workload entry of one object, the downsyncClause variable.
type DownsyncClause struct {
	// Group is the API group ("" for the core group), never the version.
	Group           string
	Version         string
	Resource        string
	Namespace       string // "" for a cluster-scoped object
	Name            string
	ResourceVersion string
	CreateOnly      bool
	// WantSingletonReportedState and StatusCollectors are merged over the clauses selecting the object.
	WantSingletonReportedState bool
	StatusCollectors           []string
}

// StageRef is the stage variable: the stage whose expression runs.
type StageRef struct {
	Name  string
	Index int
}

// CSInput is the CombinedStatus an expression is evaluated with.
type CSInput struct {
	// UID and ResourceVersion identify the content: the values derived from Object are cached under
	// them. Leave either empty to disable caching for this object.
	UID             string
	ResourceVersion string
	// Object is the CombinedStatus as unstructured content, exactly as stored (top-level metadata,
	// results, ...), e.g. from an informer cache. It is read and never modified; the caller must not
	// modify it either while its UID and ResourceVersion stay the same.
	Object map[string]any
}

// Input binds the variables of one evaluation.
type Input struct {
	// Clause is the downsyncClause variable.
	Clause DownsyncClause
	// Stage is the stage variable.
	Stage StageRef
	// CombinedStatus is the object's CombinedStatus; nil for filters. A condition or failureCondition
	// that reads combinedStatus, obj, results or resultErrors fails without one.
	CombinedStatus *CSInput
	// Destinations are the cluster ids of the Binding's destinations, the destinations variable. They
	// are sorted (a copy) if they are not already.
	Destinations []string
	// DestinationsKey, when not 0, is DestinationsKey(Destinations), computed once by the caller; the
	// Destinations must then be sorted already.
	DestinationsKey uint64
}

// Program is a compiled expression. It is safe for concurrent use.
type Program struct {
	kind     Kind
	env      *celEnv
	checked  *cel.Ast
	prg      cel.Program
	uses     uses
	statuses *statusCache
	memoize  bool

	costOnce sync.Once
	cost     uint64
	costErr  error
}

// EstimatedCost returns the checker's worst-case cost estimate of one evaluation, assuming up to 1,000
// rows per collector and destinations, 4 collectors and 16 columns. It is only advice (a webhook may
// warn when it passes CostLimit): the runtime limit is what stops an evaluation.
func (p *Program) EstimatedCost() (uint64, error) {
	p.costOnce.Do(func() { p.cost, p.costErr = p.env.estimatedCost(p.checked) })
	return p.cost, p.costErr
}

// Eval evaluates the program. The error, if any, is an *Error with ReasonEvaluationError,
// ReasonNonBoolResult, ReasonCostLimitExceeded or ReasonInvalidNumber; the bool is then false.
//
// Evaluation is a pure function of the inputs the program references. An evaluation against a
// CombinedStatus with a UID and resourceVersion is remembered with that CombinedStatus's derived values,
// keyed by the program and a hash of the clause, stage and destinations it references, and answered
// from there while they stay the same.
func (p *Program) Eval(in Input) (bool, error) {
	if p.uses&useDestinations != 0 && in.DestinationsKey == 0 && !slices.IsSorted(in.Destinations) {
		in.Destinations = slices.Sorted(slices.Values(in.Destinations))
	}
	if p.uses&useStatus == 0 {
		return p.evaluate(&in, nil).result()
	}
	if in.CombinedStatus == nil || in.CombinedStatus.Object == nil {
		return false, newError(p.kind, ReasonEvaluationError, "the expression reads the CombinedStatus, but none was given")
	}
	sv := p.statuses.values(in.CombinedStatus)
	if !p.memoize || !cacheable(in.CombinedStatus) {
		return p.evaluate(&in, sv).result()
	}
	key := outcomeKey{prg: p, inputs: p.hashInputs(&in)}
	if o, ok := sv.outcome(key); ok {
		return o.result()
	}
	o := p.evaluate(&in, sv)
	sv.remember(key, o)
	return o.result()
}

// evaluate runs the program; sv holds the CombinedStatus values if the program references them.
func (p *Program) evaluate(in *Input, sv *statusValues) outcome {
	act, aerr := p.activation(in, sv)
	if aerr != nil {
		return outcome{err: aerr}
	}
	out, _, err := p.prg.Eval(act)
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
			return outcome{err: newError(p.kind, ReasonCostLimitExceeded, "evaluation exceeded the cost limit of %d", CostLimit)}
		}
		return outcome{err: newError(p.kind, ReasonEvaluationError, "%v", err)}
	}
	b, ok := out.(types.Bool)
	if !ok {
		return outcome{err: newError(p.kind, ReasonNonBoolResult, "the expression evaluated to a %s, not a bool", out.Type().TypeName())}
	}
	return outcome{ok: bool(b)}
}

func (o outcome) result() (bool, error) {
	if o.err != nil {
		return false, o.err
	}
	return o.ok, nil
}

// activation binds the variables the program references; the others stay unbound.
func (p *Program) activation(in *Input, sv *statusValues) (*activation, *Error) {
	a := &activation{}
	if p.uses&useClause != 0 {
		a.clause = clauseValue(&in.Clause)
	}
	if p.uses&useStage != 0 {
		a.stage = types.NewStringInterfaceMap(storedAdapter,
			map[string]any{"name": in.Stage.Name, "index": int64(in.Stage.Index)})
	}
	if p.uses&useDestinations != 0 {
		a.destinations = types.NewStringList(types.DefaultTypeAdapter, in.Destinations)
	}
	if sv == nil {
		return a, nil
	}
	if p.uses&useObject != 0 {
		a.object = sv.object
	}
	if p.uses&useResults != 0 {
		results, err := sv.resultsValue()
		if err != nil {
			return nil, newError(p.kind, ReasonInvalidNumber, "%v", err)
		}
		a.results = results
	}
	if p.uses&useResultErrors != 0 {
		a.resultErrors = sv.resultErrorsValue()
	}
	return a, nil
}

var inputSeed = maphash.MakeSeed()

// hashInputs hashes the inputs besides the CombinedStatus that the program references.
func (p *Program) hashInputs(in *Input) uint64 {
	var h maphash.Hash
	h.SetSeed(inputSeed)
	if p.uses&useClause != 0 {
		c := &in.Clause
		for _, s := range [...]string{c.Group, c.Version, c.Resource, c.Namespace, c.Name, c.ResourceVersion} {
			writeString(&h, s)
		}
		writeBool(&h, c.CreateOnly)
		writeBool(&h, c.WantSingletonReportedState)
		writeStrings(&h, c.StatusCollectors)
	}
	if p.uses&useStage != 0 {
		writeString(&h, in.Stage.Name)
		writeInt(&h, in.Stage.Index)
	}
	if p.uses&useDestinations != 0 {
		if in.DestinationsKey != 0 {
			writeInt(&h, int(in.DestinationsKey))
		} else {
			writeStrings(&h, in.Destinations)
		}
	}
	return h.Sum64()
}

// DestinationsKey returns the key of a sorted list of destinations for Input.DestinationsKey: a caller that
// evaluates many objects against the same destinations computes it once, instead of every evaluation hashing
// the list again (1,000 cluster ids for each of 300 objects is most of a pass's time).
func DestinationsKey(sorted []string) uint64 {
	var h maphash.Hash
	h.SetSeed(inputSeed)
	writeStrings(&h, sorted)
	if k := h.Sum64(); k != 0 {
		return k
	}
	return 1
}

func writeInt(h *maphash.Hash, i int) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	_, _ = h.Write(b[:])
}

func writeBool(h *maphash.Hash, b bool) {
	if b {
		_ = h.WriteByte(1)
	} else {
		_ = h.WriteByte(0)
	}
}

func writeString(h *maphash.Hash, s string) {
	writeInt(h, len(s))
	_, _ = h.WriteString(s)
}

func writeStrings(h *maphash.Hash, ss []string) {
	writeInt(h, len(ss))
	for _, s := range ss {
		writeString(h, s)
	}
}

func clauseValue(c *DownsyncClause) ref.Val {
	return types.NewStringInterfaceMap(storedAdapter, map[string]any{
		"group":                      c.Group,
		"version":                    c.Version,
		"resource":                   c.Resource,
		"namespace":                  c.Namespace,
		"name":                       c.Name,
		"resourceVersion":            c.ResourceVersion,
		"createOnly":                 c.CreateOnly,
		"wantSingletonReportedState": c.WantSingletonReportedState,
		"statusCollectors":           types.NewStringList(types.DefaultTypeAdapter, c.StatusCollectors),
	})
}

// activation resolves the variables of one evaluation.
type activation struct {
	clause, stage, object, results, resultErrors, destinations ref.Val
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	var v ref.Val
	switch name {
	case varDownsyncClause:
		v = a.clause
	case varStage:
		v = a.stage
	case varCombinedStatus, varObj:
		v = a.object
	case varResults:
		v = a.results
	case varResultErrors:
		v = a.resultErrors
	case varDestinations:
		v = a.destinations
	}
	return v, v != nil
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }
