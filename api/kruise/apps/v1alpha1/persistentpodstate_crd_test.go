package v1alpha1_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

const (
	crdFile      = "../../../../config/components/persistentpodstate/crd/apps.kruise.io_persistentpodstates.yaml"
	manifestFile = "testdata/openkruise-persistentpodstate.yaml"
)

func loadCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return testutil.LoadCRD(t, filepath.FromSlash(crdFile))
}

func TestCRDResource(t *testing.T) {
	crd := loadCRD(t)
	if crd.Name != "persistentpodstates.apps.kruise.io" || crd.Spec.Group != "apps.kruise.io" ||
		crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("name/group/scope = %s/%s/%s", crd.Name, crd.Spec.Group, crd.Spec.Scope)
	}
	// OpenKruise's names, plus drover's short name pps; no categories.
	wantNames := apiextensionsv1.CustomResourceDefinitionNames{
		Kind: "PersistentPodState", ListKind: "PersistentPodStateList", Plural: "persistentpodstates", Singular: "persistentpodstate",
		ShortNames: []string{"pps"},
	}
	if diff := cmp.Diff(wantNames, crd.Spec.Names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("want one version, got %d", len(crd.Spec.Versions))
	}
	v := crd.Spec.Versions[0]
	if v.Name != "v1alpha1" || !v.Served || !v.Storage {
		t.Errorf("version %s served=%t storage=%t, want v1alpha1 served and storage", v.Name, v.Served, v.Storage)
	}
	wantSub := &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	if diff := cmp.Diff(wantSub, v.Subresources); diff != "" {
		t.Errorf("subresources (-want +got):\n%s", diff)
	}
	var columns []string
	for _, c := range v.AdditionalPrinterColumns {
		columns = append(columns, c.Name+"="+c.JSONPath)
	}
	want := []string{
		"Target-Kind=.spec.targetRef.kind", "Target-Name=.spec.targetRef.name",
		"Retention=.spec.persistentPodStateRetentionPolicy", "Age=.metadata.creationTimestamp",
	}
	if diff := cmp.Diff(want, columns); diff != "" {
		t.Errorf("printer columns (-want +got):\n%s", diff)
	}
}

// TestCRDBounds checks every bound of the schema against the API's constants.
func TestCRDBounds(t *testing.T) {
	type bounds struct {
		MaxItems, MaxLength, MaxProperties *int64
	}
	n := ptr.To[int64]
	want := map[string]bounds{
		"spec.targetRef.apiVersion":                                        {MaxLength: n(kruisev1alpha1.MaxKeyLength)},
		"spec.targetRef.kind":                                              {MaxLength: n(63)},
		"spec.targetRef.name":                                              {MaxLength: n(253)},
		"spec.requiredPersistentTopology.nodeTopologyKeys":                 {MaxItems: n(kruisev1alpha1.MaxTopologyKeys)},
		"spec.requiredPersistentTopology.nodeTopologyKeys[]":               {MaxLength: n(kruisev1alpha1.MaxKeyLength)},
		"spec.preferredPersistentTopology":                                 {MaxItems: n(kruisev1alpha1.MaxPreferredTerms)},
		"spec.preferredPersistentTopology[].preference.nodeTopologyKeys":   {MaxItems: n(kruisev1alpha1.MaxTopologyKeys)},
		"spec.preferredPersistentTopology[].preference.nodeTopologyKeys[]": {MaxLength: n(kruisev1alpha1.MaxKeyLength)},
		"spec.persistentPodAnnotations":                                    {MaxItems: n(kruisev1alpha1.MaxPersistentPodAnnotations)},
		"spec.persistentPodAnnotations[].key":                              {MaxLength: n(kruisev1alpha1.MaxKeyLength)},
		"status.conditions":                                                {MaxItems: n(kruisev1alpha1.MaxConditions)},
		// status.podStates is bounded by the controller's size guard, not by count.
		"status.podStates": {},
	}
	crd := loadCRD(t)
	for path, w := range want {
		s := testutil.SchemaAt(t, crd, path)
		got := bounds{MaxItems: s.MaxItems, MaxLength: s.MaxLength, MaxProperties: s.MaxProperties}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s bounds (-want +got):\n%s", path, diff)
		}
	}
	record := testutil.SchemaAt(t, crd, "status.podStates").AdditionalProperties.Schema
	for key, w := range map[string]bounds{
		"nodeName":           {MaxLength: n(253)},
		"nodeTopologyLabels": {MaxProperties: n(kruisev1alpha1.MaxNodeTopologyLabels)},
		"annotations":        {MaxProperties: n(kruisev1alpha1.MaxPersistentPodAnnotations)},
	} {
		s := record.Properties[key]
		got := bounds{MaxItems: s.MaxItems, MaxLength: s.MaxLength, MaxProperties: s.MaxProperties}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("status.podStates{}.%s bounds (-want +got):\n%s", key, diff)
		}
	}
	weight := testutil.SchemaAt(t, crd, "spec.preferredPersistentTopology[].weight")
	if ptr.Deref(weight.Minimum, -1) != 1 || ptr.Deref(weight.Maximum, -1) != 100 {
		t.Errorf("weight bounds = [%v, %v], want [1, 100]", ptr.Deref(weight.Minimum, -1), ptr.Deref(weight.Maximum, -1))
	}
}

func TestCRDEnumRequiredAndListTypes(t *testing.T) {
	crd := loadCRD(t)
	var enum []string
	for _, v := range testutil.SchemaAt(t, crd, "spec.persistentPodStateRetentionPolicy").Enum {
		enum = append(enum, strings.Trim(string(v.Raw), `"`))
	}
	if diff := cmp.Diff([]string{"", "WhenScaled", "WhenDeleted"}, enum); diff != "" {
		t.Errorf("retention policy enum (-want +got):\n%s", diff)
	}
	required := map[string][]string{
		"spec":                               {"targetRef"},
		"spec.targetRef":                     {"apiVersion", "kind", "name"},
		"spec.requiredPersistentTopology":    {"nodeTopologyKeys"},
		"spec.preferredPersistentTopology[]": {"preference", "weight"},
		"spec.preferredPersistentTopology[].preference": {"nodeTopologyKeys"},
		"spec.persistentPodAnnotations[]":               {"key"},
		"status":                                        {"observedGeneration"},
	}
	for path, want := range required {
		got := slices.Sorted(slices.Values(testutil.SchemaAt(t, crd, path).Required))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s required (-want +got):\n%s", path, diff)
		}
	}
	conditions := testutil.SchemaAt(t, crd, "status.conditions")
	if ptr.Deref(conditions.XListType, "") != "map" || !slices.Equal(conditions.XListMapKeys, []string{"type"}) {
		t.Errorf("status.conditions list type %v keys %v, want a map keyed by type", ptr.Deref(conditions.XListType, ""), conditions.XListMapKeys)
	}
}

// validator returns the schema validator the API server builds from the CRD.
func validator(t *testing.T) apiservervalidation.SchemaValidator {
	t.Helper()
	crd := loadCRD(t)
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatalf("converting the schema: %v", err)
	}
	v, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		t.Fatalf("building the schema validator: %v", err)
	}
	return v
}

// loadManifest returns the OpenKruise manifest as a generic object.
func loadManifest(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestCRDSchemaAdmitsOpenKruiseManifest: the schema accepts an OpenKruise manifest unchanged and refuses each
// value beyond a bound, outside the enum or missing a required field, at that field's path.
func TestCRDSchemaAdmitsOpenKruiseManifest(t *testing.T) {
	v := validator(t)
	if errs := apiservervalidation.ValidateCustomResource(nil, loadManifest(t), v); len(errs) > 0 {
		t.Fatalf("the OpenKruise manifest is refused: %v", errs.ToAggregate())
	}
	spec := func(o map[string]any) map[string]any { return o["spec"].(map[string]any) }
	keys := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = "example.com/key-" + strings.Repeat("k", i%5) + string(rune('a'+i%26))
		}
		return out
	}
	tests := []struct {
		name   string
		mutate func(map[string]any)
		path   string
	}{
		{"weight 0", func(o map[string]any) {
			spec(o)["preferredPersistentTopology"].([]any)[0].(map[string]any)["weight"] = int64(0)
		}, "spec.preferredPersistentTopology[0].weight"},
		{"weight 101", func(o map[string]any) {
			spec(o)["preferredPersistentTopology"].([]any)[0].(map[string]any)["weight"] = int64(101)
		}, "spec.preferredPersistentTopology[0].weight"},
		{"unknown retention policy", func(o map[string]any) {
			spec(o)["persistentPodStateRetentionPolicy"] = "Never"
		}, "spec.persistentPodStateRetentionPolicy"},
		{"targetRef without name", func(o map[string]any) {
			delete(spec(o)["targetRef"].(map[string]any), "name")
		}, "spec.targetRef.name"},
		{"too many required keys", func(o map[string]any) {
			spec(o)["requiredPersistentTopology"] = map[string]any{"nodeTopologyKeys": keys(kruisev1alpha1.MaxTopologyKeys + 1)}
		}, "spec.requiredPersistentTopology.nodeTopologyKeys"},
		{"too many preferred terms", func(o map[string]any) {
			terms := make([]any, kruisev1alpha1.MaxPreferredTerms+1)
			for i := range terms {
				terms[i] = map[string]any{"weight": int64(1), "preference": map[string]any{"nodeTopologyKeys": []any{"a"}}}
			}
			spec(o)["preferredPersistentTopology"] = terms
		}, "spec.preferredPersistentTopology"},
		{"too many annotations", func(o map[string]any) {
			list := make([]any, kruisev1alpha1.MaxPersistentPodAnnotations+1)
			for i, k := range keys(len(list)) {
				list[i] = map[string]any{"key": k}
			}
			spec(o)["persistentPodAnnotations"] = list
		}, "spec.persistentPodAnnotations"},
		{"key too long", func(o map[string]any) {
			spec(o)["persistentPodAnnotations"] = []any{map[string]any{"key": strings.Repeat("a", kruisev1alpha1.MaxKeyLength+1)}}
		}, "spec.persistentPodAnnotations[0].key"},
		{"status without observedGeneration", func(o map[string]any) {
			delete(o["status"].(map[string]any), "observedGeneration")
		}, "status.observedGeneration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := loadManifest(t)
			tt.mutate(obj)
			errs := apiservervalidation.ValidateCustomResource(nil, obj, v)
			if !slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == tt.path }) {
				t.Errorf("want an error at %s, got %v", tt.path, errs.ToAggregate())
			}
		})
	}
}

// TestCRDSchemaAcceptsEmptyRetentionPolicy: an explicit empty policy, which OpenKruise accepts, is accepted.
func TestCRDSchemaAcceptsEmptyRetentionPolicy(t *testing.T) {
	obj := loadManifest(t)
	obj["spec"].(map[string]any)["persistentPodStateRetentionPolicy"] = ""
	if errs := apiservervalidation.ValidateCustomResource(nil, obj, validator(t)); len(errs) > 0 {
		t.Errorf("an empty retention policy is refused: %v", errs.ToAggregate())
	}
}
