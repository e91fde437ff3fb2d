package sbpcel

import "fmt"

// Kind names the field an expression comes from. Its value is also the metric label value.
type Kind string

const (
	// Filter is a stage's filter: it picks which objects of the Binding the stage's gates look at.
	// It sees downsyncClause and stage only.
	Filter Kind = "filter"
	// Condition is a stage's completion gate, evaluated per gated object with its CombinedStatus.
	Condition Kind = "condition"
	// FailureCondition is a stage's failure gate; it has the same environment as Condition.
	FailureCondition Kind = "failureCondition"
)

// valid reports whether k is one of the three kinds.
func (k Kind) valid() bool {
	return k == Filter || k == Condition || k == FailureCondition
}

// Reason classifies an Error. Its value is also the metric label value and the condition reason suffix.
type Reason string

const (
	// ReasonCompileError: the expression does not parse, references an undeclared variable or an unknown
	// field, has a type error, or its result type is neither bool nor dyn.
	ReasonCompileError Reason = "CompileError"
	// ReasonEvaluationError: evaluation failed (no such key, index out of range, a failed conversion, a
	// missing CombinedStatus for an expression that needs one).
	ReasonEvaluationError Reason = "EvaluationError"
	// ReasonNonBoolResult: an expression typed dyn produced something other than a bool.
	ReasonNonBoolResult Reason = "NonBoolResult"
	// ReasonCostLimitExceeded: evaluation passed the runtime cost limit (CostLimit).
	ReasonCostLimitExceeded Reason = "CostLimitExceeded"
	// ReasonInvalidNumber: the expression reads the results variable and a Number cell of the
	// CombinedStatus holds a string that does not parse as a float.
	ReasonInvalidNumber Reason = "InvalidNumber"
)

// Error is the only error type Compile and Eval return.
type Error struct {
	// Kind of the expression.
	Kind Kind
	// Reason classifies the failure.
	Reason Reason
	// Message is human-readable. For a compile error it is the compiler's report, with line:column of
	// each issue and the offending source line.
	Message string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Kind, e.Reason, e.Message)
}

func newError(kind Kind, reason Reason, format string, args ...any) *Error {
	return &Error{Kind: kind, Reason: reason, Message: fmt.Sprintf(format, args...)}
}
