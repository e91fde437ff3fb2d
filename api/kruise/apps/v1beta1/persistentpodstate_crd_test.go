package v1beta1_test

import (
	"encoding/json"
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

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/testutil"
)

// The CRD serves v1alpha1 and v1beta1 with the same schema but for the name of a topology term's keys.

const crdFile = "../../../../config/components/persistentpodstate/crd/apps.kruise.io_persistentpodstates.yaml"

// versions are the served versions, each with the name of a topology term's keys and an OpenKruise manifest.
var versions = []struct {
	name, keys, manifest string
}{
	{"v1alpha1", "nodeTopologyKeys", "../v1alpha1/testdata/openkruise-persistentpodstate.yaml"},
	{"v1beta1", "keys", "testdata/openkruise-persistentpodstate.yaml"},
}

func loadCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return testutil.LoadCRD(t, filepath.FromSlash(crdFile))
}

// loadVersion returns the CRD with only its version named version, so that testutil.SchemaAt reads it.
func loadVersion(t *testing.T, version string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := loadCRD(t)
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version })
	if i < 0 {
		t.Fatalf("the CRD has no version %s", version)
	}
	crd.Spec.Versions = crd.Spec.Versions[i : i+1]
	return crd
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
	var got []string
	for _, v := range crd.Spec.Versions {
		got = append(got, v.Name+served(v.Served, " served")+served(v.Storage, " storage"))
		checkVersionResource(t, v)
	}
	if diff := cmp.Diff([]string{"v1alpha1 served", "v1beta1 served storage"}, got); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	// The manager converts between the versions.
	wantConversion := &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
				Namespace: "system", Name: "webhook-service", Path: ptr.To("/convert"), Port: ptr.To[int32](443)}}},
	}
	if diff := cmp.Diff(wantConversion, crd.Spec.Conversion); diff != "" {
		t.Errorf("conversion (-want +got):\n%s", diff)
	}
}

func served(b bool, s string) string {
	if b {
		return s
	}
	return ""
}

// checkVersionResource checks the status subresource and printer columns of one version.
func checkVersionResource(t *testing.T, v apiextensionsv1.CustomResourceDefinitionVersion) {
	t.Helper()
	wantSub := &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	if diff := cmp.Diff(wantSub, v.Subresources); diff != "" {
		t.Errorf("%s subresources (-want +got):\n%s", v.Name, diff)
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
		t.Errorf("%s printer columns (-want +got):\n%s", v.Name, diff)
	}
}

// TestCRDSchemasDifferOnlyByKeys: without descriptions, the schema of v1alpha1 is that of v1beta1 with keys
// named nodeTopologyKeys.
func TestCRDSchemasDifferOnlyByKeys(t *testing.T) {
	encoded := map[string]string{}
	for _, v := range versions {
		s := loadVersion(t, v.name).Spec.Versions[0].Schema.OpenAPIV3Schema.DeepCopy()
		stripDescriptions(s)
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		encoded[v.name] = string(raw)
	}
	renamed := strings.ReplaceAll(encoded["v1beta1"], `"keys":`, `"nodeTopologyKeys":`)
	renamed = strings.ReplaceAll(renamed, `"required":["keys"]`, `"required":["nodeTopologyKeys"]`)
	if diff := cmp.Diff(encoded["v1alpha1"], renamed); diff != "" {
		t.Errorf("schemas (-v1alpha1 +v1beta1 renamed):\n%s", diff)
	}
}

func stripDescriptions(s *apiextensionsv1.JSONSchemaProps) {
	s.Description = ""
	for k, p := range s.Properties {
		stripDescriptions(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		stripDescriptions(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		stripDescriptions(s.AdditionalProperties.Schema)
	}
}

// TestCRDBounds checks every bound of the schema of each version against the API's constants.
func TestCRDBounds(t *testing.T) {
	type bounds struct {
		MaxItems, MaxLength, MaxProperties *int64
	}
	n := ptr.To[int64]
	for _, v := range versions {
		want := map[string]bounds{
			"spec.targetRef.apiVersion":                                      {MaxLength: n(kruisev1beta1.MaxKeyLength)},
			"spec.targetRef.kind":                                            {MaxLength: n(63)},
			"spec.targetRef.name":                                            {MaxLength: n(253)},
			"spec.requiredPersistentTopology." + v.keys:                      {MaxItems: n(kruisev1beta1.MaxTopologyKeys)},
			"spec.requiredPersistentTopology." + v.keys + "[]":               {MaxLength: n(kruisev1beta1.MaxKeyLength)},
			"spec.preferredPersistentTopology":                               {MaxItems: n(kruisev1beta1.MaxPreferredTerms)},
			"spec.preferredPersistentTopology[].preference." + v.keys:        {MaxItems: n(kruisev1beta1.MaxTopologyKeys)},
			"spec.preferredPersistentTopology[].preference." + v.keys + "[]": {MaxLength: n(kruisev1beta1.MaxKeyLength)},
			"spec.persistentPodAnnotations":                                  {MaxItems: n(kruisev1beta1.MaxPersistentPodAnnotations)},
			"spec.persistentPodAnnotations[].key":                            {MaxLength: n(kruisev1beta1.MaxKeyLength)},
			"status.conditions":                                              {MaxItems: n(kruisev1beta1.MaxConditions)},
			// status.podStates is bounded by the controller's size guard, not by count.
			"status.podStates": {},
		}
		crd := loadVersion(t, v.name)
		for path, w := range want {
			s := testutil.SchemaAt(t, crd, path)
			got := bounds{MaxItems: s.MaxItems, MaxLength: s.MaxLength, MaxProperties: s.MaxProperties}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("%s %s bounds (-want +got):\n%s", v.name, path, diff)
			}
		}
		record := testutil.SchemaAt(t, crd, "status.podStates").AdditionalProperties.Schema
		for key, w := range map[string]bounds{
			"nodeName":           {MaxLength: n(253)},
			"nodeTopologyLabels": {MaxProperties: n(kruisev1beta1.MaxNodeTopologyLabels)},
			"annotations":        {MaxProperties: n(kruisev1beta1.MaxPersistentPodAnnotations)},
		} {
			s := record.Properties[key]
			got := bounds{MaxItems: s.MaxItems, MaxLength: s.MaxLength, MaxProperties: s.MaxProperties}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("%s status.podStates{}.%s bounds (-want +got):\n%s", v.name, key, diff)
			}
		}
		weight := testutil.SchemaAt(t, crd, "spec.preferredPersistentTopology[].weight")
		if ptr.Deref(weight.Minimum, -1) != 1 || ptr.Deref(weight.Maximum, -1) != 100 {
			t.Errorf("%s weight bounds = [%v, %v], want [1, 100]", v.name, ptr.Deref(weight.Minimum, -1), ptr.Deref(weight.Maximum, -1))
		}
	}
}

func TestCRDEnumRequiredAndListTypes(t *testing.T) {
	for _, v := range versions {
		crd := loadVersion(t, v.name)
		var enum []string
		for _, e := range testutil.SchemaAt(t, crd, "spec.persistentPodStateRetentionPolicy").Enum {
			enum = append(enum, strings.Trim(string(e.Raw), `"`))
		}
		if diff := cmp.Diff([]string{"", "WhenScaled", "WhenDeleted"}, enum); diff != "" {
			t.Errorf("%s retention policy enum (-want +got):\n%s", v.name, diff)
		}
		required := map[string][]string{
			"spec":                               {"targetRef"},
			"spec.targetRef":                     {"apiVersion", "kind", "name"},
			"spec.requiredPersistentTopology":    {v.keys},
			"spec.preferredPersistentTopology[]": {"preference", "weight"},
			"spec.preferredPersistentTopology[].preference": {v.keys},
			"spec.persistentPodAnnotations[]":               {"key"},
			"status":                                        {"observedGeneration"},
		}
		for path, want := range required {
			got := slices.Sorted(slices.Values(testutil.SchemaAt(t, crd, path).Required))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %s required (-want +got):\n%s", v.name, path, diff)
			}
		}
		conditions := testutil.SchemaAt(t, crd, "status.conditions")
		if ptr.Deref(conditions.XListType, "") != "map" || !slices.Equal(conditions.XListMapKeys, []string{"type"}) {
			t.Errorf("%s status.conditions list type %v keys %v, want a map keyed by type", v.name,
				ptr.Deref(conditions.XListType, ""), conditions.XListMapKeys)
		}
	}
}

// validator returns the schema validator the API server builds from the CRD for version.
func validator(t *testing.T, version string) apiservervalidation.SchemaValidator {
	t.Helper()
	crd := loadVersion(t, version)
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

// loadManifest returns an OpenKruise manifest as a generic object.
func loadManifest(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(file))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestCRDSchemaAdmitsOpenKruiseManifest: the schema of each version accepts an OpenKruise manifest of that
// version unchanged and refuses each value beyond a bound, outside the enum or missing a required field, at
// that field's path.
func TestCRDSchemaAdmitsOpenKruiseManifest(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			val := validator(t, v.name)
			if errs := apiservervalidation.ValidateCustomResource(nil, loadManifest(t, v.manifest), val); len(errs) > 0 {
				t.Fatalf("the OpenKruise manifest is refused: %v", errs.ToAggregate())
			}
			for _, tt := range schemaRefusals(v.keys) {
				obj := loadManifest(t, v.manifest)
				tt.mutate(obj)
				errs := apiservervalidation.ValidateCustomResource(nil, obj, val)
				if !slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == tt.path }) {
					t.Errorf("%s: want an error at %s, got %v", tt.name, tt.path, errs.ToAggregate())
				}
			}
		})
	}
}

type refusal struct {
	name   string
	mutate func(map[string]any)
	path   string
}

// schemaRefusals are changes of an OpenKruise manifest that the schema refuses, keys naming a term's keys.
func schemaRefusals(keysName string) []refusal {
	spec := func(o map[string]any) map[string]any { return o["spec"].(map[string]any) }
	keys := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = "example.com/key-" + strings.Repeat("k", i%5) + string(rune('a'+i%26))
		}
		return out
	}
	return []refusal{
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
			spec(o)["requiredPersistentTopology"] = map[string]any{keysName: keys(kruisev1beta1.MaxTopologyKeys + 1)}
		}, "spec.requiredPersistentTopology." + keysName},
		{"required term without keys", func(o map[string]any) {
			spec(o)["requiredPersistentTopology"] = map[string]any{}
		}, "spec.requiredPersistentTopology." + keysName},
		{"too many preferred terms", func(o map[string]any) {
			terms := make([]any, kruisev1beta1.MaxPreferredTerms+1)
			for i := range terms {
				terms[i] = map[string]any{"weight": int64(1), "preference": map[string]any{keysName: []any{"a"}}}
			}
			spec(o)["preferredPersistentTopology"] = terms
		}, "spec.preferredPersistentTopology"},
		{"too many annotations", func(o map[string]any) {
			list := make([]any, kruisev1beta1.MaxPersistentPodAnnotations+1)
			for i, k := range keys(len(list)) {
				list[i] = map[string]any{"key": k}
			}
			spec(o)["persistentPodAnnotations"] = list
		}, "spec.persistentPodAnnotations"},
		{"key too long", func(o map[string]any) {
			spec(o)["persistentPodAnnotations"] = []any{map[string]any{"key": strings.Repeat("a", kruisev1beta1.MaxKeyLength+1)}}
		}, "spec.persistentPodAnnotations[0].key"},
		{"status without observedGeneration", func(o map[string]any) {
			delete(o["status"].(map[string]any), "observedGeneration")
		}, "status.observedGeneration"},
	}
}

// TestCRDSchemaAcceptsEmptyRetentionPolicy: an explicit empty policy, which OpenKruise accepts, is accepted
// in each version.
func TestCRDSchemaAcceptsEmptyRetentionPolicy(t *testing.T) {
	for _, v := range versions {
		obj := loadManifest(t, v.manifest)
		obj["spec"].(map[string]any)["persistentPodStateRetentionPolicy"] = ""
		if errs := apiservervalidation.ValidateCustomResource(nil, obj, validator(t, v.name)); len(errs) > 0 {
			t.Errorf("%s: an empty retention policy is refused: %v", v.name, errs.ToAggregate())
		}
	}
}
