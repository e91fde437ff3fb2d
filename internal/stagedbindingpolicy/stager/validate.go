package stager

import (
	"context"
	"errors"
	"fmt"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
)

// Validate checks a StagedBindingPolicy against every rule of the API, with field paths: the admission
// webhook refuses an object that breaks one, and the controller freezes a rollout whose spec breaks one
// (the webhook was bypassed). Every expression is compiled through the cache, so an admitted object's
// expressions are compiled once.
func Validate(sbp *communityv1alpha1.StagedBindingPolicy, cel *sbpcel.Cache) field.ErrorList {
	return ValidateBefore(context.Background(), sbp, cel)
}

// ValidateBefore is Validate for the admission webhook: it stops compiling expressions once ctx is done (the
// API server gave up waiting, so the answer reaches no one) and reports the stages left unchecked.
func ValidateBefore(ctx context.Context, sbp *communityv1alpha1.StagedBindingPolicy, cel *sbpcel.Cache) field.ErrorList {
	var errs field.ErrorList
	if len(sbp.Name) > communityv1alpha1.MaxNameLength {
		errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), sbp.Name, communityv1alpha1.MaxNameLength))
	}
	spec := field.NewPath("spec")
	errs = append(errs, validateDownsync(sbp.Spec.Downsync, spec.Child("downsync"))...)
	bounds := Bounds(sbp)
	errs = append(errs, bounds...)
	if len(bounds) > 0 {
		cel = nil // compile nothing past the bounds
	}
	errs = append(errs, validateStages(ctx, sbp.Spec.Stages, spec.Child("stages"), cel)...)
	switch sbp.Spec.Mode {
	case "", communityv1alpha1.ModeExclusive, communityv1alpha1.ModeCumulative:
	default:
		errs = append(errs, field.NotSupported(spec.Child("mode"), sbp.Spec.Mode,
			[]communityv1alpha1.RolloutMode{communityv1alpha1.ModeExclusive, communityv1alpha1.ModeCumulative}))
	}
	return errs
}

// Bounds checks the sizes that bound the work of validating a StagedBindingPolicy, before any expression is
// compiled: at most MaxStages stages, each expression at most MaxExpressionLength characters, and all of them
// together at most MaxTotalExpressionLength. (Each expression's syntax tree is bounded too, by
// sbpcel.MaxExpressionNodes, which needs a parse.)
func Bounds(sbp *communityv1alpha1.StagedBindingPolicy) field.ErrorList {
	stages := field.NewPath("spec", "stages")
	if n := len(sbp.Spec.Stages); n > communityv1alpha1.MaxStages {
		return field.ErrorList{field.TooMany(stages, n, communityv1alpha1.MaxStages)}
	}
	var errs field.ErrorList
	total := 0
	for i := range sbp.Spec.Stages {
		for _, x := range expressionsOf(&sbp.Spec.Stages[i]) {
			total += len(x.expr)
			if len(x.expr) > communityv1alpha1.MaxExpressionLength {
				errs = append(errs, field.TooLong(stages.Index(i).Child(string(x.kind)), "", communityv1alpha1.MaxExpressionLength))
			}
		}
	}
	if total > communityv1alpha1.MaxTotalExpressionLength {
		errs = append(errs, field.Invalid(stages, total, fmt.Sprintf(
			"the filter, condition and failureCondition expressions of all stages have %d characters together, more than %d",
			total, communityv1alpha1.MaxTotalExpressionLength)))
	}
	return errs
}

// stageExpression is one of a stage's expressions.
type stageExpression struct {
	kind sbpcel.Kind
	expr string
}

func expressionsOf(s *communityv1alpha1.Stage) []stageExpression {
	return []stageExpression{{sbpcel.Filter, s.Filter}, {sbpcel.Condition, s.Condition}, {sbpcel.FailureCondition, s.FailureCondition}}
}

// validateDownsync checks the clauses: at least one, each with a field that selects something, valid
// selectors and valid status collector names.
func validateDownsync(clauses []controlv1alpha1.DownsyncPolicyClause, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(clauses) == 0 {
		return append(errs, field.Required(path, "at least one clause says which objects to place"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	for i, c := range clauses {
		p := path.Index(i)
		if c.APIGroup == nil && len(c.Resources) == 0 && len(c.Namespaces) == 0 && len(c.NamespaceSelectors) == 0 &&
			len(c.ObjectSelectors) == 0 && len(c.ObjectNames) == 0 {
			errs = append(errs, field.Required(p,
				"a clause needs apiGroup (\"\" for the core group) or a non-empty resources, namespaces, namespaceSelectors, objectSelectors or objectNames"))
		}
		for j := range c.NamespaceSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&c.NamespaceSelectors[j], opts, p.Child("namespaceSelectors").Index(j))...)
		}
		for j := range c.ObjectSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&c.ObjectSelectors[j], opts, p.Child("objectSelectors").Index(j))...)
		}
		for j, name := range c.StatusCollectors {
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(p.Child("statusCollectors").Index(j), name, msg))
			}
		}
	}
	return errs
}

// validateStages checks the stages: at least one, unique DNS-1123 label names, at least one valid
// cluster selector each, expressions that compile in their environments, and sane durations.
func validateStages(ctx context.Context, stages []communityv1alpha1.Stage, path *field.Path, cel *sbpcel.Cache) field.ErrorList {
	var errs field.ErrorList
	if len(stages) == 0 {
		return append(errs, field.Required(path, "at least one stage"))
	}
	seen := sets.New[string]()
	for i := range stages {
		p := path.Index(i)
		if err := ctx.Err(); err != nil {
			return append(errs, field.InternalError(p, fmt.Errorf("stages %d to %d not checked: %w", i, len(stages)-1, err)))
		}
		s := &stages[i]
		for _, msg := range validation.IsDNS1123Label(s.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
		}
		if seen.Has(s.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		seen.Insert(s.Name)
		errs = append(errs, validateSelectors(s, p)...)
		if cel != nil {
			errs = append(errs, validateExpressions(s, p, cel)...)
		}
		errs = append(errs, validateTimers(s, p)...)
	}
	return errs
}

func validateSelectors(s *communityv1alpha1.Stage, p *field.Path) field.ErrorList {
	if len(s.ClusterSelectors) == 0 {
		return field.ErrorList{field.Required(p.Child("clusterSelectors"), "at least one selector ({} selects every cluster)")}
	}
	var errs field.ErrorList
	for j := range s.ClusterSelectors {
		errs = append(errs, metav1validation.ValidateLabelSelector(&s.ClusterSelectors[j],
			metav1validation.LabelSelectorValidationOptions{}, p.Child("clusterSelectors").Index(j))...)
	}
	return errs
}

// validateExpressions compiles the stage's expressions (their lengths are checked by Bounds); a compile error
// carries the compiler's report with line and column.
func validateExpressions(s *communityv1alpha1.Stage, p *field.Path, cel *sbpcel.Cache) field.ErrorList {
	var errs field.ErrorList
	for _, x := range expressionsOf(s) {
		if x.expr == "" {
			continue
		}
		if _, err := cel.Compile(x.kind, x.expr); err != nil {
			errs = append(errs, field.Invalid(p.Child(string(x.kind)), x.expr, compileMessage(err)))
		}
	}
	return errs
}

func compileMessage(err error) string {
	var ce *sbpcel.Error
	if errors.As(err, &ce) {
		return ce.Message
	}
	return err.Error()
}

// validateTimers checks the soak and deadline durations and the timeout action.
func validateTimers(s *communityv1alpha1.Stage, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.MinDuration != nil && s.MinDuration.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("minDuration"), s.MinDuration.Duration.String(), "must be positive"))
	}
	if s.ProgressDeadline != nil {
		switch {
		case s.ProgressDeadline.Duration <= 0:
			errs = append(errs, field.Invalid(p.Child("progressDeadline"), s.ProgressDeadline.Duration.String(), "must be positive"))
		case s.MinDuration != nil && s.ProgressDeadline.Duration <= s.MinDuration.Duration:
			errs = append(errs, field.Invalid(p.Child("progressDeadline"), s.ProgressDeadline.Duration.String(),
				fmt.Sprintf("must be longer than minDuration (%s): the gates could never be met in time", s.MinDuration.Duration)))
		}
	}
	switch s.OnTimeout {
	case "", communityv1alpha1.TimeoutHalt:
	default:
		errs = append(errs, field.NotSupported(p.Child("onTimeout"), s.OnTimeout, []communityv1alpha1.TimeoutAction{communityv1alpha1.TimeoutHalt}))
	}
	return errs
}
