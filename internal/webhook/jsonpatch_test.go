package webhook

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
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
