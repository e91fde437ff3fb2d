package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// LoadCRD reads a generated CustomResourceDefinition (config/components/<controller>/crd/…) strictly.
func LoadCRD(t testing.TB, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Clean(file))
	if err != nil {
		t.Fatalf("reading the CRD (run `make manifests`): %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatalf("decoding the CRD %s: %v", file, err)
	}
	return crd
}

// SchemaAt returns the schema of the CRD's first version at path, dot-separated property names from the
// root where "name[]" stands for the items of the array name (e.g. "spec.workloadTweaks[].tweaks.patches").
func SchemaAt(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil || crd.Spec.Versions[0].Schema.OpenAPIV3Schema == nil {
		t.Fatalf("CRD %s has no schema", crd.Name)
	}
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, seg := range strings.Split(path, ".") {
		name, items := strings.CutSuffix(seg, "[]")
		p, ok := s.Properties[name]
		if !ok {
			t.Fatalf("CRD %s: no property %q on the way to %s", crd.Name, name, path)
		}
		s = &p
		if items {
			if s.Items == nil || s.Items.Schema == nil {
				t.Fatalf("CRD %s: %s is not an array of one schema", crd.Name, name)
			}
			s = s.Items.Schema
		}
	}
	return s
}
