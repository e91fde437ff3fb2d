package v1

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errorStrings renders errs as "<type> <field>", sorted as returned.
func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func TestParseInstanceIDAcceptsOnlyCanonicalDecimal(t *testing.T) {
	valid := map[string]int{"0": 0, "7": 7, "17": 17, "1000000000": 1000000000, "2147483646": 2147483646}
	for s, want := range valid {
		if got, ok := ParseInstanceID(s); !ok || got != want {
			t.Errorf("ParseInstanceID(%q) = %d, %t; want %d, true", s, got, ok, want)
		}
		if got := FormatInstanceID(want); got != s {
			t.Errorf("FormatInstanceID(%d) = %q, want %q", want, got, s)
		}
		if errs := ValidateInstanceID(s, field.NewPath("k")); len(errs) != 0 {
			t.Errorf("ValidateInstanceID(%q) = %v, want none", s, errs)
		}
	}
	invalid := []string{"", "00", "017", "+1", "-1", " 1", "1 ", "1.0", "1e3", "0x1", "x", "2147483647",
		"4294967296", "9999999999", "99999999999", "１"}
	for _, s := range invalid {
		if got, ok := ParseInstanceID(s); ok {
			t.Errorf("ParseInstanceID(%q) = %d, true; want false", s, got)
		}
		errs := ValidateInstanceID(s, field.NewPath("spec", "statuses").Key(s))
		if diff := cmp.Diff([]string{"FieldValueInvalid spec.statuses[" + s + "]"}, errorStrings(errs)); diff != "" {
			t.Errorf("ValidateInstanceID(%q) (-want +got):\n%s", s, diff)
		}
	}
}

func TestBudgetIsAnIntegerFromOneOrAPercentageFromOneToHundred(t *testing.T) {
	path := field.NewPath("spec", "updateStrategy", "maxUnavailable")
	tests := map[string]struct {
		v          *intstr.IntOrString
		wantDetail string // "" when valid
	}{
		"nil takes the default":      {v: nil},
		"1":                          {v: ptrTo(intstr.FromInt32(1))},
		"above any replica count":    {v: ptrTo(intstr.FromInt32(100000))},
		"1%":                         {v: ptrTo(intstr.FromString("1%"))},
		"100%":                       {v: ptrTo(intstr.FromString("100%"))},
		"leading zero percentage":    {v: ptrTo(intstr.FromString("050%"))},
		"0":                          {v: ptrTo(intstr.FromInt32(0)), wantDetail: budgetIntDetail},
		"negative":                   {v: ptrTo(intstr.FromInt32(-1)), wantDetail: budgetIntDetail},
		"0%":                         {v: ptrTo(intstr.FromString("0%")), wantDetail: budgetRangeDetail},
		"101%":                       {v: ptrTo(intstr.FromString("101%")), wantDetail: budgetRangeDetail},
		"percentage overflowing int": {v: ptrTo(intstr.FromString("99999999999999999999%")), wantDetail: budgetRangeDetail},
		"digits without %":           {v: ptrTo(intstr.FromString("5")), wantDetail: budgetFormDetail},
		"word":                       {v: ptrTo(intstr.FromString("abc")), wantDetail: budgetFormDetail},
		"% alone":                    {v: ptrTo(intstr.FromString("%")), wantDetail: budgetFormDetail},
		"empty string":               {v: ptrTo(intstr.FromString("")), wantDetail: budgetFormDetail},
		"negative percentage":        {v: ptrTo(intstr.FromString("-5%")), wantDetail: budgetFormDetail},
		"signed percentage":          {v: ptrTo(intstr.FromString("+5%")), wantDetail: budgetFormDetail},
		"space":                      {v: ptrTo(intstr.FromString("5 %")), wantDetail: budgetFormDetail},
		"trailing newline":           {v: ptrTo(intstr.FromString("5%\n")), wantDetail: budgetFormDetail},
		"unknown type":               {v: &intstr.IntOrString{Type: 7}, wantDetail: budgetFormDetail},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := ValidateBudget(tc.v, path)
			if tc.wantDetail == "" {
				if len(errs) != 0 {
					t.Fatalf("ValidateBudget = %v, want none", errs)
				}
				if tc.v != nil {
					if _, ok := ResolveBudget(*tc.v, 10); !ok {
						t.Errorf("ResolveBudget of a valid budget returned false")
					}
				}
				return
			}
			if len(errs) != 1 || errs[0].Type != field.ErrorTypeInvalid || errs[0].Field != path.String() ||
				errs[0].Detail != tc.wantDetail {
				t.Fatalf("ValidateBudget = %v, want one Invalid %s: %s", errs, path, tc.wantDetail)
			}
			if n, ok := ResolveBudget(*tc.v, 10); ok || n != 0 {
				t.Errorf("ResolveBudget of an invalid budget = %d, %t; want 0, false", n, ok)
			}
		})
	}
}

func TestResolveBudgetRoundsPercentagesUp(t *testing.T) {
	tests := []struct {
		v    intstr.IntOrString
		d    int
		want int
	}{
		{intstr.FromInt32(3), 10, 3},
		{intstr.FromInt32(30), 10, 30}, // an integer above D is kept as given
		{intstr.FromString("10%"), 1000, 100},
		{intstr.FromString("10%"), 5, 1},
		{intstr.FromString("1%"), 1, 1},
		{intstr.FromString("100%"), 7, 7},
		{intstr.FromString("50%"), 0, 0},
	}
	for _, tc := range tests {
		if got, ok := ResolveBudget(tc.v, tc.d); !ok || got != tc.want {
			t.Errorf("ResolveBudget(%s, %d) = %d, %t; want %d, true", tc.v.String(), tc.d, got, ok, tc.want)
		}
	}
}

func podTemplate(l map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: l},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
}

func TestEffectiveSelectorIsUsableWhenItMatchesATemplate(t *testing.T) {
	web := map[string]string{"app": "web"}
	webSel := &metav1.LabelSelector{MatchLabels: web}
	path := field.NewPath("spec", "selector")
	tests := map[string]struct {
		spec        TAppSpec
		want        *metav1.LabelSelector
		wantDerived bool
		wantErrs    []string
	}{
		"set and matching spec.template": {
			spec: TAppSpec{Selector: webSel, Template: podTemplate(web)},
			want: webSel,
		},
		"derived from spec.template without drover's labels": {
			spec:        TAppSpec{Template: podTemplate(map[string]string{"app": "web", TAppHashKey: "h"})},
			want:        webSel,
			wantDerived: true,
		},
		"nothing to derive from": {
			spec:     TAppSpec{Template: podTemplate(map[string]string{TAppInstanceKey: "1"})},
			wantErrs: []string{"FieldValueRequired spec.selector"},
		},
		"empty": {
			spec:     TAppSpec{Selector: &metav1.LabelSelector{}, Template: podTemplate(web)},
			wantErrs: []string{"FieldValueInvalid spec.selector"},
		},
		"unknown operator": {
			spec: TAppSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: "Near"}}}, Template: podTemplate(web)},
			wantErrs: []string{"FieldValueInvalid spec.selector.matchExpressions[0].operator"},
		},
		"invalid label value": {
			spec: TAppSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a b"}},
				Template: podTemplate(web)},
			wantErrs: []string{"FieldValueInvalid spec.selector.matchLabels"},
		},
		"matching a pool template only": {
			spec: TAppSpec{Selector: webSel, Template: podTemplate(map[string]string{"app": "other"}),
				TemplatePool: map[string]corev1.PodTemplateSpec{"a": podTemplate(web)}},
			want: webSel,
		},
		"matching only the pool entry default, which is never used": {
			spec: TAppSpec{Selector: webSel, Template: podTemplate(map[string]string{"app": "other"}),
				TemplatePool: map[string]corev1.PodTemplateSpec{DefaultTemplateName: podTemplate(web)}},
			wantErrs: []string{"FieldValueInvalid spec.selector"},
		},
		"matching no template": {
			spec:     TAppSpec{Selector: webSel, Template: podTemplate(map[string]string{"app": "other"})},
			wantErrs: []string{"FieldValueInvalid spec.selector"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, errs := tc.spec.EffectiveSelector(path)
			if diff := cmp.Diff(tc.wantErrs, errorStrings(errs)); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if len(errs) > 0 {
				if got.LabelSelector != nil || got.Selector != nil || got.Derived {
					t.Errorf("an unusable selector returned %+v, want the zero value", got)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got.LabelSelector); diff != "" {
				t.Errorf("LabelSelector (-want +got):\n%s", diff)
			}
			if got.Derived != tc.wantDerived {
				t.Errorf("Derived = %t, want %t", got.Derived, tc.wantDerived)
			}
			if got.Selector == nil || got.Selector.String() != "app=web" {
				t.Errorf("Selector = %v, want app=web", got.Selector)
			}
		})
	}
}

func TestValidateSelectorRequiresEveryTemplateToMatch(t *testing.T) {
	web := map[string]string{"app": "web"}
	webSel := &metav1.LabelSelector{MatchLabels: web}
	tests := map[string]struct {
		spec TAppSpec
		want []string
	}{
		"matching spec.template and the pool": {
			spec: TAppSpec{Selector: webSel, Template: podTemplate(web),
				TemplatePool: map[string]corev1.PodTemplateSpec{"a": podTemplate(map[string]string{"app": "web", "v": "2"})}},
		},
		"not set: the mutating webhook sets it before validation": {
			spec: TAppSpec{Template: podTemplate(web)},
			want: []string{"FieldValueRequired spec.selector"},
		},
		"empty": {
			spec: TAppSpec{Selector: &metav1.LabelSelector{}, Template: podTemplate(web)},
			want: []string{"FieldValueInvalid spec.selector"},
		},
		"unknown operator": {
			spec: TAppSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: "Near"}}}, Template: podTemplate(web)},
			want: []string{"FieldValueInvalid spec.selector.matchExpressions[0].operator"},
		},
		"spec.template not matching": {
			spec: TAppSpec{Selector: webSel, Template: podTemplate(map[string]string{"app": "other"}),
				TemplatePool: map[string]corev1.PodTemplateSpec{"a": podTemplate(web)}},
			want: []string{"FieldValueInvalid spec.template.metadata.labels"},
		},
		"every pool entry is checked, the unused key default too": {
			spec: TAppSpec{Selector: webSel, Template: podTemplate(web), TemplatePool: map[string]corev1.PodTemplateSpec{
				"a": podTemplate(nil), "b": podTemplate(web), DefaultTemplateName: podTemplate(nil)}},
			want: []string{"FieldValueInvalid spec.templatePool[a].metadata.labels",
				"FieldValueInvalid spec.templatePool[default].metadata.labels"},
		},
		"an entirely empty spec.template is not checked": {
			spec: TAppSpec{Selector: webSel, TemplatePool: map[string]corev1.PodTemplateSpec{"a": podTemplate(web)}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := tc.spec.ValidateSelector(field.NewPath("spec"))
			if diff := cmp.Diff(tc.want, errorStrings(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			for _, e := range errs {
				if strings.Contains(e.Field, "labels") && !strings.Contains(e.Detail, "does not match") {
					t.Errorf("mismatch detail %q does not say what is wrong", e.Detail)
				}
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// FuzzParseInstanceID: an accepted id is in range and is its own canonical form; a rejected string is not the
// canonical form of any id in range.
func FuzzParseInstanceID(f *testing.F) {
	for _, s := range []string{"0", "17", "017", "-1", "2147483646", "2147483647", "9999999999", "１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := ParseInstanceID(s)
		if ok {
			if id < 0 || id > MaxInstanceID || FormatInstanceID(id) != s {
				t.Fatalf("ParseInstanceID(%q) = %d, true: not canonical or out of range", s, id)
			}
			return
		}
		if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= MaxInstanceID && FormatInstanceID(n) == s {
			t.Fatalf("ParseInstanceID(%q) rejected the canonical form of %d", s, n)
		}
	})
}

// FuzzBudget: ValidateBudget and ResolveBudget never panic and agree on validity, and a valid budget resolves
// to at least 1 instance out of at least 1.
func FuzzBudget(f *testing.F) {
	f.Add(true, int32(1), "", 10)
	f.Add(false, int32(0), "10%", 5)
	f.Add(false, int32(0), "101%", 5)
	f.Fuzz(func(t *testing.T, isInt bool, i int32, s string, d int) {
		v := intstr.FromString(s)
		if isInt {
			v = intstr.FromInt32(i)
		}
		d = max(d%100000, 1)
		valid := len(ValidateBudget(&v, field.NewPath("b"))) == 0
		n, ok := ResolveBudget(v, d)
		if ok != valid {
			t.Fatalf("%s: ValidateBudget valid=%t but ResolveBudget ok=%t", v.String(), valid, ok)
		}
		if ok && n < 1 {
			t.Fatalf("%s of %d resolved to %d", v.String(), d, n)
		}
	})
}

// FuzzSelector: the selector rules never panic on odd label content, and a selector usable at runtime is
// parsed and matches a template.
func FuzzSelector(f *testing.F) {
	f.Add("app", "web", "app", "In", "web", true)
	f.Add("", "", "a b", "Near", "", false)
	f.Fuzz(func(t *testing.T, key, value, exprKey, op, exprValue string, setSelector bool) {
		spec := TAppSpec{Template: podTemplate(map[string]string{key: value})}
		if setSelector {
			spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{key: value},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: exprKey,
					Operator: metav1.LabelSelectorOperator(op), Values: []string{exprValue}}}}
		}
		sel, errs := spec.EffectiveSelector(field.NewPath("spec", "selector"))
		if len(errs) == 0 && (sel.Selector == nil || !spec.matchesUsableTemplate(sel.Selector)) {
			t.Fatalf("usable selector %+v without a parsed selector matching a template", sel)
		}
		_ = spec.ValidateSelector(field.NewPath("spec"))
	})
}
