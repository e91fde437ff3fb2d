package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

// PlaceholderPoolName is the pool the tweak validation (and the webhook's dry run) renders the template for.
const PlaceholderPoolName = "placeholder"

// ValidateSpec applies the webhook's pure structural rules (no dry run, no name length, no cross-kind, no
// immutability) with field paths rooted at fldPath (normally field.NewPath("spec")). The tweak rules include
// checking that each patch applies to the template rendered for a placeholder pool.
func ValidateSpec(spec *openyurtv1alpha1.YurtAppDaemonSpec, fldPath *field.Path) field.ErrorList {
	errs := ValidateRenderable(spec, fldPath)
	if spec == nil {
		return errs
	}
	// revisionHistoryLimit ≥ 0, and no pool key in the template's nodeSelector (the controller sets it).
	if spec.RevisionHistoryLimit != nil && *spec.RevisionHistoryLimit < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("revisionHistoryLimit"), *spec.RevisionHistoryLimit,
			"must be greater than or equal to 0"))
	}
	if pod, path := podTemplate(spec, fldPath); pod != nil {
		if _, ok := pod.Spec.NodeSelector[openyurtv1beta1.LabelCurrentNodePool]; ok {
			errs = append(errs, field.Forbidden(path.Child("spec", "nodeSelector"),
				fmt.Sprintf("the key %s is set by the controller to each child's pool", openyurtv1beta1.LabelCurrentNodePool)))
		}
	}
	return errs
}

// ValidateRenderable applies the rules the controller checks before it renders: ValidateSpec without the
// revisionHistoryLimit and nodeSelector rules (a negative revisionHistoryLimit counts as 0 there, and a
// template nodeSelector with the pool key is simply overridden).
func ValidateRenderable(spec *openyurtv1alpha1.YurtAppDaemonSpec, fldPath *field.Path) field.ErrorList {
	if spec == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	// Exactly one template member.
	tmplPath := fldPath.Child("workloadTemplate")
	switch {
	case spec.WorkloadTemplate.DeploymentTemplate == nil && spec.WorkloadTemplate.StatefulSetTemplate == nil:
		errs = append(errs, field.Required(tmplPath, "one of statefulSetTemplate and deploymentTemplate must be set"))
	case spec.WorkloadTemplate.DeploymentTemplate != nil && spec.WorkloadTemplate.StatefulSetTemplate != nil:
		errs = append(errs, field.Invalid(tmplPath, "statefulSetTemplate, deploymentTemplate",
			"only one of statefulSetTemplate and deploymentTemplate may be set"))
	}
	// A valid, non-empty selector without the pool-name key.
	selector, selErrs := validateSelector(spec.Selector, fldPath.Child("selector"), true)
	errs = append(errs, selErrs...)
	if spec.Selector != nil && hasPoolKey(spec.Selector) {
		errs = append(errs, field.Forbidden(fldPath.Child("selector"),
			fmt.Sprintf("the key %s is set by the controller to each child's pool", openyurtv1alpha1.LabelPoolName)))
	}
	// The selector matches the pod labels.
	errs = append(errs, validatePodLabels(spec, selector, fldPath)...)
	// A valid nodepoolSelector.
	_, npErrs := validateSelector(spec.NodePoolSelector, fldPath.Child("nodepoolSelector"), false)
	errs = append(errs, npErrs...)
	// Well-formed tweaks.
	placeholder := &placeholderRender{spec: spec}
	for i := range spec.WorkloadTweaks {
		errs = append(errs, validateTweak(spec, i, fldPath.Child("workloadTweaks").Index(i), placeholder)...)
	}
	return errs
}

// validateSelector checks that sel is present, valid and convertible (and non-empty when nonEmpty). It
// returns the converted selector, or nil when there are errors.
func validateSelector(sel *metav1.LabelSelector, path *field.Path, nonEmpty bool) (labels.Selector, field.ErrorList) {
	if sel == nil {
		return nil, field.ErrorList{field.Required(path, "")}
	}
	if nonEmpty && len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return nil, field.ErrorList{field.Invalid(path, sel, "empty selector is invalid for a workload")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(errs) > 0 {
		return nil, errs
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(path, sel, err.Error())}
	}
	return s, nil
}

func hasPoolKey(sel *metav1.LabelSelector) bool {
	if _, ok := sel.MatchLabels[openyurtv1alpha1.LabelPoolName]; ok {
		return true
	}
	return slices.ContainsFunc(sel.MatchExpressions, func(r metav1.LabelSelectorRequirement) bool {
		return r.Key == openyurtv1alpha1.LabelPoolName
	})
}

// podTemplate returns the pod template of the spec's only template member and its path, or nil.
func podTemplate(spec *openyurtv1alpha1.YurtAppDaemonSpec, fldPath *field.Path) (*corev1.PodTemplateSpec, *field.Path) {
	path := fldPath.Child("workloadTemplate")
	switch spec.TemplateType() {
	case openyurtv1alpha1.DeploymentTemplateType:
		return &spec.WorkloadTemplate.DeploymentTemplate.Spec.Template,
			path.Child("deploymentTemplate", "spec", "template")
	case openyurtv1alpha1.StatefulSetTemplateType:
		return &spec.WorkloadTemplate.StatefulSetTemplate.Spec.Template,
			path.Child("statefulSetTemplate", "spec", "template")
	default:
		return nil, nil
	}
}

// validatePodLabels checks that the selector matches the pod labels, which do not use the pool-name key.
func validatePodLabels(spec *openyurtv1alpha1.YurtAppDaemonSpec, selector labels.Selector, fldPath *field.Path) field.ErrorList {
	pod, path := podTemplate(spec, fldPath)
	if pod == nil {
		return nil
	}
	path = path.Child("metadata", "labels")
	var errs field.ErrorList
	if selector != nil && !selector.Matches(labels.Set(pod.Labels)) {
		errs = append(errs, field.Invalid(path, pod.Labels, "`selector` does not match template `labels`"))
	}
	if _, ok := pod.Labels[openyurtv1alpha1.LabelPoolName]; ok {
		errs = append(errs, field.Forbidden(path,
			fmt.Sprintf("the key %s is set by the controller to each child's pool", openyurtv1alpha1.LabelPoolName)))
	}
	return errs
}

// validateTweak checks tweak i: pools or a valid nodepoolSelector, label-value pool names, replicas ≥ 0,
// known image names, and patches that apply to the placeholder pool's child.
func validateTweak(spec *openyurtv1alpha1.YurtAppDaemonSpec, i int, path *field.Path, placeholder *placeholderRender) field.ErrorList {
	t := &spec.WorkloadTweaks[i]
	var errs field.ErrorList
	if len(t.Pools) == 0 && t.NodePoolSelector == nil {
		errs = append(errs, field.Required(path, "a tweak needs pools or nodepoolSelector"))
	}
	if t.NodePoolSelector != nil {
		_, selErrs := validateSelector(t.NodePoolSelector, path.Child("nodepoolSelector"), false)
		errs = append(errs, selErrs...)
	}
	for j, p := range t.Pools {
		msgs := validation.IsValidLabelValue(p)
		if p == "" {
			msgs = append(msgs, "must not be empty")
		}
		if len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Child("pools").Index(j), p, strings.Join(msgs, "; ")))
		}
	}
	tp := path.Child("tweaks")
	if r := t.Tweaks.Replicas; r != nil && *r < 0 {
		errs = append(errs, field.Invalid(tp.Child("replicas"), *r, "must be greater than or equal to 0"))
	}
	errs = append(errs, validateImages(spec, t.Tweaks.ContainerImages, tp.Child("containerImages"))...)
	patchErrs := validatePatches(t.Tweaks.Patches, tp.Child("patches"))
	errs = append(errs, patchErrs...)
	if len(patchErrs) == 0 && len(t.Tweaks.Patches) > 0 && spec.TemplateType() != "" {
		errs = append(errs, placeholder.patchesApply(i, tp.Child("patches"))...)
	}
	return errs
}

func validateImages(spec *openyurtv1alpha1.YurtAppDaemonSpec, images []openyurtv1alpha1.ContainerImage, path *field.Path) field.ErrorList {
	var names []string
	if pod, _ := podTemplate(spec, field.NewPath("spec")); pod != nil {
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		for _, c := range pod.Spec.InitContainers {
			names = append(names, c.Name)
		}
	}
	var errs field.ErrorList
	for j, img := range images {
		p := path.Index(j)
		switch {
		case img.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case spec.TemplateType() != "" && !slices.Contains(names, img.Name):
			errs = append(errs, field.NotFound(p.Child("name"), img.Name))
		}
		if img.TargetImage == "" {
			errs = append(errs, field.Required(p.Child("targetImage"), ""))
		}
	}
	return errs
}

var supportedOps = []string{string(openyurtv1alpha1.PatchAdd), string(openyurtv1alpha1.PatchRemove), string(openyurtv1alpha1.PatchReplace)}

func validatePatches(patches []openyurtv1alpha1.Patch, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j := range patches {
		p, pp := &patches[j], path.Index(j)
		if !slices.Contains(supportedOps, string(p.Operation)) {
			errs = append(errs, field.NotSupported(pp.Child("operation"), p.Operation, supportedOps))
		}
		if err := validatePointer(p.Path); err != nil {
			errs = append(errs, field.Invalid(pp.Child("path"), p.Path, err.Error()))
		} else if prot := protectedPrefix(p.Path); prot != "" {
			errs = append(errs, field.Forbidden(pp.Child("path"), fmt.Sprintf("%s is protected: the controller sets it", prot)))
		}
		if p.Operation == openyurtv1alpha1.PatchAdd || p.Operation == openyurtv1alpha1.PatchReplace {
			switch {
			case p.Value == nil || len(p.Value.Raw) == 0:
				errs = append(errs, field.Required(pp.Child("value"), fmt.Sprintf("%s needs a value", p.Operation)))
			case !json.Valid(p.Value.Raw):
				errs = append(errs, field.Invalid(pp.Child("value"), string(p.Value.Raw), "not valid JSON"))
			}
		}
	}
	return errs
}

// validatePointer checks an RFC 6901 JSON pointer. The empty pointer (the whole object) is not allowed.
func validatePointer(p string) error {
	if !strings.HasPrefix(p, "/") {
		return errors.New("must be a JSON pointer starting with /")
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 >= len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return errors.New("~ must be followed by 0 or 1")
		}
	}
	return nil
}

// protectedPrefix returns the protected path p equals or lies below, or "".
func protectedPrefix(p string) string {
	for _, prot := range protectedPaths {
		if p == prot || strings.HasPrefix(p, prot+"/") {
			return prot
		}
	}
	return ""
}

// placeholderTaint is the placeholder pool's one taint: rendering adds a toleration for it, so a patch of
// the tolerations drover adds for pool taints (e.g. "replace .../tolerations/0") can be checked.
var placeholderTaint = corev1.Taint{Key: "drover.dev/placeholder", Effect: corev1.TaintEffectNoSchedule}

// placeholderRender renders the template for the placeholder pool, for the tweak validation. Rendering
// applies every tweak matching a pool, in order, so a tweak that fails on its own is tried again after the
// earlier tweaks that apply: a patch that relies on an earlier tweak's add (".../env" then ".../env/-") is
// accepted. A pool that gets one tweak without the other then reports RenderFailed for itself alone. The
// child with the earlier tweaks applied is kept from one tweak to the next, so checking every tweak of a spec
// applies each tweak at most three times.
type placeholderRender struct {
	spec *openyurtv1alpha1.YurtAppDaemonSpec
	// base is the template rendered without tweaks; nil until first needed.
	base client.Object
	// upTo is base with the tweaks before next applied, leaving out those that fail.
	upTo client.Object
	next int
}

// copyOf returns a deep copy of obj: applying a tweak changes the object it is given, and a tweak that fails
// may have set images before its patches failed.
func copyOf(obj client.Object) client.Object {
	cp, _ := obj.DeepCopyObject().(client.Object)
	return cp
}

// render renders the template for the placeholder pool, once.
func (r *placeholderRender) render() {
	if r.base == nil {
		pool := Pool{Name: PlaceholderPoolName, Taints: []corev1.Taint{placeholderTaint}}
		in := Input{Owner: OwnerRef{Name: PlaceholderPoolName}, Spec: r.spec, Pool: pool}
		r.base = renderBase(in, r.spec.TemplateType())
		r.upTo = r.base
	}
}

// baseChild returns a copy of the template rendered for the placeholder pool.
func (r *placeholderRender) baseChild() client.Object {
	r.render()
	return copyOf(r.base)
}

// childBefore returns a copy of the child with the tweaks before i that apply applied; i never decreases
// from one call to the next.
func (r *placeholderRender) childBefore(i int) client.Object {
	r.render()
	for ; r.next < i; r.next++ {
		if next, err := applyTweak(copyOf(r.upTo), &r.spec.WorkloadTweaks[r.next], r.next, PlaceholderPoolName); err == nil {
			r.upTo = next
		}
	}
	return copyOf(r.upTo)
}

// patchesApply reports a patch of tweak i that applies neither to the template rendered for the placeholder
// pool nor after the earlier tweaks. Tweaks are checked in increasing order of i.
func (r *placeholderRender) patchesApply(i int, path *field.Path) field.ErrorList {
	t := &r.spec.WorkloadTweaks[i]
	_, err := applyTweak(r.baseChild(), t, i, PlaceholderPoolName)
	if err != nil && i > 0 {
		if _, after := applyTweak(r.childBefore(i), t, i, PlaceholderPoolName); after == nil {
			err = nil
		}
	}
	var te *tweakError
	if err == nil || !errors.As(err, &te) {
		return nil
	}
	if te.Patch < 0 {
		return field.ErrorList{field.Invalid(path, "", te.Err.Error())}
	}
	return field.ErrorList{field.Invalid(path.Index(te.Patch), t.Tweaks.Patches[te.Patch].Path,
		"does not apply to the rendered workload: "+te.Err.Error())}
}
