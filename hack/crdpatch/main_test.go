package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const crdIn = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  names:
    kind: Thing
    plural: things
  scope: Namespaced
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              other:
                default: 1
                type: integer
              template:
                properties:
                  ports:
                    items:
                      properties:
                        containerPort:
                          type: integer
                        protocol:
                          default: TCP
                          type: string
                      required:
                      - containerPort
                      type: object
                    type: array
                    x-kubernetes-list-map-keys:
                    - containerPort
                    - protocol
                    x-kubernetes-list-type: map
                  volumes:
                    items:
                      properties:
                        name:
                          type: string
                      required:
                      - name
                      type: object
                    type: array
                    x-kubernetes-list-map-keys:
                    - name
                    x-kubernetes-list-type: map
                type: object
              pool:
                additionalProperties:
                  properties:
                    default:
                      type: string
                    mode:
                      default: x
                      type: string
                  type: object
                type: object
            type: object
        type: object
    served: true
    storage: true
`

const crdWant = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  names:
    kind: Thing
    plural: things
  scope: Namespaced
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              other:
                default: 1
                type: integer
              pool:
                additionalProperties:
                  properties:
                    default:
                      type: string
                    mode:
                      type: string
                  type: object
                type: object
              template:
                properties:
                  ports:
                    items:
                      properties:
                        containerPort:
                          type: integer
                        protocol:
                          type: string
                      required:
                      - containerPort
                      type: object
                    type: array
                    x-kubernetes-list-type: atomic
                  volumes:
                    items:
                      properties:
                        name:
                          type: string
                      required:
                      - name
                      type: object
                    type: array
                    x-kubernetes-list-map-keys:
                    - name
                    x-kubernetes-list-type: map
                type: object
            type: object
        type: object
    served: true
    storage: true
`

func TestPatch(t *testing.T) {
	got, err := Patch([]byte(crdIn), []string{"spec.template", " spec.pool", ""})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(crdWant, string(got)); diff != "" {
		t.Errorf("patched CRD (-want +got):\n%s", diff)
	}
	again, err := Patch(got, []string{"spec.template", "spec.pool"})
	if err != nil || !bytes.Equal(again, got) {
		t.Errorf("patching twice changed the result (err %v)", err)
	}
}

func TestPatchErrors(t *testing.T) {
	if _, err := Patch([]byte(crdIn), []string{"spec.missing"}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("unknown path: err = %v", err)
	}
	if _, err := Patch([]byte("kind: CustomResourceDefinition\n"), []string{"spec"}); err == nil {
		t.Errorf("CRD without versions: no error")
	}
	if _, err := Patch([]byte("\t:"), nil); err == nil {
		t.Errorf("invalid YAML: no error")
	}
}

func TestRunRewritesFilesInPlace(t *testing.T) {
	file := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(file, []byte(crdIn), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"spec.template", "spec.pool"}, nil, []string{file}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(file)
	if string(got) != crdWant {
		t.Errorf("file not patched:\n%s", got)
	}
	if err := run(nil, nil, nil); err == nil {
		t.Errorf("no files: no error")
	}
}

func TestPatchStripsDescriptionsBelowPathsOnly(t *testing.T) {
	in := `---
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        description: root
        properties:
          spec:
            description: the spec
            properties:
              template:
                description: the template
                properties:
                  name:
                    description: a name
                    type: string
                type: object
            type: object
        type: object
`
	out, err := Patch([]byte(in), nil, "spec.template")
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, kept := range []string{"description: root", "description: the spec", "description: the template"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%q was removed:\n%s", kept, got)
		}
	}
	if strings.Contains(got, "a name") {
		t.Errorf("description below spec.template kept:\n%s", got)
	}
}
