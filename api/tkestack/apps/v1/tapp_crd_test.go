package v1_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/testutil"
)

const crdFile = "../../../../config/components/tapp/crd/apps.tkestack.io_tapps.yaml"

func loadCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return testutil.LoadCRD(t, filepath.FromSlash(crdFile))
}

func specProps(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) map[string]apiextensionsv1.JSONSchemaProps {
	t.Helper()
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil || crd.Spec.Versions[0].Schema.OpenAPIV3Schema == nil {
		t.Fatalf("want exactly one version with a schema, got %d versions", len(crd.Spec.Versions))
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
}

// TestCRDIsValid checks what the API server checks of the schema and what stripping defaults could break: the
// schema is structural, and every key of a list of type map is required or has a default. (The integration
// suite installs the CRD into a real API server, which runs every check.)
func TestCRDIsValid(t *testing.T) {
	crd := loadCRD(t)
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := s.Convert(crd, internal, nil); err != nil {
		t.Fatalf("converting the CRD: %v", err)
	}
	for _, v := range internal.Spec.Versions {
		validation := v.Schema
		if validation == nil { // the internal type hoists a schema shared by all versions
			validation = internal.Spec.Validation
		}
		if validation == nil || validation.OpenAPIV3Schema == nil {
			t.Fatalf("version %s has no schema", v.Name)
		}
		structural, err := structuralschema.NewStructural(validation.OpenAPIV3Schema)
		if err != nil {
			t.Fatalf("version %s: %v", v.Name, err)
		}
		if errs := structuralschema.ValidateStructural(field.NewPath("openAPIV3Schema"), structural); len(errs) > 0 {
			t.Errorf("version %s is not structural: %v", v.Name, errs.ToAggregate())
		}
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	walkSchema("", root, func(path string, s *apiextensionsv1.JSONSchemaProps) {
		if s.XListType == nil || *s.XListType != "map" || s.Items == nil || s.Items.Schema == nil {
			return
		}
		item := s.Items.Schema
		for _, key := range s.XListMapKeys {
			if !slices.Contains(item.Required, key) && item.Properties[key].Default == nil {
				t.Errorf("%s: list map key %q is neither required nor defaulted", path, key)
			}
		}
	})
}

func TestCRDResource(t *testing.T) {
	crd := loadCRD(t)
	if crd.Name != "tapps.apps.tkestack.io" || crd.Spec.Group != "apps.tkestack.io" ||
		crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("name/group/scope = %s/%s/%s", crd.Name, crd.Spec.Group, crd.Spec.Scope)
	}
	wantNames := apiextensionsv1.CustomResourceDefinitionNames{Kind: "TApp", ListKind: "TAppList", Plural: "tapps", Singular: "tapp"}
	if diff := cmp.Diff(wantNames, crd.Spec.Names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	v := crd.Spec.Versions[0]
	if v.Name != "v1" || !v.Served || !v.Storage {
		t.Errorf("version %s served=%t storage=%t, want v1 served and storage", v.Name, v.Served, v.Storage)
	}
	wantSub := &apiextensionsv1.CustomResourceSubresources{
		Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
		Scale: &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath:   ".spec.replicas",
			StatusReplicasPath: ".status.replicas",
			LabelSelectorPath:  ptr.To(".status.scaleLabelSelector"),
		},
	}
	if diff := cmp.Diff(wantSub, v.Subresources); diff != "" {
		t.Errorf("subresources (-want +got):\n%s", diff)
	}
	type column struct {
		Name, Type, JSONPath string
		Priority             int32
	}
	want := []column{
		{"DESIRED", "integer", ".spec.replicas", 0},
		{"CURRENT", "integer", ".status.replicas", 0},
		{"READY", "integer", ".status.readyReplicas", 0},
		{"AVAILABLE", "integer", ".status.availableReplicas", 0},
		{"UPDATED", "integer", ".status.updatedReplicas", 1},
		{"STATUS", "string", ".status.appStatus", 0},
		{"AGE", "date", ".metadata.creationTimestamp", 0},
	}
	var got []column
	for _, c := range v.AdditionalPrinterColumns {
		got = append(got, column{c.Name, c.Type, c.JSONPath, c.Priority})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("printer columns (-want +got):\n%s", diff)
	}
}

// TestCRDNoDefaultsInTemplates guards that the API server never alters a stored template: the
// CRD schema must not default any field inside the templates (the template hash would change).
func TestCRDNoDefaultsInTemplates(t *testing.T) {
	props := specProps(t, loadCRD(t))
	for _, field := range []string{"template", "templatePool", "volumeClaimTemplates"} {
		schema, ok := props[field]
		if !ok {
			t.Fatalf("spec.%s is missing from the schema", field)
		}
		var found []string
		walkSchema("spec."+field, &schema, func(path string, s *apiextensionsv1.JSONSchemaProps) {
			if s.Default != nil {
				found = append(found, path)
			}
		})
		if len(found) > 0 {
			t.Errorf("spec.%s has %d default keyword(s), e.g. %s", field, len(found), strings.Join(found[:min(5, len(found))], ", "))
		}
	}
}

func TestCRDEmbeddedObjectMeta(t *testing.T) {
	props := specProps(t, loadCRD(t))
	metas := map[string]apiextensionsv1.JSONSchemaProps{
		"template":             props["template"].Properties["metadata"],
		"templatePool":         props["templatePool"].AdditionalProperties.Schema.Properties["metadata"],
		"volumeClaimTemplates": props["volumeClaimTemplates"].Items.Schema.Properties["metadata"],
	}
	for name, meta := range metas {
		for _, key := range []string{"name", "namespace", "labels", "annotations", "finalizers"} {
			if _, ok := meta.Properties[key]; !ok {
				t.Errorf("spec.%s metadata lacks %q (generateEmbeddedObjectMeta)", name, key)
			}
		}
	}
}

func TestCRDSpecFields(t *testing.T) {
	props := specProps(t, loadCRD(t))
	for _, name := range []string{
		"replicas", "selector", "template", "templatePool", "statuses", "templates", "updateStrategy",
		"forceDeletePod", "autoDeleteUnusedTemplate", "neverMigrate", "volumeClaimTemplates", "serviceName",
		"defaultTemplateName", "DefaultTemplateName", "minReadySeconds", "persistentVolumeClaimRetentionPolicy",
		"deletePodAfterAppFinish",
	} {
		if _, ok := props[name]; !ok {
			t.Errorf("spec.%s is missing from the schema", name)
		}
	}
	us := props["updateStrategy"].Properties
	for _, name := range []string{"template", "maxUnavailable", "forceUpdate", "paused"} {
		if _, ok := us[name]; !ok {
			t.Errorf("spec.updateStrategy.%s is missing from the schema", name)
		}
	}
	if !us["maxUnavailable"].XIntOrString || !us["forceUpdate"].Properties["maxUnavailable"].XIntOrString {
		t.Errorf("maxUnavailable fields must be int-or-string")
	}
	if m := props["replicas"].Minimum; m == nil || *m != 0 {
		t.Errorf("spec.replicas minimum = %v, want 0", m)
	}
}

// TestCRDBounds: the collections of the spec are bounded in the generated schema, with the API package's
// constants, so the API server refuses a TApp beyond them before any webhook runs.
func TestCRDBounds(t *testing.T) {
	props := specProps(t, loadCRD(t))
	maxProps := map[string]int64{
		"templatePool": tkestackv1.MaxTemplatePool,
		"statuses":     tkestackv1.MaxReplicas,
		"templates":    tkestackv1.MaxReplicas,
	}
	for name, want := range maxProps {
		if got := props[name].MaxProperties; got == nil || *got != want {
			t.Errorf("spec.%s maxProperties = %v, want %d", name, ptr.Deref(got, -1), want)
		}
	}
	if got := props["volumeClaimTemplates"].MaxItems; got == nil || *got != tkestackv1.MaxVolumeClaimTemplates {
		t.Errorf("spec.volumeClaimTemplates maxItems = %v, want %d", ptr.Deref(got, -1), tkestackv1.MaxVolumeClaimTemplates)
	}
	if got := props["replicas"].Maximum; got == nil || *got != tkestackv1.MaxReplicas {
		t.Errorf("spec.replicas maximum = %v, want %d", ptr.Deref(got, -1), tkestackv1.MaxReplicas)
	}
}

// walkSchema calls fn for s and every schema below it.
func walkSchema(path string, s *apiextensionsv1.JSONSchemaProps, fn func(string, *apiextensionsv1.JSONSchemaProps)) {
	if s == nil {
		return
	}
	fn(path, s)
	for name, p := range s.Properties {
		walkSchema(path+"."+name, &p, fn)
	}
	if s.Items != nil {
		walkSchema(path+"[]", s.Items.Schema, fn)
		for i := range s.Items.JSONSchemas {
			walkSchema(path+"[]", &s.Items.JSONSchemas[i], fn)
		}
	}
	if s.AdditionalProperties != nil {
		walkSchema(path+"{}", s.AdditionalProperties.Schema, fn)
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			walkSchema(path, &list[i], fn)
		}
	}
	if s.Not != nil {
		walkSchema(path, s.Not, fn)
	}
}
