package localcluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestKubeletStages checks the shape of drover's kwok stages: one Pod Stage per file, uniquely named, each
// saying whether it acts on terminating pods (only drover-pod-delete does) and leaving disregarded pods alone.
func TestKubeletStages(t *testing.T) {
	names, err := KubeletStageNames()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pod-delete.yaml", "pod-exit.yaml", "pod-inplace-image.yaml", "pod-job-complete.yaml",
		"pod-readiness.yaml", "pod-start.yaml"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("stage files mismatch (-want +got):\n%s", diff)
	}
	seen := map[string]bool{}
	for _, file := range names {
		data, err := KubeletStage(file)
		if err != nil {
			t.Fatal(err)
		}
		var stage struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				ResourceRef struct {
					APIGroup string `json:"apiGroup"`
					Kind     string `json:"kind"`
				} `json:"resourceRef"`
				Selector struct {
					MatchExpressions []struct {
						Key      string   `json:"key"`
						Operator string   `json:"operator"`
						Values   []string `json:"values"`
					} `json:"matchExpressions"`
				} `json:"selector"`
				Next struct {
					StatusTemplate string `json:"statusTemplate"`
				} `json:"next"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &stage); err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if stage.APIVersion != "kwok.x-k8s.io/v1alpha1" || stage.Kind != "Stage" {
			t.Errorf("%s: %s %s, want kwok.x-k8s.io/v1alpha1 Stage", file, stage.APIVersion, stage.Kind)
		}
		name := stage.Metadata.Name
		if name != "drover-"+strings.TrimSuffix(file, ".yaml") || seen[name] {
			t.Errorf("%s: stage name %q, want drover-<file name>, unique", file, name)
		}
		seen[name] = true
		if stage.Spec.ResourceRef.APIGroup != "v1" || stage.Spec.ResourceRef.Kind != "Pod" {
			t.Errorf("%s: resourceRef %+v, want v1 Pod", file, stage.Spec.ResourceRef)
		}
		terminating, disregard := "", false
		for _, e := range stage.Spec.Selector.MatchExpressions {
			switch e.Key {
			case ".metadata.deletionTimestamp":
				terminating = e.Operator
			case `.metadata.annotations["` + AnnotationKwokDisregard + `"]`:
				disregard = e.Operator == "DoesNotExist"
			}
		}
		wantTerminating := "DoesNotExist"
		if name == "drover-pod-delete" {
			wantTerminating = "Exists"
		}
		if terminating != wantTerminating {
			t.Errorf("%s: deletionTimestamp operator %q, want %q", file, terminating, wantTerminating)
		}
		if !disregard {
			t.Errorf("%s: the selector must leave pods annotated %s alone", file, AnnotationKwokDisregard)
		}
		if stage.Spec.Next.StatusTemplate == "" && name != "drover-pod-delete" {
			t.Errorf("%s: no statusTemplate", file)
		}
		// A kubelet never writes readiness-gate conditions: no stage may copy the gates into conditions.
		if strings.Contains(stage.Spec.Next.StatusTemplate, "type: {{ .conditionType") {
			t.Errorf("%s: writes readiness-gate conditions", file)
		}
	}
}

// TestKwokStageFiles checks the stage files kwok gets: kwok's stock node stages (not its pod/fast stages),
// drover's own stages written under <Dir>/kwok-stages, then the extra ones.
func TestKwokStageFiles(t *testing.T) {
	kwokDir := t.TempDir()
	stock := map[string][]string{
		"node/fast":                 {"node-initialize.yaml"},
		"node/heartbeat-with-lease": {"node-heartbeat-with-lease.yaml"},
		"pod/fast":                  {"pod-complete.yaml", "pod-delete.yaml", "pod-ready.yaml"},
	}
	for sub, files := range stock {
		d := filepath.Join(kwokDir, "kustomize", "stage", filepath.FromSlash(sub))
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
		for _, f := range append(files, "kustomization.yaml") {
			if err := os.WriteFile(filepath.Join(d, f), []byte("# "+f+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	stateDir := t.TempDir()
	extra := filepath.Join(t.TempDir(), "extra.yaml")
	if err := os.WriteFile(extra, []byte("# extra\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{KwokStageDir: kwokDir, Dir: stateDir, KwokStages: []string{extra}}
	got, err := o.kwokStageFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stage := func(sub, f string) string {
		return filepath.Join(kwokDir, "kustomize", "stage", filepath.FromSlash(sub), f)
	}
	own := filepath.Join(stateDir, "kwok-stages")
	names, err := KubeletStageNames()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		stage("node/fast", "node-initialize.yaml"),
		stage("node/heartbeat-with-lease", "node-heartbeat-with-lease.yaml"),
	}
	for _, n := range names {
		want = append(want, filepath.Join(own, n))
	}
	want = append(want, extra)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("kwokStageFiles mismatch (-want +got):\n%s", diff)
	}
	for _, f := range want[2 : 2+len(names)] {
		written, err := os.ReadFile(filepath.Clean(f))
		if err != nil {
			t.Fatal(err)
		}
		embedded, err := KubeletStage(filepath.Base(f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(written, embedded) {
			t.Errorf("%s differs from the embedded stage", f)
		}
	}

	o.KwokStages = []string{filepath.Join(t.TempDir(), "missing.yaml")}
	if _, err := o.kwokStageFiles(context.Background()); err == nil {
		t.Error("a missing extra stage file was accepted")
	}
}
