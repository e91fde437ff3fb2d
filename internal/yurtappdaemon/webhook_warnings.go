package yurtappdaemon

import (
	"context"
	"fmt"
	"strings"

	"github.com/drover-dev/drover/internal/webhook"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// usedTemplateMetadata are the template metadata fields rendering uses; the others are ignored.
// creationTimestamp is left out too: Go clients send it as null.
var usedTemplateMetadata = sets.New("labels", "annotations", "creationTimestamp")

// templateWarnings returns the admission warnings for the template of the request in ctx: unknown fields of
// its metadata and spec, which the typed decode drops silently (the CRD stores them unpruned), and metadata
// fields that rendering ignores. It reads the raw object of the request; without one it returns nothing.
func templateWarnings(ctx context.Context) admission.Warnings {
	req, err := admission.RequestFromContext(ctx)
	if err != nil || len(req.Object.Raw) == 0 {
		return nil
	}
	return TemplateWarnings(req.Object.Raw)
}

// TemplateWarnings returns the warnings for the workload template of a raw owner object. Only fields unknown
// to Kubernetes' own types (as vendored by drover) are reported; values are the dry run's to check.
func TemplateWarnings(raw []byte) admission.Warnings {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil // the typed decode already succeeded; nothing more to say
	}
	tmpl, _ := unstructuredMap(obj, "spec", "workloadTemplate")
	var warnings admission.Warnings
	for _, m := range []struct {
		name string
		spec func() any
	}{
		{"deploymentTemplate", func() any { return &appsv1.DeploymentSpec{} }},
		{"statefulSetTemplate", func() any { return &appsv1.StatefulSetSpec{} }},
	} {
		member, ok := unstructuredMap(tmpl, m.name)
		if !ok {
			continue
		}
		prefix := "spec.workloadTemplate." + m.name
		if meta, ok := unstructuredMap(member, "metadata"); ok {
			warnings = append(warnings, unknownFields(meta, &metav1.ObjectMeta{}, prefix+".metadata")...)
			warnings = append(warnings, ignoredMetadata(meta, prefix+".metadata")...)
		}
		if spec, ok := unstructuredMap(member, "spec"); ok {
			warnings = append(warnings, unknownFields(spec, m.spec(), prefix+".spec")...)
		}
	}
	return warnings
}

// unknownFields decodes u strictly into the typed value into and returns one warning per unknown field, sorted.
func unknownFields(u map[string]any, into any, prefix string) admission.Warnings {
	err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u, into, true)
	strict, ok := runtime.AsStrictDecodingError(err)
	if !ok {
		return nil // a type error; the typed decode of the request would have failed first
	}
	var warnings admission.Warnings
	for _, e := range strict.Errors() {
		msg := e.Error()
		if path, found := strings.CutPrefix(msg, `unknown field "`); found && strings.HasSuffix(path, `"`) {
			msg = fmt.Sprintf("%s.%s: unknown field, ignored", prefix, strings.TrimSuffix(path, `"`))
		} else {
			msg = fmt.Sprintf("%s: %s", prefix, msg)
		}
		warnings = append(warnings, msg)
	}
	return warnings
}

// ignoredMetadata returns one warning per set template metadata field other than labels and annotations
// (name, namespace, finalizers, ownerReferences, …), sorted.
func ignoredMetadata(meta map[string]any, prefix string) admission.Warnings {
	var warnings admission.Warnings
	for _, k := range sortedKeys(meta) {
		if usedTemplateMetadata.Has(k) || webhook.IsEmptyValue(meta[k]) {
			continue
		}
		warnings = append(warnings, fmt.Sprintf(
			"%s.%s is ignored: only the labels and annotations of the template metadata are used", prefix, k))
	}
	return warnings
}

// unstructuredMap returns the map at path in u; ok is false when it is absent or not a map.
func unstructuredMap(u map[string]any, path ...string) (map[string]any, bool) {
	cur := u
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}
