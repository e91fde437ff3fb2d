package v1beta1

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules a PersistentPodState must keep at admission. They are one pure function, so that the validating
// webhook (which turns the returned field errors into its 422 answer) and the tests apply the same rules.

// BuiltinTargetKinds are the StatefulSet-like kinds a PersistentPodState may target without being whitelisted:
// Kubernetes' and OpenKruise's StatefulSet and TApp. Kinds are matched by group and kind; the version is
// ignored.
var BuiltinTargetKinds = []schema.GroupKind{
	{Group: "apps", Kind: "StatefulSet"},
	{Group: "apps.kruise.io", Kind: "StatefulSet"},
	{Group: "apps.tkestack.io", Kind: "TApp"},
}

// TargetGroupKind returns the group and kind of a target reference. It fails when the apiVersion is not a
// group/version.
func TargetGroupKind(ref TargetReference) (schema.GroupKind, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupKind{}, err
	}
	return schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, nil
}

// SameTarget reports whether two references name the same workload: same API group, kind and name, whatever
// their versions. A reference whose apiVersion does not parse names no workload.
func SameTarget(a, b TargetReference) bool {
	ga, errA := TargetGroupKind(a)
	gb, errB := TargetGroupKind(b)
	return errA == nil && errB == nil && ga == gb && a.Name == b.Name
}

// ValidatePersistentPodState returns every rule newObj breaks. oldObj is nil on CREATE. others are the
// PersistentPodStates stored in the cluster (any namespace; only newObj's namespace is considered); allowed
// says whether a group/kind beyond BuiltinTargetKinds may be targeted (the custom workload whitelist; nil
// allows none).
//
// Every rule adds its own errors. Two rules are checked only on CREATE: the target's kind is allowed, and no
// other object targets the same workload. The target is immutable, so an update can break neither, and
// re-checking them would block fixing an object whose kind was later removed from the whitelist or that
// duplicates another since before drover's webhook ran.
func ValidatePersistentPodState(newObj, oldObj *PersistentPodState, others []PersistentPodState,
	allowed func(schema.GroupKind) bool) field.ErrorList {
	specPath := field.NewPath("spec")
	refPath := specPath.Child("targetRef")
	spec := &newObj.Spec

	var errs field.ErrorList
	ref := spec.TargetRef
	if ref.APIVersion == "" || ref.Kind == "" || ref.Name == "" {
		errs = append(errs, field.Required(refPath, "apiVersion, kind and name must all be set"))
	}
	if oldObj == nil {
		errs = append(errs, validateTargetKind(ref, refPath, allowed)...)
		errs = append(errs, validateUniqueTarget(newObj, others, refPath)...)
	} else if oldObj.Spec.TargetRef != ref {
		errs = append(errs, field.Forbidden(refPath, "field is immutable"))
	}
	errs = append(errs, validateTopology(spec, specPath)...)
	errs = append(errs, validatePersistentPodAnnotations(spec.PersistentPodAnnotations, specPath.Child("persistentPodAnnotations"))...)
	switch p := spec.PersistentPodStateRetentionPolicy; p {
	case "", RetainWhenScaled, RetainWhenDeleted:
	default:
		errs = append(errs, field.NotSupported(specPath.Child("persistentPodStateRetentionPolicy"), p,
			[]PersistentPodStateRetentionPolicyType{RetainWhenScaled, RetainWhenDeleted}))
	}
	return errs
}

// validateTargetKind checks that the target's group/kind may be tracked.
func validateTargetKind(ref TargetReference, path *field.Path, allowed func(schema.GroupKind) bool) field.ErrorList {
	gk, err := TargetGroupKind(ref)
	if err != nil {
		return field.ErrorList{field.Invalid(path, targetString(ref), "apiVersion must be a group/version such as apps/v1")}
	}
	if slices.Contains(BuiltinTargetKinds, gk) || (allowed != nil && allowed(gk)) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, targetString(ref),
		"the target must be a StatefulSet (apps or apps.kruise.io), a TApp (apps.tkestack.io) or a whitelisted StatefulSet-like kind")}
}

// validateUniqueTarget checks that no other live object in newObj's namespace targets the same workload; the
// error names the first such object by name.
func validateUniqueTarget(newObj *PersistentPodState, others []PersistentPodState, path *field.Path) field.ErrorList {
	conflict := ""
	for i := range others {
		o := &others[i]
		if o.Namespace != newObj.Namespace || o.Name == newObj.Name || o.DeletionTimestamp != nil ||
			!SameTarget(o.Spec.TargetRef, newObj.Spec.TargetRef) {
			continue
		}
		if conflict == "" || o.Name < conflict {
			conflict = o.Name
		}
	}
	if conflict == "" {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"PersistentPodState %q already targets %s in this namespace; a workload is tracked by at most one", conflict, targetString(newObj.Spec.TargetRef)))}
}

// validateTopology checks the required and preferred topology terms. The list bounds of the CRD's schema
// are checked here too, so that the generator refuses, with a field path, what the schema would refuse.
func validateTopology(spec *PersistentPodStateSpec, specPath *field.Path) field.ErrorList {
	if spec.RequiredPersistentTopology == nil && len(spec.PreferredPersistentTopology) == 0 {
		return field.ErrorList{field.Required(specPath, "requiredPersistentTopology or preferredPersistentTopology must be set")}
	}
	var errs field.ErrorList
	if n := len(spec.PreferredPersistentTopology); n > MaxPreferredTerms {
		errs = append(errs, field.TooMany(specPath.Child("preferredPersistentTopology"), n, MaxPreferredTerms))
	}
	if r := spec.RequiredPersistentTopology; r != nil {
		errs = append(errs, validateTopologyKeys(r.Keys, specPath.Child("requiredPersistentTopology", "keys"))...)
	}
	for i, term := range spec.PreferredPersistentTopology {
		p := specPath.Child("preferredPersistentTopology").Index(i)
		if term.Weight < 1 || term.Weight > 100 {
			errs = append(errs, field.Invalid(p.Child("weight"), term.Weight, "must be between 1 and 100"))
		}
		errs = append(errs, validateTopologyKeys(term.Preference.Keys, p.Child("preference", "keys"))...)
	}
	return errs
}

// validateTopologyKeys checks the keys of one term: at least one, each a label key, none repeated.
func validateTopologyKeys(keys []string, path *field.Path) field.ErrorList {
	if len(keys) == 0 {
		return field.ErrorList{field.Required(path, "at least one node label key")}
	}
	if len(keys) > MaxTopologyKeys {
		return field.ErrorList{field.TooMany(path, len(keys), MaxTopologyKeys)}
	}
	var errs field.ErrorList
	for i, key := range keys {
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Index(i), key, strings.Join(msgs, "; ")))
		} else if slices.Index(keys, key) < i {
			errs = append(errs, field.Duplicate(path.Index(i), key))
		}
	}
	return errs
}

// validatePersistentPodAnnotations checks the annotation keys: each set, an annotation key, none repeated.
func validatePersistentPodAnnotations(list []PersistentPodAnnotation, path *field.Path) field.ErrorList {
	if len(list) > MaxPersistentPodAnnotations {
		return field.ErrorList{field.TooMany(path, len(list), MaxPersistentPodAnnotations)}
	}
	var errs field.ErrorList
	for i, a := range list {
		p := path.Index(i).Child("key")
		switch {
		case a.Key == "":
			errs = append(errs, field.Required(p, "an annotation key"))
		case len(validation.IsQualifiedName(strings.ToLower(a.Key))) > 0:
			// Annotation keys are checked in lower case, as the API server checks them.
			errs = append(errs, field.Invalid(p, a.Key, strings.Join(validation.IsQualifiedName(strings.ToLower(a.Key)), "; ")))
		case slices.IndexFunc(list[:i], func(b PersistentPodAnnotation) bool { return b.Key == a.Key }) >= 0:
			errs = append(errs, field.Duplicate(p, a.Key))
		}
	}
	return errs
}

// targetString formats a target reference for messages: "StatefulSet apps/v1 web".
func targetString(ref TargetReference) string {
	return strings.TrimSpace(ref.Kind + " " + ref.APIVersion + " " + ref.Name)
}
