package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

// applyOneAtATime applies patches to doc the slow way, parsing and encoding the document once per operation:
// the reference applyPatches must agree with. It returns the index of the failing patch, or -1.
func applyOneAtATime(doc []byte, patches []openyurtv1alpha1.Patch, pool string) ([]byte, int, error) {
	for j := range patches {
		p := &patches[j]
		op, err := encodeOperation(p, pool)
		if err != nil {
			return nil, j, err
		}
		patch, err := jsonpatch.DecodePatch([]byte("[" + string(op) + "]"))
		if err != nil {
			return nil, j, err
		}
		if doc, err = patch.Apply(doc); err != nil {
			return nil, j, fmt.Errorf("%s %s: %w", p.Operation, p.Path, err)
		}
	}
	return doc, -1, nil
}

// placeholderDoc returns the JSON of the deploySpec template rendered for the pool hz.
func placeholderDoc(t testing.TB) []byte {
	t.Helper()
	spec := deploySpec()
	doc, err := json.Marshal(renderBase(testInput(spec, Pool{Name: "hz"}), spec.TemplateType()))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// checkAgainstOneAtATime applies patches both ways and fails unless they agree on the result, or on the failing
// patch and its message. It returns the failing index (-1 for none) and the error.
func checkAgainstOneAtATime(t testing.TB, doc []byte, patches []openyurtv1alpha1.Patch) (int, error) {
	t.Helper()
	wantDoc, wantIdx, wantErr := applyOneAtATime(doc, patches, "hz")
	gotDoc, err := applyPatches(doc, patches, "hz")
	gotIdx := -1
	if err != nil {
		var pe *patchError
		if !errors.As(err, &pe) {
			t.Fatalf("applyPatches error %v is not a *patchError", err)
		}
		gotIdx = pe.Index
	}
	if gotIdx != wantIdx || fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("applyPatches failed at %d with %v; one at a time fails at %d with %v", gotIdx, err, wantIdx, wantErr)
	}
	if err == nil {
		var want, got any
		if json.Unmarshal(wantDoc, &want) != nil || json.Unmarshal(gotDoc, &got) != nil {
			t.Fatalf("a result is not JSON:\n%s\n%s", wantDoc, gotDoc)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("applyPatches result differs from one at a time (-want +got):\n%s", diff)
		}
	}
	return gotIdx, err
}

func TestApplyPatchesLocatesTheFirstFailingPatch(t *testing.T) {
	const n = 300
	missing := func(p string) openyurtv1alpha1.Patch {
		return openyurtv1alpha1.Patch{Operation: openyurtv1alpha1.PatchRemove, Path: p}
	}
	noValue := openyurtv1alpha1.Patch{Operation: openyurtv1alpha1.PatchAdd, Path: "/spec/paused"}
	cases := map[string]struct {
		set     map[int]openyurtv1alpha1.Patch
		want    int
		message string
	}{
		"all apply":                  {want: -1},
		"the first of two that fail": {set: map[int]openyurtv1alpha1.Patch{137: missing("/spec/a"), 200: missing("/spec/b")}, want: 137, message: "remove /spec/a: "},
		"the first patch":            {set: map[int]openyurtv1alpha1.Patch{0: missing("/spec/a")}, want: 0, message: "remove /spec/a: "},
		"the last patch":             {set: map[int]openyurtv1alpha1.Patch{n - 1: missing("/spec/a")}, want: n - 1, message: "remove /spec/a: "},
		// Patch 101 appends an env variable: it fails only because patch 100 removed the list.
		"one that an earlier patch broke": {
			set:  map[int]openyurtv1alpha1.Patch{100: missing("/spec/template/spec/containers/0/env")},
			want: 101, message: "add /spec/template/spec/containers/0/env/-: ",
		},
		"a failing patch before one without a value": {set: map[int]openyurtv1alpha1.Patch{50: missing("/spec/a"), 60: noValue}, want: 50, message: "remove /spec/a: "},
		"one without a value before a failing patch": {set: map[int]openyurtv1alpha1.Patch{50: noValue, 60: missing("/spec/a")}, want: 50, message: "add needs a value"},
		// "//…" goes through the document as the earlier patches left it: label pool-2 exists (patch 2 added
		// it), and the library removes it from a copy, so the child keeps it.
		"a pointer through the empty key": {set: map[int]openyurtv1alpha1.Patch{5: missing("//metadata/labels/pool-2")}, want: -1},
		"an unsupported operation": {
			set:  map[int]openyurtv1alpha1.Patch{70: {Operation: "move", Path: "/spec/paused"}, 80: missing("/spec/a")},
			want: 70, message: `unsupported operation "move"`,
		},
	}
	doc := placeholderDoc(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			patches := testutil.PoolPatches(n)
			for j, p := range tc.set {
				patches[j] = p
			}
			idx, err := checkAgainstOneAtATime(t, doc, patches)
			if idx != tc.want || tc.message != "" && !strings.HasPrefix(err.Error(), tc.message) {
				t.Errorf("failing patch %d with %v, want %d with a message starting %q", idx, err, tc.want, tc.message)
			}
		})
	}
}

// TestValidateSpecNamesTheFirstFailingPatch: among many patches, the webhook's error names the first that
// fails, and none after it.
func TestValidateSpecNamesTheFirstFailingPatch(t *testing.T) {
	patches := testutil.PoolPatches(500)
	patches[321] = openyurtv1alpha1.Patch{Operation: openyurtv1alpha1.PatchReplace, Path: "/spec/paused/x", Value: raw(t, 1)}
	patches[400] = openyurtv1alpha1.Patch{Operation: openyurtv1alpha1.PatchRemove, Path: "/spec/nothing"}
	spec := deploySpec()
	spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{
		tweak(openyurtv1alpha1.Tweaks{Patches: testutil.PoolPatches(10)}),
		tweak(openyurtv1alpha1.Tweaks{Patches: patches}),
	}
	errs := ValidateSpec(spec, field.NewPath("spec"))
	want := []fieldErr{{field.ErrorTypeInvalid, "spec.workloadTweaks[1].tweaks.patches[321]"}}
	if diff := cmp.Diff(want, summarize(errs)); diff != "" {
		t.Fatalf("errors (-want +got):\n%s", diff)
	}
	if errs[0].BadValue != "/spec/paused/x" || !strings.Contains(errs[0].Detail, "does not apply to the rendered workload: replace /spec/paused/x: ") {
		t.Errorf("error %v: want the patch's path as value and its operation in the detail", errs[0])
	}
	_, err := Render(testInput(spec, Pool{Name: "hz"}))
	if err == nil || !strings.Contains(err.Error(), "spec.workloadTweaks[1].tweaks.patches[321]: replace /spec/paused/x: ") {
		t.Errorf("Render error %v does not name patch 321", err)
	}
}

// FuzzApplyPatches checks that applying the patches in one pass agrees with applying them one at a time:
// the same result, or the same failing patch with the same message.
func FuzzApplyPatches(f *testing.F) {
	for _, s := range []string{
		`[]`,
		`[{"path":"/spec/template/spec/containers/0/env/-","operation":"add","value":{"name":"P","value":"{{nodepool-name}}"}}]`,
		`[{"path":"/metadata/labels/a","operation":"add","value":"x"},{"path":"/metadata/labels/a","operation":"remove"},` +
			`{"path":"/metadata/labels/a","operation":"replace","value":"y"}]`,
		`[{"path":"/spec/template/spec/containers/0/args","operation":"add","value":["{{nodepool-name}}"]},` +
			`{"path":"/spec/template/spec/containers/0/args/0","operation":"add","value":"b"},{"path":"/spec/template/spec/containers/0/args/-1","operation":"remove"}]`,
		`[{"path":"/spec","operation":"replace","value":null},{"path":"/spec/replicas","operation":"add","value":1}]`,
		`[{"path":"","operation":"replace","value":[]},{"path":"/0","operation":"add","value":{}}]`,
		`[{"path":"/spec/x","operation":"add"},{"path":"/spec/y","operation":"copy"}]`,
		`[{"path":"/metadata/labels/a","operation":"add","value":"x"},{"path":"//metadata/labels/a","operation":"remove"},` +
			`{"path":"//metadata/labels/a","operation":"replace","value":"y"},{"path":"/metadata/labels/a","operation":"remove"}]`,
	} {
		f.Add(s)
	}
	doc := placeholderDoc(f)
	f.Fuzz(func(t *testing.T, patchesJSON string) {
		var patches []openyurtv1alpha1.Patch
		if json.Unmarshal([]byte(patchesJSON), &patches) != nil || len(patches) > 64 {
			return
		}
		_, _ = checkAgainstOneAtATime(t, doc, patches)
	})
}
