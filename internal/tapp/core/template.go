package core

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// Template is a resolved template with its hashes, computed once per pass.
type Template struct {
	// Name is the template name: "default" for spec.template, else the templatePool key.
	Name string
	// Spec is the template itself. It is shared with the TApp and MUST NOT be modified.
	Spec *corev1.PodTemplateSpec
	// Hash and uniqHash are the values of the tapp_template_hash_key and tapp_uniq_hash_key pod labels.
	Hash, UniqHash string
	// Rolling is true when Name is the rolling template name: its instances are updated under
	// maxUnavailable, all others under forceUpdate.maxUnavailable.
	Rolling bool
	// MatchesSelector is false when the template's labels do not match the effective selector: pods of it
	// would be released at once, so its ids are neither created nor updated to it.
	MatchesSelector bool
}

// Settings is the TApp spec with the webhook's defaults applied in memory (never written back except
// the derived selector) and the controller's own validation applied (the webhook may be bypassed).
type Settings struct {
	// DefaultTemplateName is the effective default template name (compat alias folded, "default" when empty).
	DefaultTemplateName string
	// RollingTemplateName is updateStrategy.template, else DefaultTemplateName.
	RollingTemplateName string
	// MaxUnavailable and ForceMaxUnavailable are the valid budgets (defaults replace absent or invalid ones).
	MaxUnavailable, ForceMaxUnavailable intstr.IntOrString
	// Paused is updateStrategy.paused.
	Paused bool
	// DeletePodAfterAppFinish is spec.deletePodAfterAppFinish, else the manager default.
	DeletePodAfterAppFinish bool
	// MinReadySeconds is spec.minReadySeconds (negative values read as 0).
	MinReadySeconds int32
	// Retention is the PVC retention policy with absent members defaulted.
	Retention tkestackv1.PersistentVolumeClaimRetentionPolicy
	// Selector is the effective selector; nil when it is invalid (then Blocked is true).
	Selector *metav1.LabelSelector
	// SelectorDerived is true when spec.selector was nil and Selector was derived from spec.template's
	// labels: the reconciler persists it once.
	SelectorDerived bool
	// Blocked is true when the spec is invalid in a way that forbids every pod write: no usable
	// selector. Status is still computed and written.
	Blocked bool
	// Deleting is true when the TApp has a deletionTimestamp: no creates, updates or deletes (GC does the
	// rest); only force deletes of pods on lost nodes.
	Deleting bool
	// Killed holds the ids whose spec.statuses entry is Killed (canonical keys only).
	Killed map[int]bool
}

// Options are the manager-level settings of the TApp controller: the inputs of every pass
// (DeletePodAfterAppFinish, the only field NewPass reads) and the controller's concurrency (Setup).
type Options struct {
	// DeletePodAfterAppFinish is the manager's --tapp-delete-pod-after-app-finish default, used when
	// spec.deletePodAfterAppFinish is nil.
	DeletePodAfterAppFinish bool
	// ConcurrentReconciles is the number of TApps reconciled at once (--tapp-workers).
	ConcurrentReconciles int
	// PodWriteConcurrency bounds the pod and PVC writes of one pass in flight (--tapp-pod-write-concurrency;
	// DefaultPodWriteConcurrency when not positive).
	PodWriteConcurrency int
}

// scaleLabelSelector renders a selector for status.scaleLabelSelector (keys sorted, as Kubernetes renders
// labels.Selector); empty for nil or invalid selectors.
func scaleLabelSelector(sel *metav1.LabelSelector) string {
	if sel == nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return ""
	}
	return s.String()
}

// settingsOf computes the Settings of a TApp and the spec-level issues found.
func settingsOf(app *tkestackv1.TApp, opts Options) (Settings, []Issue) {
	spec := &app.Spec
	s := Settings{
		DefaultTemplateName: spec.EffectiveDefaultTemplateName(),
		RollingTemplateName: spec.RollingTemplateName(),
		Paused:              spec.UpdateStrategy.Paused,
		MinReadySeconds:     max(spec.MinReadySeconds, 0),
		Retention:           spec.EffectivePVCRetentionPolicy(),
		Deleting:            app.DeletionTimestamp != nil,
		Killed:              map[int]bool{},
	}
	s.DeletePodAfterAppFinish = opts.DeletePodAfterAppFinish
	if spec.DeletePodAfterAppFinish != nil {
		s.DeletePodAfterAppFinish = *spec.DeletePodAfterAppFinish
	}
	var issues []Issue
	s.MaxUnavailable, issues = budgetOrDefault(spec.UpdateStrategy.MaxUnavailable, tkestackv1.DefaultMaxUnavailable,
		"spec.updateStrategy.maxUnavailable", issues)
	s.ForceMaxUnavailable, issues = budgetOrDefault(spec.UpdateStrategy.ForceUpdate.MaxUnavailable,
		tkestackv1.DefaultForceUpdateMaxUnavailable, "spec.updateStrategy.forceUpdate.maxUnavailable", issues)
	for _, key := range slices.Sorted(maps.Keys(spec.Statuses)) {
		id, ok := tkestackv1.ParseInstanceID(key)
		switch {
		case !ok:
			issues = append(issues, invalidSpec(fmt.Sprintf("spec.statuses[%s]", key), "key is not a canonical instance id; ignored"))
		case spec.Statuses[key] == tkestackv1.InstanceKilled:
			s.Killed[id] = true
		case spec.Statuses[key] != tkestackv1.InstanceRunning:
			issues = append(issues, invalidSpec(fmt.Sprintf("spec.statuses[%s]", key),
				fmt.Sprintf("unknown value %q; the instance is run", spec.Statuses[key])))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(spec.Templates)) {
		if _, ok := tkestackv1.ParseInstanceID(key); !ok {
			issues = append(issues, invalidSpec(fmt.Sprintf("spec.templates[%s]", key), "key is not a canonical instance id; ignored"))
		}
	}
	return s, issues
}

func budgetOrDefault(v *intstr.IntOrString, def intstr.IntOrString, path string, issues []Issue) (intstr.IntOrString, []Issue) {
	if v == nil {
		return def, issues
	}
	if errs := tkestackv1.ValidateBudget(v, nil); len(errs) > 0 {
		return def, append(issues, invalidSpec(path, fmt.Sprintf("invalid budget %q (%s); using %q", v.String(), errs[0].Detail, def.String())))
	}
	return *v, issues
}

func invalidSpec(subject, message string) Issue {
	return Issue{Reason: tkestackv1.ReasonInvalidSpec, Subject: subject, Message: subject + ": " + message}
}

// selectorOf returns the effective selector: spec.selector, else derived from spec.template.
// Invalid means: none derivable, unparsable, empty, or matching no template.
func selectorOf(spec *tkestackv1.TAppSpec) (sel *metav1.LabelSelector, derived bool, issue *Issue) {
	eff, errs := spec.EffectiveSelector(field.NewPath("spec", "selector"))
	if len(errs) > 0 {
		is := invalidSpec("spec.selector", errs[0].ErrorBody())
		return nil, false, &is
	}
	return eff.LabelSelector, eff.Derived, nil
}

// resolveTemplates resolves and hashes spec.template and every usable templatePool entry once.
func resolveTemplates(spec *tkestackv1.TAppSpec, rolling string, sel labels.Selector) (map[string]*Template, []Issue) {
	out := map[string]*Template{}
	var issues []Issue
	add := func(name string, tpl *corev1.PodTemplateSpec) {
		hash, err := templateHash(tpl)
		uniq, err2 := uniqHash(tpl)
		if err != nil || err2 != nil {
			issues = append(issues, invalidSpec("template "+name, fmt.Sprintf("cannot be hashed: %v %v", err, err2)))
			return
		}
		out[name] = &Template{
			Name: name, Spec: tpl, Hash: hash, UniqHash: uniq, Rolling: name == rolling,
			MatchesSelector: sel != nil && sel.Matches(labels.Set(tpl.Labels)),
		}
	}
	add(tkestackv1.DefaultTemplateName, &spec.Template)
	for _, name := range slices.Sorted(maps.Keys(spec.TemplatePool)) {
		if tpl, ok := spec.TemplateByName(name); ok && name != tkestackv1.DefaultTemplateName {
			add(name, tpl)
		}
	}
	return out, issues
}

// UnusedTemplates returns the templatePool entries autoDeleteUnusedTemplate removes, sorted: all but
// those named by a value of spec.templates (any id), by the effective defaultTemplateName (when not
// "default") or by a non-empty updateStrategy.template.
func UnusedTemplates(spec *tkestackv1.TAppSpec) []string {
	keep := map[string]bool{}
	if name := spec.EffectiveDefaultTemplateName(); name != tkestackv1.DefaultTemplateName {
		keep[name] = true
	}
	if name := spec.UpdateStrategy.Template; name != "" {
		keep[name] = true
	}
	for _, name := range spec.Templates {
		keep[name] = true
	}
	var unused []string
	for name := range spec.TemplatePool {
		if !keep[name] {
			unused = append(unused, name)
		}
	}
	slices.Sort(unused)
	return unused
}

// budgetValue resolves a valid budget against d desired-running instances (the API's rule: an int as given,
// a percentage of d rounded up); an invalid budget resolves to 0.
func budgetValue(v intstr.IntOrString, d int) int {
	n, _ := tkestackv1.ResolveBudget(v, d)
	return n
}
