package yurtappdaemon

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// previewTypeConverter holds the server-side apply schema of Kubernetes' own kinds; parsing it is expensive,
// so it is built on first use.
var previewTypeConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
})

// applyChange is what applying a rendered body to a live child changes, by field path.
type applyChange struct {
	// template lists the changed paths under spec.template (the pods roll), with their values before and after.
	template []string
	// spec lists the changed paths of spec outside the template.
	spec []string
	// meta lists the changed paths of metadata.
	meta []string
	// immutable lists the changed paths the API server refuses to change: the whole apply is refused.
	immutable []string
}

// diffApply computes what a forced server-side apply of body does to live, for a child whose fields drover's
// field manager does not own yet (a child another controller wrote): the apply sets every field of body and
// keeps the rest, lists and maps merged as the Kubernetes apply schema declares them (tolerations,
// nodeSelector and label selectors replaced whole, containers merged by name, ...). Keys drover rendered
// before and no longer renders are removed by a real apply as well; they are not listed.
func diffApply(live client.Object, body *unstructured.Unstructured, kind openyurtv1alpha1.TemplateType) (*applyChange, error) {
	liveMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", live.GetName(), err)
	}
	l := &unstructured.Unstructured{Object: liveMap}
	l.SetGroupVersionKind(body.GroupVersionKind())
	l.SetManagedFields(nil)
	delete(l.Object, "status")
	tc := previewTypeConverter()
	lt, err := tc.ObjectToTyped(l)
	if err != nil {
		return nil, fmt.Errorf("reading %s with the apply schema: %w", live.GetName(), err)
	}
	bt, err := tc.ObjectToTyped(body)
	if err != nil {
		return nil, fmt.Errorf("reading the rendering of %s with the apply schema: %w", live.GetName(), err)
	}
	merged, err := lt.Merge(bt)
	if err != nil {
		return nil, fmt.Errorf("merging the rendering into %s: %w", live.GetName(), err)
	}
	cmp, err := lt.Compare(merged)
	if err != nil {
		return nil, fmt.Errorf("comparing %s with its rendering: %w", live.GetName(), err)
	}
	after, ok := merged.AsValue().Unstructured().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the merged %s is not an object", live.GetName())
	}
	before, _ := lt.AsValue().Unstructured().(map[string]any)
	out := &applyChange{}
	for _, p := range topPaths(cmp.Added.Union(cmp.Modified).Union(cmp.Removed)) {
		s := p.String()
		switch {
		case strings.HasPrefix(s, ".spec.template."):
			out.template = append(out.template, fmt.Sprintf("%s: %s -> %s", strings.TrimPrefix(s, "."),
				showValue(before, p), showValue(after, p)))
		case strings.HasPrefix(s, ".spec."):
			out.spec = append(out.spec, fmt.Sprintf("%s: %s -> %s", strings.TrimPrefix(s, "."), showValue(before, p), showValue(after, p)))
			if immutablePath(kind, s) {
				out.immutable = append(out.immutable, strings.TrimPrefix(s, "."))
			}
		default:
			out.meta = append(out.meta, strings.TrimPrefix(s, "."))
		}
	}
	return out, nil
}

// statefulSetMutable are the spec fields of a StatefulSet Kubernetes lets an update change.
var statefulSetMutable = []string{"replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
	"persistentVolumeClaimRetentionPolicy", "minReadySeconds"}

// immutablePath reports whether the API server refuses a change of the spec field at path for kind.
func immutablePath(kind openyurtv1alpha1.TemplateType, path string) bool {
	field, _, _ := strings.Cut(strings.TrimPrefix(path, ".spec."), ".")
	field, _, _ = strings.Cut(field, "[")
	if kind == openyurtv1alpha1.DeploymentTemplateType {
		return field == "selector"
	}
	return !slices.Contains(statefulSetMutable, field)
}

// topPaths lists the paths of s that have no ancestor in s, sorted: a replaced list or a new struct is
// named once, not once per field below it.
func topPaths(s *fieldpath.Set) []fieldpath.Path {
	var all []fieldpath.Path
	s.Iterate(func(p fieldpath.Path) { all = append(all, p.Copy()) })
	slices.SortFunc(all, func(a, b fieldpath.Path) int { return a.Compare(b) })
	var out []fieldpath.Path
	for _, p := range all {
		covered := false
		for _, q := range out {
			if len(q) < len(p) && q.Equals(p[:len(q)]) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

// showValue is the JSON of the value at p in obj ("nothing" when there is none), cut to a readable length.
func showValue(obj map[string]any, p fieldpath.Path) string {
	v, ok := valueAt(obj, p)
	if !ok {
		return "nothing"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	const limit = 240
	if len(data) > limit {
		return string(data[:limit]) + "..."
	}
	return string(data)
}

// valueAt walks obj along p: field names and map keys, list elements by key or index.
func valueAt(obj any, p fieldpath.Path) (any, bool) {
	cur := obj
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return nil, false
			}
		case pe.Index != nil:
			l, ok := cur.([]any)
			if !ok || *pe.Index >= len(l) {
				return nil, false
			}
			cur = l[*pe.Index]
		case pe.Key != nil:
			item, ok := listItemByKey(cur, pe)
			if !ok {
				return nil, false
			}
			cur = item
		default:
			return nil, false
		}
	}
	return cur, true
}

// listItemByKey returns the element of the list cur whose key fields equal those of pe.
func listItemByKey(cur any, pe fieldpath.PathElement) (any, bool) {
	l, ok := cur.([]any)
	if !ok {
		return nil, false
	}
	for _, item := range l {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		match := true
		for _, f := range *pe.Key {
			if fmt.Sprint(m[f.Name]) != fmt.Sprint(f.Value.Unstructured()) {
				match = false
				break
			}
		}
		if match {
			return item, true
		}
	}
	return nil, false
}
