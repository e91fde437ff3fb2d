package sbpcel

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

// EnvironmentVersion identifies the declarations of both environments. It is part of the compile
// cache key; change it whenever a variable, a declared type or a library of an environment changes.
const EnvironmentVersion = 1

// CostLimit is the runtime cost limit of one evaluation, the one Kubernetes applies to each CEL rule.
// An evaluation that passes it fails with ReasonCostLimitExceeded.
const CostLimit = celconfig.PerCallLimit

// MaxExpressionLength is the longest expression accepted, the CRD's limit on the fields.
const MaxExpressionLength = 10240

// MaxExpressionNodes is the compile budget of one expression: the most nodes its syntax tree may have (a
// literal, a variable, a field selection, an operator or function call, a comprehension each count one and
// more). The type checker's time grows with the square of this number (it keeps the type parameters of every
// overloaded call made so far and copies them at each new one): 500 nodes of the costliest shape,
// size([]) > 0 repeated, check in about 25 ms on one core of the 2-core machine drover is measured on,
// 1,000 in about 100 ms, 4,000 in 1.4 s. A StagedBindingPolicy's expressions are also bounded together
// by their length (MaxTotalExpressionLength), so one admission request compiles at most about 30 such
// expressions.
const MaxExpressionNodes = 500

// celEnv is one compiled-in CEL environment: the Kubernetes base environment plus the variables of
// a kind.
type celEnv struct {
	env       *cel.Env
	estimator *library.CostEstimator
}

var (
	envOnce sync.Once
	envs    map[Kind]*celEnv
	envErr  error
)

// environmentFor returns the environment of kind, building both environments on first use.
func environmentFor(kind Kind) (*celEnv, error) {
	envOnce.Do(func() {
		envs = make(map[Kind]*celEnv, 3)
		filter, err := newEnvironment(Filter)
		if err != nil {
			envErr = err
			return
		}
		gate, err := newEnvironment(Condition)
		if err != nil {
			envErr = err
			return
		}
		envs[Filter], envs[Condition], envs[FailureCondition] = filter, gate, gate
	})
	if envErr != nil {
		return nil, envErr
	}
	return envs[kind], nil
}

// newEnvironment extends the Kubernetes base environment (libraries, language settings and runtime
// cost tracking of the default compatibility version) with the typed variables of kind.
func newEnvironment(kind Kind) (*celEnv, error) {
	vars := variables(kind)
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	sort.Strings(names)
	opts := make([]cel.EnvOption, 0, len(names))
	declTypes := make([]*apiservercel.DeclType, 0, len(names))
	for _, name := range names {
		opts = append(opts, cel.Variable(name, vars[name].CelType()))
		declTypes = append(declTypes, vars[name])
	}
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	set, err := base.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        opts,
		DeclTypes:         declTypes,
		ProgramOptions:    []cel.ProgramOption{cel.CostLimit(CostLimit)},
	})
	if err != nil {
		return nil, fmt.Errorf("building the %s CEL environment: %w", kind, err)
	}
	return &celEnv{
		env:       set.NewExpressionsEnv(),
		estimator: &library.CostEstimator{SizeEstimator: &sizeEstimator{roots: vars}},
	}, nil
}

// compile parses and checks expr and plans its program. Errors are compile errors.
func (e *celEnv) compile(kind Kind, expr string) (*cel.Ast, cel.Program, *Error) {
	if len(expr) > MaxExpressionLength {
		return nil, nil, newError(kind, ReasonCompileError,
			"expression is %d characters long, longer than %d", len(expr), MaxExpressionLength)
	}
	// Parse and Check rather than Compile: Compile asks its issues for Err(), which formats every error with
	// its source line (see compileReport).
	parsed, issues := e.env.Parse(expr)
	if issues != nil && len(issues.Errors()) > 0 {
		return nil, nil, newError(kind, ReasonCompileError, "%s", compileReport(expr, issues.Errors()))
	}
	if n := countNodes(parsed); n > MaxExpressionNodes {
		return nil, nil, newError(kind, ReasonCompileError,
			"expression has %d syntax nodes, more than the %d one expression may have: split it across stages or simplify it",
			n, MaxExpressionNodes)
	}
	checked, issues := e.env.Check(parsed)
	if issues != nil && len(issues.Errors()) > 0 {
		return nil, nil, newError(kind, ReasonCompileError, "%s", compileReport(expr, issues.Errors()))
	}
	out := checked.OutputType()
	if !out.IsExactType(types.BoolType) && !out.IsExactType(types.DynType) {
		// Reported as the compiler reports a type error: at the position of the outermost expression.
		root := checked.NativeRep()
		e := &common.Error{Location: root.SourceInfo().GetStartLocation(root.Expr().ID()),
			Message: fmt.Sprintf("expression must evaluate to bool, but its type is %s", out.String())}
		return nil, nil, newError(kind, ReasonCompileError, "%s", e.ToDisplayString(common.NewTextSource(expr)))
	}
	prg, err := e.env.Program(checked)
	if err != nil {
		return nil, nil, newError(kind, ReasonCompileError, "planning the program: %v", err)
	}
	return checked, prg, nil
}

// countNodes counts the nodes of a parsed expression's syntax tree, macros expanded.
func countNodes(parsed *cel.Ast) int {
	n := 0
	ast.PostOrderVisit(parsed.NativeRep().Expr(), ast.NewExprVisitor(func(ast.Expr) { n++ }))
	return n
}

// estimatedCost is the largest cost the checker estimates for the program under the size assumptions.
func (e *celEnv) estimatedCost(checked *cel.Ast) (uint64, error) {
	est, err := e.env.EstimateCost(checked, e.estimator)
	if err != nil {
		return 0, err
	}
	return est.Max, nil
}

// uses is a set of variables an expression references.
type uses uint8

const (
	useClause uses = 1 << iota
	useStage
	useObject // combinedStatus or obj
	useResults
	useResultErrors
	useDestinations

	useStatus = useObject | useResults | useResultErrors
)

var useOf = map[string]uses{
	varDownsyncClause: useClause,
	varStage:          useStage,
	varCombinedStatus: useObject,
	varObj:            useObject,
	varResults:        useResults,
	varResultErrors:   useResultErrors,
	varDestinations:   useDestinations,
}

// referencedVariables reads the checked AST's reference map: each identifier the checker resolved to a
// declared variable.
func referencedVariables(checked *cel.Ast) uses {
	var u uses
	for _, ref := range checked.NativeRep().ReferenceMap() {
		u |= variableUse(ref)
	}
	return u
}

func variableUse(ref *ast.ReferenceInfo) uses {
	if ref == nil || len(ref.OverloadIDs) > 0 || ref.Value != nil {
		return 0
	}
	return useOf[ref.Name]
}

// maxReportedIssues bounds the compile errors a report quotes.
const maxReportedIssues = 5

// compileReport formats the first compile errors of expr as the compiler does (position, message, the
// source line with a caret) and counts the rest. cel-go's own report formats every error, each with its
// source line, and builds the whole string again for each one: an expression of 10,000 characters on one
// line with a hundred errors took two seconds to report, longer than to compile.
func compileReport(expr string, errs []*common.Error) string {
	errs = slices.Clone(errs)
	slices.SortStableFunc(errs, func(a, b *common.Error) int {
		if c := cmp.Compare(a.Location.Line(), b.Location.Line()); c != 0 {
			return c
		}
		return cmp.Compare(a.Location.Column(), b.Location.Column())
	})
	src := common.NewTextSource(expr)
	n := min(len(errs), maxReportedIssues)
	lines := make([]string, 0, n+1)
	for _, e := range errs[:n] {
		lines = append(lines, e.ToDisplayString(src))
	}
	if len(errs) > n {
		lines = append(lines, fmt.Sprintf("%d more errors were truncated", len(errs)-n))
	}
	return strings.Join(lines, "\n")
}
