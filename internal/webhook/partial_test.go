package webhook

import (
	"slices"
	"testing"
)

func TestParsePath(t *testing.T) {
	for in, want := range map[string][]string{
		"spec.stages[1].minDuration":                      {"spec", "stages", "1", "minDuration"},
		"metadata.labels[app.kubernetes.io/name]":         {"metadata", "labels", "app.kubernetes.io/name"},
		"spec.template.spec.containers[0].resources[cpu]": {"spec", "template", "spec", "containers", "0", "resources", "cpu"},
		"spec": {"spec"},
	} {
		if got := parsePath(in); !slices.Equal(got, want) {
			t.Errorf("parsePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRemoveAt(t *testing.T) {
	doc := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"a.b/c": 1, "keep": "x"}},
		"spec":     map[string]any{"stages": []any{map[string]any{"minDuration": "bad", "name": "s"}, "second"}},
	}
	for _, p := range []string{"metadata.labels[a.b/c]", "spec.stages[0].minDuration", "spec.stages[1]"} {
		if !removeAt(doc, parsePath(p)) {
			t.Fatalf("removeAt(%s) found nothing", p)
		}
	}
	stages := doc["spec"].(map[string]any)["stages"].([]any)
	if _, ok := doc["metadata"].(map[string]any)["labels"].(map[string]any)["a.b/c"]; ok ||
		len(stages) != 2 || stages[1] != nil || len(stages[0].(map[string]any)) != 1 {
		t.Errorf("after the removals: %v", doc)
	}
	for _, p := range []string{"spec.missing", "spec.stages[7]", "spec.stages[x]", "metadata.labels[keep].deeper", ""} {
		if removeAt(doc, parsePath(p)) {
			t.Errorf("removeAt(%q) removed something", p)
		}
	}
}

func TestUnderAny(t *testing.T) {
	removed := []string{"spec.stages[0].minDuration", "spec.template"}
	for f, want := range map[string]bool{
		"spec.stages[0].minDuration":  true,
		"spec.template.spec":          true,
		"spec.template[x]":            true,
		"spec.templatePool":           false,
		"spec.stages[0].condition":    false,
		"spec.stages[0].minDurationX": false,
	} {
		if got := underAny(f, removed); got != want {
			t.Errorf("underAny(%q) = %t, want %t", f, got, want)
		}
	}
}
