package tapp

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/testutil"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// tappPodTemplate returns a pod template labelled app=web with one container running image.
func tappPodTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: image}}},
	}
}

// makeTApp returns a valid, defaulted TApp web with three instances, a pool template "canary", and the edits
// applied.
func makeTApp(edits ...func(*tkestackv1.TApp)) *tkestackv1.TApp {
	app := &tkestackv1.TApp{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec: tkestackv1.TAppSpec{
			Replicas:            3,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template:            tappPodTemplate("nginx:1"),
			TemplatePool:        map[string]corev1.PodTemplateSpec{"canary": tappPodTemplate("nginx:2")},
			DefaultTemplateName: tkestackv1.DefaultTemplateName,
			UpdateStrategy: tkestackv1.UpdateStrategy{
				MaxUnavailable: new(intstr.FromInt32(1)),
				ForceUpdate:    tkestackv1.ForceUpdateStrategy{MaxUnavailable: new(intstr.FromString("100%"))},
			},
		},
	}
	for _, edit := range edits {
		edit(app)
	}
	return app
}

func TestValidateTApp(t *testing.T) {
	tests := map[string]struct {
		edit func(*tkestackv1.TApp)
		want []string
	}{
		"valid": {edit: func(*tkestackv1.TApp) {}},
		"negative replicas": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Replicas = -1 },
			want: []string{"FieldValueInvalid spec.replicas"},
		},
		"zero replicas": {edit: func(a *tkestackv1.TApp) { a.Spec.Replicas = 0 }},
		"missing selector": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Selector = nil },
			want: []string{"FieldValueRequired spec.selector"},
		},
		"empty selector": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Selector = &metav1.LabelSelector{} },
			want: []string{"FieldValueInvalid spec.selector"},
		},
		"invalid selector": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}
			},
			want: []string{"FieldValueInvalid spec.selector.matchExpressions[0].operator"},
		},
		"selector with expressions matching": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}}
			},
		},
		"selector does not match spec.template": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Template.Labels = map[string]string{"app": "other"} },
			want: []string{"FieldValueInvalid spec.template.metadata.labels"},
		},
		"selector does not match a pool template": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.TemplatePool["unused"] = corev1.PodTemplateSpec{Spec: tappPodTemplate("x").Spec}
			},
			want: []string{"FieldValueInvalid spec.templatePool[unused].metadata.labels"},
		},
		"an empty spec.template unused by any instance": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.Template = corev1.PodTemplateSpec{}
				a.Spec.DefaultTemplateName = "canary"
			},
		},
		"empty pool key": {
			edit: func(a *tkestackv1.TApp) { a.Spec.TemplatePool[""] = tappPodTemplate("x") },
			want: []string{"FieldValueInvalid spec.templatePool[]"},
		},
		"pool key of 254 characters": {
			edit: func(a *tkestackv1.TApp) { a.Spec.TemplatePool[strings.Repeat("t", 254)] = tappPodTemplate("x") },
			want: []string{"FieldValueTooLong spec.templatePool[" + strings.Repeat("t", 254) + "]"},
		},
		"pool key of 253 characters": {
			edit: func(a *tkestackv1.TApp) { a.Spec.TemplatePool[strings.Repeat("t", 253)] = tappPodTemplate("x") },
		},
		"pool key default is allowed": {
			edit: func(a *tkestackv1.TApp) { a.Spec.TemplatePool["default"] = tappPodTemplate("x") },
		},
		"templates: ids 0 and 2147483646, ids above replicas, names default and canary": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.Templates = map[string]string{"0": "default", "7": "canary", "2147483646": "canary"}
			},
		},
		"templates: non-canonical ids": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.Templates = map[string]string{"017": "canary", "+1": "canary", "-1": "canary",
					" 1":         "canary", //nolint:gocritic // a key with a space is the point
					"2147483647": "canary", "x": "canary", "": "canary"}
			},
			want: []string{
				"FieldValueInvalid spec.templates[]", "FieldValueInvalid spec.templates[ 1]",
				"FieldValueInvalid spec.templates[+1]", "FieldValueInvalid spec.templates[-1]",
				"FieldValueInvalid spec.templates[017]", "FieldValueInvalid spec.templates[2147483647]",
				"FieldValueInvalid spec.templates[x]",
			},
		},
		"templates: empty name": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Templates = map[string]string{"1": ""} },
			want: []string{"FieldValueRequired spec.templates[1]"},
		},
		"templates: unresolvable name": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Templates = map[string]string{"3": "missing"} },
			want: []string{"FieldValueNotFound spec.templates[3]"},
		},
		"statuses: Killed and Running": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": tkestackv1.InstanceKilled, "5": tkestackv1.InstanceRunning}
			},
		},
		"statuses: other values": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": tkestackv1.InstancePending, "2": "killed"}
			},
			want: []string{"FieldValueNotSupported spec.statuses[1]", "FieldValueNotSupported spec.statuses[2]"},
		},
		"statuses: non-canonical id": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"01": tkestackv1.InstanceKilled}
			},
			want: []string{"FieldValueInvalid spec.statuses[01]"},
		},
		"defaultTemplateName unresolvable": {
			edit: func(a *tkestackv1.TApp) { a.Spec.DefaultTemplateName = "missing" },
			want: []string{"FieldValueNotFound spec.defaultTemplateName"},
		},
		"defaultTemplateName empty means default": {
			edit: func(a *tkestackv1.TApp) { a.Spec.DefaultTemplateName = "" },
		},
		"DefaultTemplateName (compat, not defaulted) unresolvable": {
			edit: func(a *tkestackv1.TApp) { a.Spec.DefaultTemplateNameCompat = "missing" },
			want: []string{"FieldValueNotFound spec.DefaultTemplateName"},
		},
		"DefaultTemplateName (compat, not defaulted) resolvable": {
			edit: func(a *tkestackv1.TApp) { a.Spec.DefaultTemplateNameCompat = "canary" },
		},
		"updateStrategy.template unresolvable": {
			edit: func(a *tkestackv1.TApp) { a.Spec.UpdateStrategy.Template = "missing" },
			want: []string{"FieldValueNotFound spec.updateStrategy.template"},
		},
		"updateStrategy.template resolvable": {
			edit: func(a *tkestackv1.TApp) { a.Spec.UpdateStrategy.Template = "canary" },
		},
		"spec.template without containers while default is used": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Template.Spec.Containers = nil },
			want: []string{"FieldValueRequired spec.template.spec.containers"},
		},
		"spec.template without containers used only by updateStrategy.template": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.Template.Spec.Containers = nil
				a.Spec.DefaultTemplateName = "canary"
				a.Spec.UpdateStrategy.Template = "default"
			},
			want: []string{"FieldValueRequired spec.template.spec.containers"},
		},
		"forceUpdate.maxUnavailable invalid": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.UpdateStrategy.ForceUpdate.MaxUnavailable = new(intstr.FromString("0%"))
			},
			want: []string{"FieldValueInvalid spec.updateStrategy.forceUpdate.maxUnavailable"},
		},
		"maxUnavailable nil (not defaulted)": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.UpdateStrategy.MaxUnavailable = nil
				a.Spec.UpdateStrategy.ForceUpdate.MaxUnavailable = nil
			},
		},
		"volumeClaimTemplates valid": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim("data"), claim("logs")}
			},
		},
		"volumeClaimTemplates: empty, invalid and duplicate names": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim(""), claim("Data"), claim("logs"), claim("logs")}
			},
			want: []string{
				"FieldValueRequired spec.volumeClaimTemplates[0].metadata.name",
				"FieldValueInvalid spec.volumeClaimTemplates[1].metadata.name",
				"FieldValueDuplicate spec.volumeClaimTemplates[3].metadata.name",
			},
		},
		"volumeClaimTemplates: PVC name of the last id longer than 253": {
			edit: func(a *tkestackv1.TApp) {
				a.Name = strings.Repeat("w", 240)
				a.Spec.Replicas = 10 // data-<240>-9 = 5+240+2 = 247; logs-of-a-long-name-<240>-9 > 253
				a.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim("data"), claim("logs-of-a-long-name")}
			},
			want: []string{"FieldValueInvalid spec.volumeClaimTemplates[1].metadata.name"},
		},
		"serviceName valid": {
			edit: func(a *tkestackv1.TApp) { a.Spec.ServiceName = "nginx" },
		},
		"serviceName not a DNS label": {
			edit: func(a *tkestackv1.TApp) { a.Spec.ServiceName = "Nginx_svc" },
			want: []string{"FieldValueInvalid spec.serviceName"},
		},
		"serviceName with a hostname of 64 characters": {
			edit: func(a *tkestackv1.TApp) {
				a.Name = strings.Repeat("w", 61)
				a.Spec.Replicas = 11 // w{61}-10
				a.Spec.ServiceName = "nginx"
			},
			want: []string{"FieldValueInvalid spec.serviceName"},
		},
		"serviceName with a hostname of 63 characters": {
			edit: func(a *tkestackv1.TApp) {
				a.Name = strings.Repeat("w", 61)
				a.Spec.Replicas = 10 // w{61}-9
				a.Spec.ServiceName = "nginx"
			},
		},
		"long name without serviceName": {
			edit: func(a *tkestackv1.TApp) { a.Name = strings.Repeat("w", 100) },
		},
		"negative minReadySeconds": {
			edit: func(a *tkestackv1.TApp) { a.Spec.MinReadySeconds = -1 },
			want: []string{"FieldValueInvalid spec.minReadySeconds"},
		},
		"retention policy values": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.PersistentVolumeClaimRetentionPolicy = &tkestackv1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: "Keep", WhenScaled: "delete"}
			},
			want: []string{
				"FieldValueNotSupported spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
				"FieldValueNotSupported spec.persistentVolumeClaimRetentionPolicy.whenScaled",
			},
		},
		"retention policy valid": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.PersistentVolumeClaimRetentionPolicy = &tkestackv1.PersistentVolumeClaimRetentionPolicy{
					WhenDeleted: tkestackv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: tkestackv1.DeletePersistentVolumeClaimRetentionPolicyType}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := ValidateTApp(makeTApp(tc.edit), nil)
			if diff := cmp.Diff(tc.want, testutil.ErrorSummary(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, errs)
			}
		})
	}
}

func claim(name string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestValidateMaxUnavailable(t *testing.T) {
	tests := map[string]struct {
		value intstr.IntOrString
		valid bool
	}{
		"1":           {intstr.FromInt32(1), true},
		"above D":     {intstr.FromInt32(1000), true},
		"0":           {intstr.FromInt32(0), false},
		"-1":          {intstr.FromInt32(-1), false},
		"1%":          {intstr.FromString("1%"), true},
		"50%":         {intstr.FromString("50%"), true},
		"100%":        {intstr.FromString("100%"), true},
		"0%":          {intstr.FromString("0%"), false},
		"101%":        {intstr.FromString("101%"), false},
		"huge %":      {intstr.FromString("99999999999999999999999%"), false},
		"-5%":         {intstr.FromString("-5%"), false},
		"5 as string": {intstr.FromString("5"), false},
		"abc":         {intstr.FromString("abc"), false},
		"empty":       {intstr.FromString(""), false},
		"5 %":         {intstr.FromString("5 %"), false},
		"5.5%":        {intstr.FromString("5.5%"), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			app := makeTApp(func(a *tkestackv1.TApp) { a.Spec.UpdateStrategy.MaxUnavailable = new(tc.value) })
			var want []string
			if !tc.valid {
				want = []string{"FieldValueInvalid spec.updateStrategy.maxUnavailable"}
			}
			if diff := cmp.Diff(want, testutil.ErrorSummary(ValidateTApp(app, nil))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateTAppAccumulates(t *testing.T) {
	app := makeTApp(func(a *tkestackv1.TApp) {
		a.Spec.Replicas = -2
		a.Spec.Templates = map[string]string{"3": "missing"}
		a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": "Stopped"}
		a.Spec.UpdateStrategy.MaxUnavailable = new(intstr.FromString("abc"))
		a.Spec.UpdateStrategy.ForceUpdate.MaxUnavailable = new(intstr.FromInt32(0))
		a.Spec.ServiceName = "Bad"
	})
	want := []string{
		"spec.replicas", "spec.templates[3]", "spec.statuses[1]", "spec.updateStrategy.maxUnavailable",
		"spec.updateStrategy.forceUpdate.maxUnavailable", "spec.serviceName",
	}
	_, err := Validator{}.ValidateCreate(context.Background(), app)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error = %v, want a 422 Invalid", err)
	}
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusUnprocessableEntity {
		t.Errorf("error %v is not a 422", err)
	}
	if diff := cmp.Diff(want, testutil.CauseFields(err)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}

func TestValidateTAppRatchets(t *testing.T) {
	// stored is an object that got past validation (stored under TKEStack, or with the webhook absent).
	stored := func() *tkestackv1.TApp {
		return makeTApp(func(a *tkestackv1.TApp) {
			a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": tkestackv1.InstancePending}
			a.Spec.UpdateStrategy.MaxUnavailable = new(intstr.FromInt32(0))
			a.Spec.TemplatePool["stray"] = corev1.PodTemplateSpec{Spec: tappPodTemplate("x").Spec}
		})
	}
	tests := map[string]struct {
		edit func(*tkestackv1.TApp)
		want []string
	}{
		"unchanged violations do not block an unrelated change": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Replicas = 5 },
		},
		"a changed statuses entry is checked": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Statuses["1"] = "Stopped" },
			want: []string{"FieldValueNotSupported spec.statuses[1]"},
		},
		"a new statuses entry is checked, the old one is not": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Statuses["2"] = "Stopped" },
			want: []string{"FieldValueNotSupported spec.statuses[2]"},
		},
		"fixing a violation is allowed": {
			edit: func(a *tkestackv1.TApp) { a.Spec.Statuses = nil },
		},
		"a changed budget is checked": {
			edit: func(a *tkestackv1.TApp) { a.Spec.UpdateStrategy.MaxUnavailable = new(intstr.FromString("abc")) },
			want: []string{"FieldValueInvalid spec.updateStrategy.maxUnavailable"},
		},
		"a changed pool template that still does not match is checked": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.TemplatePool["stray"] = corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}}, Spec: tappPodTemplate("x").Spec}
			},
			want: []string{"FieldValueInvalid spec.templatePool[stray].metadata.labels"},
		},
		"selector immutability is never ratcheted": {
			edit: func(a *tkestackv1.TApp) {
				a.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "x"}}
				for _, t := range []*corev1.PodTemplateSpec{&a.Spec.Template} {
					t.Labels["tier"] = "x"
				}
			},
			// The pool templates no longer match: those errors are new too.
			want: []string{
				"FieldValueInvalid spec.templatePool[canary].metadata.labels",
				"FieldValueInvalid spec.templatePool[stray].metadata.labels",
				"FieldValueForbidden spec.selector",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			newApp := stored()
			tc.edit(newApp)
			if diff := cmp.Diff(tc.want, testutil.ErrorSummary(ValidateTApp(newApp, stored()))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateTAppSelectorImmutable(t *testing.T) {
	other := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: metav1.LabelSelectorOpExists}}}
	tests := map[string]struct {
		old, new *metav1.LabelSelector
		want     []string
	}{
		"unchanged":                     {old: makeTApp().Spec.Selector, new: makeTApp().Spec.Selector},
		"set for the first time":        {old: nil, new: makeTApp().Spec.Selector},
		"changed":                       {old: makeTApp().Spec.Selector, new: other, want: []string{"FieldValueForbidden spec.selector"}},
		"removed":                       {old: makeTApp().Spec.Selector, new: nil, want: []string{"FieldValueRequired spec.selector", "FieldValueForbidden spec.selector"}},
		"nil and empty maps are equal":  {old: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{}}, new: makeTApp().Spec.Selector},
		"still missing (ratcheted)":     {old: nil, new: nil},
		"changed while old was invalid": {old: &metav1.LabelSelector{}, new: makeTApp().Spec.Selector, want: []string{"FieldValueForbidden spec.selector"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			oldApp := makeTApp(func(a *tkestackv1.TApp) { a.Spec.Selector = tc.old })
			newApp := makeTApp(func(a *tkestackv1.TApp) { a.Spec.Selector = tc.new })
			if diff := cmp.Diff(tc.want, testutil.ErrorSummary(ValidateTApp(newApp, oldApp))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTAppWarnings(t *testing.T) {
	app := makeTApp(func(a *tkestackv1.TApp) {
		a.Spec.Template.Labels[tkestackv1.TAppInstanceKey] = "0"
		a.Spec.TemplatePool["default"] = tappPodTemplate("x")
		a.Spec.TemplatePool["canary"].Labels[tkestackv1.TAppHashKey] = "h"
		a.Spec.TemplatePool["canary"].Labels[tkestackv1.TAppUniqHashKey] = "u"
	})
	got := Warnings(app)
	want := []string{
		"spec.template.metadata.labels[tapp_instance_key]: drover sets this label on every pod; the template's value is replaced",
		"spec.templatePool[canary].metadata.labels[tapp_template_hash_key]: drover sets this label on every pod; the template's value is replaced",
		"spec.templatePool[canary].metadata.labels[tapp_uniq_hash_key]: drover sets this label on every pod; the template's value is replaced",
		"spec.templatePool[default]: this template is never used: the name \"default\" always stands for spec.template",
	}
	if diff := cmp.Diff(want, []string(got)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if w := Warnings(makeTApp()); len(w) != 0 {
		t.Errorf("warnings for a plain TApp: %v", w)
	}
	// An updateStrategy.template stored before, naming a template since removed, is kept on update (ratcheted)
	// with a warning that says what it means.
	stale := makeTApp(func(a *tkestackv1.TApp) { a.Spec.UpdateStrategy.Template = "removed" })
	if errs := ValidateTApp(stale, stale); len(errs) > 0 {
		t.Errorf("an unchanged stale updateStrategy.template blocks the update: %v", errs)
	}
	if w := Warnings(stale); len(w) != 1 || !strings.Contains(w[0], `spec.updateStrategy.template: template "removed" does not exist, so no instance is on the rolling path`) {
		t.Errorf("warnings for a stale updateStrategy.template: %q", w)
	}
	// Warnings come with the validation result, also when the object is valid.
	w, err := Validator{}.ValidateUpdate(context.Background(), app, app)
	if err != nil || len(w) != len(want) {
		t.Errorf("ValidateUpdate = %v, %v; want %d warnings and no error", w, err, len(want))
	}
}

func TestTAppValidatorDelete(t *testing.T) {
	bad := makeTApp(func(a *tkestackv1.TApp) { a.Spec.Replicas = -1 })
	if w, err := (Validator{}).ValidateDelete(context.Background(), bad); err != nil || w != nil {
		t.Errorf("ValidateDelete = %v, %v; want allowed", w, err)
	}
}
