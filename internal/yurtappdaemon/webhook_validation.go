package yurtappdaemon

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/internal/webhook"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// maxOwnerNameLength keeps ControllerRevision names (<owner prefix>-<hash>) within a label value.
const maxOwnerNameLength = 52

// ValidateOwner returns every violation by newObj of the rules that need no client: the name length and
// the structural rules and, on UPDATE, the immutability rules. oldObj is nil on CREATE. The structural
// rules are the render package's, shared with the controller. On UPDATE the rules drover adds to OpenYurt's are ratcheted (see ratchet).
func ValidateOwner(newObj, oldObj openyurtv1alpha1.Owner) field.ErrorList {
	spec := field.NewPath("spec")
	if oldObj == nil {
		var errs field.ErrorList
		if name := newObj.GetName(); len(name) > maxOwnerNameLength {
			errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), name, maxOwnerNameLength))
		}
		return append(errs, render.ValidateSpec(newObj.DaemonSpec(), spec)...)
	}
	errs := render.ValidateSpec(newObj.DaemonSpec(), spec)
	if len(errs) > 0 {
		errs = ratchet(errs, render.ValidateSpec(oldObj.DaemonSpec(), spec), newObj, oldObj)
	}
	return append(errs, validateOwnerImmutable(newObj.DaemonSpec(), oldObj.DaemonSpec())...)
}

// validateOwnerImmutable applies the immutability rules: the selector, the template kind, and the
// StatefulSet fields Kubernetes forbids to change.
func validateOwnerImmutable(newSpec, oldSpec *openyurtv1alpha1.YurtAppDaemonSpec) field.ErrorList {
	var errs field.ErrorList
	tmplPath := field.NewPath("spec", "workloadTemplate")
	// The selector. Like the CRD rule (self == oldSelf), this binds only once a selector was stored: an object stored
	// without one (past the webhook) may get its first.
	if oldSpec.Selector != nil && !equality.Semantic.DeepEqual(newSpec.Selector, oldSpec.Selector) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "selector"), "selector is immutable"))
	}
	oldKind, newKind := oldSpec.TemplateType(), newSpec.TemplateType()
	switch {
	case oldKind == "" || newKind == "": // the structural rules report the new one; an old one without a kind binds nothing
	case oldKind != newKind: // the template kind cannot switch
		errs = append(errs, field.Forbidden(tmplPath,
			fmt.Sprintf("the template kind cannot be changed (from %s to %s)", oldKind, newKind)))
	default: // StatefulSet fields Kubernetes forbids to change
		// The template's spec.selector is left to the selector rule: defaulting copies spec.selector into it.
		if a, ok := render.AdapterFor(newKind); ok {
			errs = append(errs, a.ImmutableChanges(&oldSpec.WorkloadTemplate, &newSpec.WorkloadTemplate, tmplPath)...)
		}
	}
	return errs
}

// templateChanged reports whether an UPDATE changed the workload template.
func templateChanged(oldObj, newObj openyurtv1alpha1.Owner) bool {
	return !equality.Semantic.DeepEqual(oldObj.DaemonSpec().WorkloadTemplate, newObj.DaemonSpec().WorkloadTemplate)
}

// ratchet drops from newErrs the errors of drover's own rules ([B]) that the old object already broke at a
// field that did not change, so objects stored under OpenYurt stay editable. An error is dropped only if
// the old object has the very same error (type, field, value and detail) and the value at its field path is
// unchanged; a rule broken anew, or at a field that changed, is enforced. OpenYurt's own rules are never
// ratcheted.
func ratchet(newErrs, oldErrs field.ErrorList, newObj, oldObj openyurtv1alpha1.Owner) field.ErrorList {
	old := sets.New[string]()
	for _, e := range oldErrs {
		old.Insert(e.Error())
	}
	var newU, oldU map[string]any
	var out field.ErrorList
	for _, e := range newErrs {
		if droverRule(e) && old.Has(e.Error()) {
			if newU == nil {
				newU, oldU = toUnstructured(newObj), toUnstructured(oldObj)
			}
			newVal, newFound := lookupFieldPath(newU, e.Field)
			oldVal, oldFound := lookupFieldPath(oldU, e.Field)
			if newFound == oldFound && equality.Semantic.DeepEqual(newVal, oldVal) {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// droverRule reports whether e comes from a rule drover adds to OpenYurt's: the nodepoolSelector and tweak
// rules, the pool-name key rules of the selector and the pod labels, and the nodeSelector pool-key rule. The exact-one-template rule,
// the selector's validity and match, and revisionHistoryLimit ≥ 0 are OpenYurt's.
func droverRule(e *field.Error) bool {
	switch {
	case webhook.HasFieldPrefix(e.Field, "spec.nodepoolSelector"), webhook.HasFieldPrefix(e.Field, "spec.workloadTweaks"):
		return true
	case strings.Contains(e.Field, ".spec.template.spec.nodeSelector"):
		return true
	}
	bad, _ := e.BadValue.(string)
	return strings.Contains(e.Field, openyurtv1alpha1.LabelPoolName) ||
		strings.Contains(e.Detail, openyurtv1alpha1.LabelPoolName) || bad == openyurtv1alpha1.LabelPoolName
}

func toUnstructured(obj openyurtv1alpha1.Owner) map[string]any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return map[string]any{}
	}
	return u
}

// lookupFieldPath returns the value at a field path as field.Path renders it (a.b[0].c[key]) in the
// unstructured object u.
func lookupFieldPath(u map[string]any, path string) (any, bool) {
	var cur any = u
	for _, seg := range splitFieldPath(path) {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg.name]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg.name)
			if !seg.bracket || err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

type pathSegment struct {
	name    string
	bracket bool // [index] or [key]
}

// splitFieldPath splits a rendered field path into its segments; a bracketed key may hold dots.
func splitFieldPath(path string) []pathSegment {
	var segs []pathSegment
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(segs, pathSegment{name: path[1:], bracket: true})
			}
			segs = append(segs, pathSegment{name: path[1:end], bracket: true})
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segs = append(segs, pathSegment{name: path[:end]})
			path = path[end:]
		}
	}
	return segs
}
