package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

func TestBudgets(t *testing.T) {
	tests := map[string]struct {
		in    *intstr.IntOrString
		valid bool
		d     int
		want  int
	}{
		"int":                 {in: intBudget(2), valid: true, d: 10, want: 2},
		"int above D":         {in: intBudget(50), valid: true, d: 10, want: 50},
		"percent rounds up":   {in: pctBudget("10%"), valid: true, d: 11, want: 2},
		"percent exact":       {in: pctBudget("10%"), valid: true, d: 10, want: 1},
		"1 percent of 1":      {in: pctBudget("1%"), valid: true, d: 1, want: 1},
		"100 percent":         {in: pctBudget("100%"), valid: true, d: 7, want: 7},
		"percent of zero":     {in: pctBudget("50%"), valid: true, d: 0, want: 0},
		"zero":                {in: intBudget(0)},
		"negative":            {in: intBudget(-1)},
		"zero percent":        {in: pctBudget("0%")},
		"over 100 percent":    {in: pctBudget("101%")},
		"digits without %":    {in: pctBudget("5")},
		"garbage":             {in: pctBudget("abc")},
		"negative percent":    {in: pctBudget("-5%")},
		"leading zeros fine":  {in: pctBudget("050%"), valid: true, d: 10, want: 5},
		"nil":                 {},
		"huge percent digits": {in: pctBudget("99999999999999999999%")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.in != nil && len(tkestackv1.ValidateBudget(tc.in, nil)) == 0; got != tc.valid {
				t.Fatalf("ValidateBudget says valid = %v, want %v", got, tc.valid)
			}
			if tc.in != nil {
				if got := budgetValue(*tc.in, tc.d); got != tc.want {
					t.Errorf("BudgetValue = %d, want %d", got, tc.want)
				}
			}
		})
	}
}

func TestSettings(t *testing.T) {
	tests := map[string]struct {
		app        *tkestackv1.TApp
		want       Settings
		wantIssues []string // subjects
	}{
		"defaults": {
			app: newApp(1).Obj(),
			want: Settings{DefaultTemplateName: "default", RollingTemplateName: "default",
				MaxUnavailable: intstr.FromInt32(1), ForceMaxUnavailable: intstr.FromString("100%"),
				DeletePodAfterAppFinish: true, Retention: tkestackv1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: "Delete", WhenScaled: "Retain"}},
		},
		"capitalised alias wins, rolling follows default": {
			app: newApp(1).Pool("t4", tplWith(oldImage)).Mutate(func(a *tkestackv1.TApp) {
				a.Spec.DefaultTemplateName, a.Spec.DefaultTemplateNameCompat = "x", "t4"
			}).Obj(),
			want: Settings{DefaultTemplateName: "t4", RollingTemplateName: "t4",
				MaxUnavailable: intstr.FromInt32(1), ForceMaxUnavailable: intstr.FromString("100%"),
				DeletePodAfterAppFinish: true, Retention: tkestackv1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: "Delete", WhenScaled: "Retain"}},
		},
		"explicit values and invalid budgets": {
			app: newApp(1).MaxUnavailable(intstr.FromInt32(0)).ForceMaxUnavailable(intstr.FromString("5")).Mutate(func(a *tkestackv1.TApp) {
				a.Spec.UpdateStrategy.Template, a.Spec.UpdateStrategy.Paused = "roll", true
				a.Spec.DeletePodAfterAppFinish = ptr.To(false)
				a.Spec.MinReadySeconds = -3
				a.Spec.PersistentVolumeClaimRetentionPolicy = &tkestackv1.PersistentVolumeClaimRetentionPolicy{WhenScaled: "Delete"}
				a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"0": "Killed", "01": "Killed", "2": "Bogus", "3": "Running"}
				a.Spec.Templates = map[string]string{"-1": "x"}
			}).Obj(),
			want: Settings{DefaultTemplateName: "default", RollingTemplateName: "roll", Paused: true,
				MaxUnavailable: intstr.FromInt32(1), ForceMaxUnavailable: intstr.FromString("100%"),
				Retention: tkestackv1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: "Delete", WhenScaled: "Delete"},
				Killed:    map[int]bool{0: true}},
			wantIssues: []string{"spec.updateStrategy.maxUnavailable", "spec.updateStrategy.forceUpdate.maxUnavailable",
				"spec.statuses[01]", "spec.statuses[2]", "spec.templates[-1]"}, // "roll" names no template: not an issue (every instance is on the force path)
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := NewPass(tc.app, Options{DeletePodAfterAppFinish: true})
			got := p.Settings
			got.Selector, got.SelectorDerived = nil, false
			if tc.want.Killed == nil {
				tc.want.Killed = map[int]bool{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			var subjects []string
			for _, is := range p.Issues {
				subjects = append(subjects, is.Subject)
			}
			if diff := cmp.Diff(tc.wantIssues, subjects); diff != "" {
				t.Errorf("issue subjects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelector(t *testing.T) {
	tests := map[string]struct {
		app         *tkestackv1.TApp
		wantSel     *metav1.LabelSelector
		derived     bool
		blocked     bool
		scaleString string
	}{
		"explicit": {
			app: newApp(1).Mutate(func(a *tkestackv1.TApp) {
				a.Spec.Template.Labels["tier"] = "x"
				a.Spec.Selector.MatchLabels["tier"] = "x"
			}).Obj(),
			wantSel:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "x"}},
			scaleString: "app=web,tier=x",
		},
		"derived without instance and hash labels": {
			app: newApp(1).Mutate(func(a *tkestackv1.TApp) {
				a.Spec.Selector = nil
				a.Spec.Template.Labels[tkestackv1.TAppInstanceKey] = "1"
				a.Spec.Template.Labels[tkestackv1.TAppHashKey] = "h"
				a.Spec.Template.Labels[tkestackv1.TAppUniqHashKey] = "u"
			}).Obj(),
			wantSel: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, derived: true, scaleString: "app=web",
		},
		"nil and unlabelled template": {
			app:     newApp(1).Mutate(func(a *tkestackv1.TApp) { a.Spec.Selector, a.Spec.Template.Labels = nil, nil }).Obj(),
			blocked: true,
		},
		"matches only a pool template": {
			app: newApp(1).Pool("p", tplWith(oldImage)).Mutate(func(a *tkestackv1.TApp) {
				a.Spec.Template.Labels = map[string]string{"app": "other"}
			}).Obj(),
			wantSel: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, scaleString: "app=web",
		},
		"matches no template": {
			app:     newApp(1).Mutate(func(a *tkestackv1.TApp) { a.Spec.Selector.MatchLabels["app"] = "other" }).Obj(),
			blocked: true,
		},
		"empty": {
			app:     newApp(1).Mutate(func(a *tkestackv1.TApp) { a.Spec.Selector = &metav1.LabelSelector{} }).Obj(),
			blocked: true,
		},
		"invalid operator": {
			app: newApp(1).Mutate(func(a *tkestackv1.TApp) {
				a.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}
			}).Obj(),
			blocked: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := NewPass(tc.app, Options{})
			if diff := cmp.Diff(tc.wantSel, p.Settings.Selector); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			if p.Settings.SelectorDerived != tc.derived || p.Settings.Blocked != tc.blocked {
				t.Errorf("derived %v blocked %v, want %v %v", p.Settings.SelectorDerived, p.Settings.Blocked, tc.derived, tc.blocked)
			}
			if got := scaleLabelSelector(p.Settings.Selector); got != tc.scaleString {
				t.Errorf("scale selector %q, want %q", got, tc.scaleString)
			}
			if tc.blocked && (len(p.Issues) != 1 || p.Issues[0].Reason != tkestackv1.ReasonInvalidSpec) {
				t.Errorf("issues = %+v, want one InvalidSpec", p.Issues)
			}
		})
	}
	expr := &metav1.LabelSelector{MatchLabels: map[string]string{"b": "y", "a": "x"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "c", Operator: metav1.LabelSelectorOpIn, Values: []string{"2", "1"}}}}
	if got := scaleLabelSelector(expr); got != "a=x,b=y,c in (1,2)" {
		t.Errorf("ScaleLabelSelector = %q", got)
	}
}

func TestTemplateResolution(t *testing.T) {
	p := passOf(newApp(6).Pool("test", tplWith(newImage)).Pool("default", tplWith("ignored:1")).Pool("roll", tplWith(newImage)).
		Templates(pairs("1", "test", "2", "missing", "3", "default", "4", "roll")).
		Mutate(func(a *tkestackv1.TApp) { a.Spec.UpdateStrategy.Template = "roll" }))
	type res struct {
		Name     string
		Resolved bool
		Image    string
		Rolling  bool
	}
	got := map[int]res{}
	for id := range 6 {
		r := res{Name: p.TemplateName(id)}
		if tpl, ok := p.Template(id); ok {
			r.Resolved, r.Image, r.Rolling = true, tpl.Spec.Spec.Containers[0].Image, tpl.Rolling
		}
		got[id] = r
	}
	want := map[int]res{
		0: {Name: "default", Resolved: true, Image: oldImage},
		1: {Name: "test", Resolved: true, Image: newImage},
		2: {Name: "missing"},
		3: {Name: "default", Resolved: true, Image: oldImage}, // templatePool["default"] is never consulted
		4: {Name: "roll", Resolved: true, Image: newImage, Rolling: true},
		5: {Name: "default", Resolved: true, Image: oldImage},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolution (-want +got):\n%s", diff)
	}
	t1, _ := p.TemplateByName("test")
	t4, _ := p.TemplateByName("roll")
	if t1.Hash != t4.Hash || t1.UniqHash != t4.UniqHash {
		t.Error("identical templates must hash alike")
	}
}

func TestUnusedTemplates(t *testing.T) {
	seed := newApp(3).Pool("test1", tplWith("nginx:1.7.9")).Pool("test2", tplWith("nginx:1.7.8")).Pool("test3", tplWith("nginx:1.7.7")).
		Pool("test4", tplWith("nginx:1.7.7")).Templates(pairs("1", "test1")).Mutate(func(a *tkestackv1.TApp) {
		a.Spec.UpdateStrategy.Template = "test3"
		a.Spec.DefaultTemplateNameCompat = "test4"
	})
	tests := map[string]struct {
		app  *tkestackv1.TApp
		want []string
	}{
		"seed example": {app: seed.Obj(), want: []string{"test2"}},
		"pool default is removed unless referenced": {
			app:  newApp(1).Pool("default", tplWith(oldImage)).Pool("x", tplWith(oldImage)).Templates(pairs("7", "x")).Obj(),
			want: []string{"default"},
		},
		"ids above replicas keep templates": {
			app: newApp(1).Pool("x", tplWith(oldImage)).Templates(pairs("99", "x")).Obj(),
		},
		"defaultTemplateName keeps": {
			app:  newApp(1).Pool("x", tplWith(oldImage)).Pool("y", tplWith(oldImage)).Mutate(func(a *tkestackv1.TApp) { a.Spec.DefaultTemplateName = "y" }).Obj(),
			want: []string{"x"},
		},
		"no pool": {app: newApp(1).Obj()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, UnusedTemplates(&tc.app.Spec)); diff != "" {
				t.Errorf("unused (-want +got):\n%s", diff)
			}
		})
	}
}
