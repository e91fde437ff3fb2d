package v1

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules of a TApp spec that both the validating webhook (at admission) and the controller (at runtime, since
// the webhook may be absent or bypassed) apply. Each rule is written here once: the webhook turns the returned
// field errors into its 422 answer, the controller into InvalidSpec issues.

// InstanceIDDetail is the detail of the error returned for a key that is not a canonical instance id.
const InstanceIDDetail = "must be a canonical instance id: a decimal integer from 0 to 2147483646 without sign, spaces or leading zeros"

// ParseInstanceID parses a canonical instance id, the form of the keys of spec.templates and spec.statuses and
// of the suffix of pod names <tapp>-<id>: the decimal form of an integer 0..MaxInstanceID with no sign, space or
// leading zero ("0", "17"; never "017", "+1", "-1", " 1", "2147483647").
//
// The controller's parser and the webhook's used to accept exactly the same strings; of the two
// implementations this keeps the stricter one, which parses in 64 bits, so that no string of ten digits can
// wrap around into the accepted range where int has 32 bits.
func ParseInstanceID(s string) (int, bool) {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > MaxInstanceID {
		return 0, false
	}
	return int(n), true
}

// FormatInstanceID returns the canonical form of an instance id, the one ParseInstanceID accepts.
func FormatInstanceID(id int) string {
	return strconv.Itoa(id)
}

// ValidateInstanceID returns an Invalid error at path when key is not a canonical instance id.
func ValidateInstanceID(key string, path *field.Path) field.ErrorList {
	if _, ok := ParseInstanceID(key); ok {
		return nil
	}
	return field.ErrorList{field.Invalid(path, key, InstanceIDDetail)}
}

// Details of the errors ValidateBudget returns.
const (
	budgetFormDetail  = `must be an integer or a percentage such as "50%"`
	budgetRangeDetail = "a percentage must be between 1% and 100%"
	budgetIntDetail   = "must be at least 1"
)

// ValidateBudget checks a maxUnavailable budget (updateStrategy.maxUnavailable or
// updateStrategy.forceUpdate.maxUnavailable): an integer ≥ 1, or a string of decimal digits followed by "%" whose
// value is 1..100 (leading zeros are accepted: "050%" is 50%). "0", "0%", "101%", "5" (a string without "%"),
// "abc" and negative integers are invalid. A nil budget is valid: the default applies (DefaultMaxUnavailable,
// DefaultForceUpdateMaxUnavailable).
func ValidateBudget(v *intstr.IntOrString, path *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if _, err := parseBudget(*v, path); err != nil {
		return field.ErrorList{err}
	}
	return nil
}

// ResolveBudget returns how many of d desired-running instances a budget lets be unavailable at once: an
// integer as given, a percentage of d rounded up. It returns 0 and false for an invalid budget (see
// ValidateBudget).
func ResolveBudget(v intstr.IntOrString, d int) (int, bool) {
	b, err := parseBudget(v, nil)
	if err != nil {
		return 0, false
	}
	if !b.percent {
		return b.n, true
	}
	return (b.n*d + 99) / 100, true
}

type budget struct {
	n       int
	percent bool
}

// parseBudget parses a budget; the error is at path.
func parseBudget(v intstr.IntOrString, path *field.Path) (budget, *field.Error) {
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 1 {
			return budget{}, field.Invalid(path, v.IntVal, budgetIntDetail)
		}
		return budget{n: int(v.IntVal)}, nil
	case intstr.String:
		digits := v.StrVal
		if len(digits) < 2 || digits[len(digits)-1] != '%' {
			return budget{}, field.Invalid(path, v.StrVal, budgetFormDetail)
		}
		digits = digits[:len(digits)-1]
		for i := range len(digits) {
			if digits[i] < '0' || digits[i] > '9' {
				return budget{}, field.Invalid(path, v.StrVal, budgetFormDetail)
			}
		}
		n, err := strconv.Atoi(digits)
		if err != nil || n < 1 || n > 100 {
			return budget{}, field.Invalid(path, v.StrVal, budgetRangeDetail)
		}
		return budget{n: n, percent: true}, nil
	default:
		return budget{}, field.Invalid(path, v.String(), budgetFormDetail)
	}
}

// TAppSelector is the selector a TApp uses to find its pods.
//
// +kubebuilder:object:generate=false
type TAppSelector struct {
	// LabelSelector is spec.selector, or the one derived from spec.template's labels (DefaultSelector) when
	// spec.selector is nil. It shares memory with the spec and must not be modified.
	LabelSelector *metav1.LabelSelector
	// Selector is LabelSelector parsed.
	Selector labels.Selector
	// Derived is true when spec.selector is nil and LabelSelector was derived: the controller persists it
	// once, as the mutating webhook would have.
	Derived bool
}

// EffectiveSelector returns the selector the TApp uses at runtime, and the reasons it cannot be used (errors
// at path, the path of spec.selector): none set and none derivable from spec.template's labels, an invalid or
// empty selector, or one that matches neither spec.template's labels nor those of a templatePool entry that
// can be used (the key "default" never is). With errors the result is the zero TAppSelector: no pod may be
// written, since pods could not be told apart from others.
//
// This is the controller's rule, more lenient than the webhook's (ValidateSelector): a template that does not
// match only keeps its own instances from being created.
func (s *TAppSpec) EffectiveSelector(path *field.Path) (TAppSelector, field.ErrorList) {
	out := TAppSelector{LabelSelector: s.Selector}
	if out.LabelSelector == nil {
		if out.LabelSelector = s.DefaultSelector(); out.LabelSelector == nil {
			return TAppSelector{}, field.ErrorList{field.Required(path,
				"not set, and spec.template has no labels to derive it from")}
		}
		out.Derived = true
	}
	parsed, errs := parseSelector(out.LabelSelector, path)
	if len(errs) > 0 {
		return TAppSelector{}, errs
	}
	if !s.matchesUsableTemplate(parsed) {
		return TAppSelector{}, field.ErrorList{field.Invalid(path, parsed.String(),
			"matches no template: neither the labels of spec.template nor those of a templatePool entry")}
	}
	out.Selector = parsed
	return out, nil
}

// matchesUsableTemplate reports whether sel matches spec.template's labels or those of a templatePool entry
// other than "default".
func (s *TAppSpec) matchesUsableTemplate(sel labels.Selector) bool {
	if sel.Matches(labels.Set(s.Template.Labels)) {
		return true
	}
	for name, tpl := range s.TemplatePool {
		if name != DefaultTemplateName && sel.Matches(labels.Set(tpl.Labels)) {
			return true
		}
	}
	return false
}

// ValidateSelector applies the admission rule to spec.selector (specPath is the path of the spec): it is set
// (the mutating webhook defaults it), a valid and non-empty label selector, and it matches the labels of
// spec.template and of every templatePool entry. An entirely empty spec.template (all instances use pool
// templates) is not checked: no pod is ever created from it.
func (s *TAppSpec) ValidateSelector(specPath *field.Path) field.ErrorList {
	p := specPath.Child("selector")
	if s.Selector == nil {
		return field.ErrorList{field.Required(p, "a selector is required; it is defaulted from the labels of spec.template")}
	}
	selector, errs := parseSelector(s.Selector, p)
	if len(errs) > 0 {
		return errs
	}
	mismatch := func(t *corev1.PodTemplateSpec, p *field.Path) {
		if !selector.Matches(labels.Set(t.Labels)) {
			errs = append(errs, field.Invalid(p.Child("metadata", "labels"), labels.Set(t.Labels).String(),
				fmt.Sprintf("`selector` (%s) does not match template `labels`", selector)))
		}
	}
	if !equality.Semantic.DeepEqual(s.Template, corev1.PodTemplateSpec{}) {
		mismatch(&s.Template, specPath.Child("template"))
	}
	for _, name := range sortedKeys(s.TemplatePool) {
		t := s.TemplatePool[name]
		mismatch(&t, specPath.Child("templatePool").Key(name))
	}
	return errs
}

// parseSelector checks that sel is a valid, non-empty label selector and parses it; the errors are at path.
func parseSelector(sel *metav1.LabelSelector, path *field.Path) (labels.Selector, field.ErrorList) {
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return nil, field.ErrorList{field.Invalid(path, "", "must not be empty")}
	}
	if errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path); len(errs) > 0 {
		return nil, errs
	}
	parsed, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(path, sel.String(), err.Error())}
	}
	return parsed, nil
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
