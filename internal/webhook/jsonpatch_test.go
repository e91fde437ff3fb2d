package webhook

import (
	"encoding/json"
	"testing"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestApplyPatchOperation(t *testing.T) {
	tests := map[string]struct {
		doc, op, path string
		value         any
		want          string // "" when an error is expected
	}{
		"add creates missing parents": {
			doc: `{"spec":{}}`, op: "add", path: "/spec/a/b", value: 1,
			want: `{"spec":{"a":{"b":1}}}`,
		},
		"add replaces a null parent": {
			doc: `{"spec":{"a":null}}`, op: "add", path: "/spec/a/b", value: "x",
			want: `{"spec":{"a":{"b":"x"}}}`,
		},
		"replace keeps siblings": {
			doc: `{"spec":{"a":1,"b":2}}`, op: "replace", path: "/spec/a", value: 3,
			want: `{"spec":{"a":3,"b":2}}`,
		},
		"remove": {
			doc: `{"spec":{"a":1,"b":2}}`, op: "remove", path: "/spec/a",
			want: `{"spec":{"b":2}}`,
		},
		"remove below a missing parent is a no-op": {
			doc: `{"spec":{}}`, op: "remove", path: "/spec/a/b",
			want: `{"spec":{}}`,
		},
		"escaped keys": {
			doc: `{"metadata":{"labels":{}}}`, op: "add", path: "/metadata/labels/a~1b~0c", value: "v",
			want: `{"metadata":{"labels":{"a/b~c":"v"}}}`,
		},
		"descend into a list element": {
			doc: `{"l":[{"a":1},{"a":2}]}`, op: "replace", path: "/l/1/a", value: 5,
			want: `{"l":[{"a":1},{"a":5}]}`,
		},
		"replace a list element": {
			doc: `{"l":[1,2]}`, op: "replace", path: "/l/0", value: 7,
			want: `{"l":[7,2]}`,
		},
		"adding to a list is not supported":   {doc: `{"l":[1]}`, op: "add", path: "/l/1", value: 2},
		"a missing list element":              {doc: `{"l":[1]}`, op: "replace", path: "/l/3/a", value: 2},
		"descending into a scalar":            {doc: `{"a":1}`, op: "add", path: "/a/b", value: 2},
		"the root":                            {doc: `{}`, op: "replace", path: "", value: 1},
		"an unsupported operation":            {doc: `{}`, op: "move", path: "/a"},
		"a field of a scalar at the last seg": {doc: `{"a":"s"}`, op: "add", path: "/a/b", value: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var doc any
			if err := json.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			got, err := applyPatchOperation(doc, tc.op, tc.path, tc.value)
			if tc.want == "" {
				if err == nil {
					t.Errorf("no error; doc = %v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			var want any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			gotJSON, _ := json.Marshal(got)
			var gotNorm any
			_ = json.Unmarshal(gotJSON, &gotNorm)
			if diff := cmp.Diff(want, gotNorm); diff != "" {
				t.Errorf("doc (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPatchRequestObject: the answer's RFC 6902 patch, applied to the request's object as the API server
// applies it, gives the object the defaulting made of it, with what the typed object does not hold (an
// unknown field) kept, missing and null parents filled, and nothing written when nothing changed.
func TestPatchRequestObject(t *testing.T) {
	tests := map[string]struct{ raw, before, after string }{
		"a field set": {
			raw:    `{"spec":{"a":1,"unknown":true}}`,
			before: `{"spec":{"a":1}}`, after: `{"spec":{"a":1,"b":2}}`,
		},
		"missing parents": {
			raw:    `{"spec":{}}`,
			before: `{"spec":{}}`, after: `{"spec":{"t":{"x":{"y":1}},"u":{"v":2}}}`,
		},
		"a null parent": {
			raw:    `{"spec":{"t":null}}`,
			before: `{"spec":{}}`, after: `{"spec":{"t":{"x":1}}}`,
		},
		"a value changed in a list element, a field removed": {
			raw:    `{"spec":{"l":[{"a":1,"keep":"k"},{"a":2}],"gone":1}}`,
			before: `{"spec":{"l":[{"a":1},{"a":2}],"gone":1}}`, after: `{"spec":{"l":[{"a":1},{"a":3}]}}`,
		},
		"nested additions under one new parent": {
			raw:    `{"metadata":{"name":"n"}}`,
			before: `{"metadata":{"name":"n"}}`, after: `{"metadata":{"name":"n","labels":{"a":"1","b":"2"},"annotations":{"c":"3"}}}`,
		},
		"nothing changed": {raw: `{"spec":{"a":1,"z":0}}`, before: `{"spec":{"a":1}}`, after: `{"spec":{"a":1}}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp := patchRequestObject([]byte(tc.raw), []byte(tc.before), []byte(tc.after))
			if !resp.Allowed {
				t.Fatalf("not allowed: %v", resp.Result)
			}
			// What the lenient application of the typed diff makes of raw.
			var want any
			if err := json.Unmarshal([]byte(tc.raw), &want); err != nil {
				t.Fatal(err)
			}
			var err error
			for _, op := range admission.PatchResponseFromRaw([]byte(tc.before), []byte(tc.after)).Patches {
				if want, err = applyPatchOperation(want, op.Operation, op.Path, op.Value); err != nil {
					t.Fatal(err)
				}
			}
			patch, err := json.Marshal(resp.Patches)
			if err != nil {
				t.Fatal(err)
			}
			decoded, err := jsonpatchv5.DecodePatch(patch)
			if err != nil {
				t.Fatal(err)
			}
			gotRaw, err := decoded.Apply([]byte(tc.raw))
			if err != nil {
				t.Fatalf("the API server could not apply %s: %v", patch, err)
			}
			var got any
			if err := json.Unmarshal(gotRaw, &got); err != nil {
				t.Fatal(err)
			}
			wantJSON, _ := json.Marshal(want)
			var wantNorm any
			_ = json.Unmarshal(wantJSON, &wantNorm)
			if diff := cmp.Diff(wantNorm, got); diff != "" {
				t.Errorf("patched object (-want +got), patch %s:\n%s", patch, diff)
			}
			if name == "nothing changed" && len(resp.Patches) != 0 {
				t.Errorf("patch %s, want none", patch)
			}
		})
	}
}
