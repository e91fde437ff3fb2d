package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// crdIn has the shape controller-gen gives the BindingPolicy CRD, cut down to the patched parts.
const crdIn = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: bindingpolicies.control.kubestellar.io
spec:
  group: control.kubestellar.io
  names:
    kind: BindingPolicy
    plural: bindingpolicies
  scope: Cluster
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              clusterSelectors:
                items:
                  properties:
                    matchExpressions:
                      items:
                        properties:
                          key:
                            type: string
                          operator:
                            type: string
                          values:
                            items:
                              type: string
                            type: array
                        type: object
                      type: array
                    matchLabels:
                      additionalProperties:
                        type: string
                      type: object
                  type: object
                type: array
              downsync:
                items:
                  properties:
                    apiGroup:
                      type: string
                    createOnly:
                      type: boolean
                    namespaceSelectors:
                      type: array
                    namespaces:
                      type: array
                    objectNames:
                      type: array
                    objectSelectors:
                      type: array
                    resources:
                      type: array
                  type: object
                type: array
            type: object
        type: object
    served: true
    storage: true
`

// selectorsWant is spec.clusterSelectors after the patch.
const selectorsWant = `
items:
  properties:
    matchExpressions:
      items:
        properties:
          key:
            pattern: ^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$
            type: string
          operator:
            pattern: ^(In|NotIn|Exists|DoesNotExist)$
            type: string
          values:
            items:
              pattern: ^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$
              type: string
            type: array
        type: object
      type: array
    matchLabels:
      additionalProperties:
        pattern: ^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$
        type: string
      type: object
  type: object
type: array
`

// specProperty decodes a patched CRD and returns one property of the first version's spec schema.
func specProperty(t *testing.T, crd []byte, name string) any {
	t.Helper()
	var doc struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Properties map[string]any `json:"properties"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(crd, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec.Properties[name]
}

func TestPatch(t *testing.T) {
	out, err := Patch([]byte(crdIn))
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := yaml.Unmarshal([]byte(selectorsWant), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, specProperty(t, out, "clusterSelectors")); diff != "" {
		t.Errorf("clusterSelectors (-want +got):\n%s", diff)
	}
	downsync, _ := specProperty(t, out, "downsync").(map[string]any)
	items, _ := downsync["items"].(map[string]any)
	wantAnyOf := []any{
		map[string]any{"required": []any{"apiGroup"}}, map[string]any{"required": []any{"resources"}},
		map[string]any{"required": []any{"namespaces"}}, map[string]any{"required": []any{"namespaceSelectors"}},
		map[string]any{"required": []any{"objectSelectors"}}, map[string]any{"required": []any{"objectNames"}},
	}
	if diff := cmp.Diff(wantAnyOf, items["anyOf"]); diff != "" {
		t.Errorf("downsync items anyOf (-want +got):\n%s", diff)
	}
	if !bytes.HasPrefix(out, []byte("---\n")) {
		t.Errorf("the output does not start with a document marker")
	}
	again, err := Patch(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(out), string(again)); diff != "" {
		t.Errorf("patching twice changed the file (-once +twice):\n%s", diff)
	}
}

func TestPatchRefuses(t *testing.T) {
	tests := map[string]struct {
		in      string
		message string
	}{
		"another CRD": {
			in:      strings.Replace(crdIn, "name: bindingpolicies.control.kubestellar.io", "name: bindings.control.kubestellar.io", 1),
			message: "is not bindingpolicies.control.kubestellar.io",
		},
		"no cluster selectors": {
			in:      strings.Replace(crdIn, "clusterSelectors:", "selectors:", 1),
			message: `no property "clusterSelectors"`,
		},
		"a test key missing": {
			in:      strings.Replace(crdIn, "objectNames:", "names:", 1),
			message: `no property "objectNames"`,
		},
		"no versions": {
			in:      strings.Replace(crdIn, "  versions:", "  unused:", 1),
			message: "no versions",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Patch([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %v, want one containing %q", err, tt.message)
			}
		})
	}
}

// TestGeneratedCRDIsPatched: the committed BindingPolicy CRD is the patched one (`make manifests` ran the
// command), so patching it again changes nothing.
func TestGeneratedCRDIsPatched(t *testing.T) {
	file := filepath.Join("..", "..", "config", "crd", "kubestellar", "control.kubestellar.io_bindingpolicies.yaml")
	in, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading the generated CRD (run `make manifests`): %v", err)
	}
	out, err := Patch(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Errorf("%s is not patched; run `make manifests`", file)
	}
}

func TestRunPatchesInPlace(t *testing.T) {
	file := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(file, []byte(crdIn), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(file); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Patch([]byte(crdIn))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("run wrote:\n%s\nwant:\n%s", got, want)
	}
	if err := run(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("run succeeded on a missing file")
	}
}
