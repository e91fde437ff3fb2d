package tapp

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

const (
	// maxTemplateNameLength bounds the keys of spec.templatePool.
	maxTemplateNameLength = 253
	// maxPVCNameLength bounds <claim>-<tapp>-<id>, a DNS subdomain.
	maxPVCNameLength = 253
)

var (
	// desiredInstanceStatuses are the values spec.statuses accepts.
	desiredInstanceStatuses = []string{string(tkestackv1.InstanceKilled), string(tkestackv1.InstanceRunning)}
	// retentionPolicyTypes are the values of the PVC retention policy members.
	retentionPolicyTypes = []string{string(tkestackv1.RetainPersistentVolumeClaimRetentionPolicyType),
		string(tkestackv1.DeletePersistentVolumeClaimRetentionPolicyType)}
)

// ValidateTApp returns every field error of newApp; oldApp is nil on CREATE. On UPDATE a violation the
// old object already had, identically (same field, value and detail), does not block the update (ratcheting);
// selector immutability is never ratcheted.
func ValidateTApp(newApp, oldApp *tkestackv1.TApp) field.ErrorList {
	errs := validateTAppSpec(newApp)
	if oldApp == nil {
		return errs
	}
	if len(errs) > 0 {
		errs = ratchetTApp(errs, validateTAppSpec(oldApp))
	}
	if oldApp.Spec.Selector != nil && !equality.Semantic.DeepEqual(oldApp.Spec.Selector, newApp.Spec.Selector) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "selector"), "selector is immutable"))
	}
	return errs
}

// ratchetTApp drops from newErrs the errors present, identically, in oldErrs.
func ratchetTApp(newErrs, oldErrs field.ErrorList) field.ErrorList {
	old := sets.New[string]()
	for _, e := range oldErrs {
		old.Insert(e.Error())
	}
	return slices.DeleteFunc(newErrs, func(e *field.Error) bool { return old.Has(e.Error()) })
}

// validateTAppSpec checks every field of app's spec; the rules shared with the controller are the api
// package's (selector, budgets, instance ids).
func validateTAppSpec(app *tkestackv1.TApp) field.ErrorList {
	spec := &app.Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.Replicas < 0 {
		errs = append(errs, field.Invalid(path.Child("replicas"), spec.Replicas, "must be greater than or equal to 0"))
	}
	errs = append(errs, spec.ValidateSelector(path)...)
	errs = append(errs, validateTemplatePoolKeys(spec.TemplatePool, path.Child("templatePool"))...)
	errs = append(errs, validateTemplateReferences(spec, path)...)
	errs = append(errs, validateDesiredStatuses(spec.Statuses, path.Child("statuses"))...)
	errs = append(errs, tkestackv1.ValidateBudget(spec.UpdateStrategy.MaxUnavailable,
		path.Child("updateStrategy", "maxUnavailable"))...)
	errs = append(errs, tkestackv1.ValidateBudget(spec.UpdateStrategy.ForceUpdate.MaxUnavailable,
		path.Child("updateStrategy", "forceUpdate", "maxUnavailable"))...)
	errs = append(errs, validateVolumeClaimTemplates(app, path.Child("volumeClaimTemplates"))...)
	errs = append(errs, validateServiceName(app, path.Child("serviceName"))...)
	if spec.MinReadySeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("minReadySeconds"), spec.MinReadySeconds, "must be greater than or equal to 0"))
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		pp := path.Child("persistentVolumeClaimRetentionPolicy")
		if v := p.WhenDeleted; v != "" && !slices.Contains(retentionPolicyTypes, string(v)) {
			errs = append(errs, field.NotSupported(pp.Child("whenDeleted"), v, retentionPolicyTypes))
		}
		if v := p.WhenScaled; v != "" && !slices.Contains(retentionPolicyTypes, string(v)) {
			errs = append(errs, field.NotSupported(pp.Child("whenScaled"), v, retentionPolicyTypes))
		}
	}
	return errs
}

// validateTemplatePoolKeys checks the names of the pool templates.
func validateTemplatePoolKeys(pool map[string]corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(pool) {
		switch {
		case name == "":
			errs = append(errs, field.Invalid(path.Key(name), name, "template names must not be empty"))
		case len(name) > maxTemplateNameLength:
			errs = append(errs, field.TooLong(path.Key(name), "", maxTemplateNameLength))
		}
	}
	return errs
}

// validateTemplateReferences checks every template name reference (templates values, defaultTemplateName,
// updateStrategy.template), the keys of templates, and that spec.template has a container when the name
// "default" is referenced.
func validateTemplateReferences(spec *tkestackv1.TAppSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var usesDefault []string
	resolve := func(name string, p *field.Path) {
		if name == tkestackv1.DefaultTemplateName {
			usesDefault = append(usesDefault, p.String())
			return
		}
		if _, ok := spec.TemplateByName(name); !ok {
			e := field.NotFound(p, name)
			e.Detail = "no such template in spec.templatePool (the name \"default\" stands for spec.template)"
			errs = append(errs, e)
		}
	}

	tp := path.Child("templates")
	for _, id := range sortedKeys(spec.Templates) {
		p := tp.Key(id)
		errs = append(errs, tkestackv1.ValidateInstanceID(id, p)...)
		if name := spec.Templates[id]; name == "" {
			errs = append(errs, field.Required(p, "a template name is required"))
		} else {
			resolve(name, p)
		}
	}
	dp := path.Child("defaultTemplateName")
	if spec.DefaultTemplateNameCompat != "" { // the mutating webhook was bypassed
		dp = path.Child("DefaultTemplateName")
	}
	resolve(spec.EffectiveDefaultTemplateName(), dp)
	if name := spec.UpdateStrategy.Template; name != "" {
		resolve(name, path.Child("updateStrategy", "template"))
	}
	if len(usesDefault) > 0 && len(spec.Template.Spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("template", "spec", "containers"),
			"at least one container is required: the template \"default\" is used by "+strings.Join(usesDefault, ", ")))
	}
	return errs
}

// validateDesiredStatuses checks the keys and values of spec.statuses.
func validateDesiredStatuses(statuses map[string]tkestackv1.InstanceStatus, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, id := range sortedKeys(statuses) {
		p := path.Key(id)
		errs = append(errs, tkestackv1.ValidateInstanceID(id, p)...)
		if v := statuses[id]; !slices.Contains(desiredInstanceStatuses, string(v)) {
			errs = append(errs, field.NotSupported(p, v, desiredInstanceStatuses))
		}
	}
	return errs
}

// validateVolumeClaimTemplates checks the claim names: unique DNS-1123 labels whose PVC names
// <claim>-<tapp>-<id> stay within 253 characters for every id below replicas.
func validateVolumeClaimTemplates(app *tkestackv1.TApp, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i := range app.Spec.VolumeClaimTemplates {
		name := app.Spec.VolumeClaimTemplates[i].Name
		p := path.Index(i).Child("metadata", "name")
		if name == "" {
			errs = append(errs, field.Required(p, "a claim name is required"))
			continue
		}
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
		if seen.Has(name) {
			errs = append(errs, field.Duplicate(p, name))
		}
		seen.Insert(name)
		if app.Name != "" && app.Spec.Replicas > 0 {
			id := app.Spec.Replicas - 1
			if pvc := fmt.Sprintf("%s-%s-%d", name, app.Name, id); len(pvc) > maxPVCNameLength {
				errs = append(errs, field.Invalid(p, name, fmt.Sprintf(
					"the PVC name of instance %d, %s-%s-%d, would be %d characters long, more than %d",
					id, name, app.Name, id, len(pvc), maxPVCNameLength)))
			}
		}
	}
	return errs
}

// validateServiceName checks serviceName and, when it is set, the pod hostnames <tapp>-<id> for every id below
// replicas: they must be DNS-1123 labels (at most 63 characters).
func validateServiceName(app *tkestackv1.TApp, path *field.Path) field.ErrorList {
	name := app.Spec.ServiceName
	if name == "" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if app.Name != "" && app.Spec.Replicas > 0 {
		id := app.Spec.Replicas - 1
		hostname := fmt.Sprintf("%s-%d", app.Name, id)
		for _, msg := range validation.IsDNS1123Label(hostname) {
			errs = append(errs, field.Invalid(path, name, fmt.Sprintf(
				"with a service name pods get the hostname <tapp>-<id>, and that of instance %d, %q, is invalid: %s",
				id, hostname, msg)))
		}
	}
	return errs
}

// Warnings returns the admission warnings: a pool template named "default" (never used), and
// templates that set the labels drover sets on every pod itself.
func Warnings(app *tkestackv1.TApp) admission.Warnings {
	var warnings admission.Warnings
	labelWarnings := func(t *corev1.PodTemplateSpec, p *field.Path) {
		for _, k := range sortedKeys(t.Labels) {
			if tkestackv1.IsTAppLabel(k) {
				warnings = append(warnings, fmt.Sprintf("%s: drover sets this label on every pod; the template's value is replaced",
					p.Child("metadata", "labels").Key(k)))
			}
		}
	}
	path := field.NewPath("spec")
	if name := app.Spec.UpdateStrategy.Template; name != "" {
		if _, ok := app.Spec.TemplateByName(name); !ok {
			// Only an object stored before (ratcheted by ValidateTApp) gets this far with such a value.
			warnings = append(warnings, fmt.Sprintf("%s: template %q does not exist, so no instance is on the rolling path "+
				"and every outdated instance is updated at spec.updateStrategy.forceUpdate.maxUnavailable, as upstream TApp did; "+
				"clear the field to roll the default template at spec.updateStrategy.maxUnavailable",
				path.Child("updateStrategy", "template"), name))
		}
	}
	labelWarnings(&app.Spec.Template, path.Child("template"))
	for _, name := range sortedKeys(app.Spec.TemplatePool) {
		p := path.Child("templatePool").Key(name)
		if name == tkestackv1.DefaultTemplateName {
			warnings = append(warnings, fmt.Sprintf("%s: this template is never used: the name %q always stands for spec.template",
				p, tkestackv1.DefaultTemplateName))
		}
		t := app.Spec.TemplatePool[name]
		labelWarnings(&t, p)
	}
	return warnings
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
