package v1alpha1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

// crdDir holds the CRDs generated from this package, KubeStellar's stand-ins for tests and the local cluster.
const crdDir = "../../../../config/crd/kubestellar"

const (
	bindingPolicyCRD   = "control.kubestellar.io_bindingpolicies.yaml"
	bindingCRD         = "control.kubestellar.io_bindings.yaml"
	combinedStatusCRD  = "control.kubestellar.io_combinedstatuses.yaml"
	statusCollectorCRD = "control.kubestellar.io_statuscollectors.yaml"
	managedClusterCRD  = "cluster.open-cluster-management.io_managedclusters.yaml"
)

var controlCRDs = []string{bindingPolicyCRD, bindingCRD, combinedStatusCRD, statusCollectorCRD}

func loadCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return testutil.LoadCRD(t, filepath.Join(filepath.FromSlash(crdDir), file))
}

// TestCRDsAreValid runs the API server's validation of a CRD on every file of the folder, and checks that the
// kustomization lists exactly these files.
func TestCRDsAreValid(t *testing.T) {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	files := append(slices.Clone(controlCRDs), managedClusterCRD)
	for _, file := range files {
		crd := loadCRD(t, file)
		crd.Status.StoredVersions = []string{crd.Spec.Versions[0].Name}
		internal := &apiextensions.CustomResourceDefinition{}
		if err := s.Convert(crd, internal, nil); err != nil {
			t.Fatalf("%s: converting: %v", file, err)
		}
		if errs := apiextensionsvalidation.ValidateCustomResourceDefinition(t.Context(), internal); len(errs) > 0 {
			t.Errorf("%s is not a valid CRD: %v", file, errs.ToAggregate())
		}
	}

	data, err := os.ReadFile(filepath.Join(filepath.FromSlash(crdDir), "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		t.Fatal(err)
	}
	inDir, err := filepath.Glob(filepath.Join(filepath.FromSlash(crdDir), "*_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range inDir {
		inDir[i] = filepath.Base(f)
	}
	sort.Strings(files)
	if diff := cmp.Diff(files, slices.Sorted(slices.Values(kustomization.Resources))); diff != "" {
		t.Errorf("kustomization resources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(files, inDir); diff != "" {
		t.Errorf("CRD files in %s (-want +got):\n%s", crdDir, diff)
	}
}

// TestCRDResources checks names, scope, version, subresources and printer columns of the four kinds.
func TestCRDResources(t *testing.T) {
	status := &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	tests := map[string]struct {
		scope        apiextensionsv1.ResourceScope
		names        apiextensionsv1.CustomResourceDefinitionNames
		subresources *apiextensionsv1.CustomResourceSubresources
		columns      []string
	}{
		bindingPolicyCRD: {
			scope: apiextensionsv1.ClusterScoped,
			names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: "BindingPolicy", ListKind: "BindingPolicyList", Plural: "bindingpolicies", Singular: "bindingpolicy",
				ShortNames: []string{"bp"},
			},
			subresources: status,
			columns: []string{
				"SYNCED string .status.conditions[?(@.type=='Synced')].status",
				"READY string .status.conditions[?(@.type=='Ready')].status",
				"TYPE string .spec.type",
				"AGE date .metadata.creationTimestamp",
			},
		},
		bindingCRD: {
			scope: apiextensionsv1.ClusterScoped,
			names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: "Binding", ListKind: "BindingList", Plural: "bindings", Singular: "binding", ShortNames: []string{"bdg"},
			},
			subresources: status,
		},
		combinedStatusCRD: {
			scope: apiextensionsv1.NamespaceScoped,
			names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: "CombinedStatus", ListKind: "CombinedStatusList", Plural: "combinedstatuses", Singular: "combinedstatus",
				ShortNames: []string{"cs"},
			},
			subresources: &apiextensionsv1.CustomResourceSubresources{},
			columns: []string{
				`SUBJECT_GROUP string .metadata.labels['status\.kubestellar\.io/api-group']`,
				`SUBJECT_RSC string .metadata.labels['status\.kubestellar\.io/resource']`,
				`SUBJECT_NS string .metadata.labels['status\.kubestellar\.io/namespace']`,
				`SUBJECT_NAME string .metadata.labels['status\.kubestellar\.io/name']`,
				`BINDINGPOLICY string .metadata.labels['status\.kubestellar\.io/binding-policy']`,
			},
		},
		statusCollectorCRD: {
			scope: apiextensionsv1.ClusterScoped,
			names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: "StatusCollector", ListKind: "StatusCollectorList", Plural: "statuscollectors", Singular: "statuscollector",
				ShortNames: []string{"sc"},
			},
			subresources: status,
		},
	}
	for file, tt := range tests {
		t.Run(file, func(t *testing.T) {
			crd := loadCRD(t, file)
			if crd.Name != tt.names.Plural+".control.kubestellar.io" || crd.Spec.Group != "control.kubestellar.io" || crd.Spec.Scope != tt.scope {
				t.Errorf("name/group/scope = %s/%s/%s", crd.Name, crd.Spec.Group, crd.Spec.Scope)
			}
			if diff := cmp.Diff(tt.names, crd.Spec.Names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if len(crd.Spec.Versions) != 1 {
				t.Fatalf("want one version, got %d", len(crd.Spec.Versions))
			}
			v := crd.Spec.Versions[0]
			if v.Name != "v1alpha1" || !v.Served || !v.Storage {
				t.Errorf("version %s served=%t storage=%t, want v1alpha1 served and storage", v.Name, v.Served, v.Storage)
			}
			if diff := cmp.Diff(tt.subresources, v.Subresources); diff != "" {
				t.Errorf("subresources (-want +got):\n%s", diff)
			}
			var columns []string
			for _, c := range v.AdditionalPrinterColumns {
				columns = append(columns, c.Name+" "+c.Type+" "+c.JSONPath)
			}
			if diff := cmp.Diff(tt.columns, columns); diff != "" {
				t.Errorf("printer columns (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCRDRequiredAndListTypes: the required lists hold exactly the keys KubeStellar always sends, and only the
// Binding's destinations and object lists are map lists (every other list is atomic).
func TestCRDRequiredAndListTypes(t *testing.T) {
	condition := []string{"lastTransitionTime", "message", "reason", "status", "type"}
	required := map[string]map[string][]string{
		bindingPolicyCRD: {
			"spec":            nil,
			"spec.downsync[]": nil,
			"spec.clusterSelectors[].matchExpressions[]": {"key", "operator"},
			"status":              {"observedGeneration"},
			"status.conditions[]": condition,
		},
		bindingCRD: {
			"spec":                           nil,
			"spec.workload":                  nil,
			"spec.workload.clusterScope[]":   {"group", "name", "resource", "resourceVersion", "version"},
			"spec.workload.namespaceScope[]": {"group", "name", "namespace", "resource", "resourceVersion", "version"},
			"spec.destinations[]":            {"clusterId"},
			"status":                         {"observedGeneration"},
			"status.conditions[]":            condition,
		},
		statusCollectorCRD: {
			"spec":                  {"limit"},
			"spec.groupBy[]":        {"def", "name"},
			"spec.select[]":         {"def", "name"},
			"spec.combinedFields[]": {"name", "type"},
			"status":                {"observedGeneration"},
		},
		combinedStatusCRD: {
			"results[]":                     {"columnNames", "name"},
			"results[].rows[]":              {"columns"},
			"results[].rows[].columns[]":    {"type"},
			"results[].rowErrors[]":         {"columnName", "error", "wec"},
			"results[].rowErrors[].wec":     {"clusterId"},
			"results[].aggregationErrors[]": {"columnName", "error"},
		},
	}
	for file, paths := range required {
		crd := loadCRD(t, file)
		for path, want := range paths {
			got := slices.Sorted(slices.Values(testutil.SchemaAt(t, crd, path).Required))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: %s required (-want +got):\n%s", file, path, diff)
			}
		}
	}

	wantLists := map[string]string{
		bindingCRD + " spec.destinations":            "map clusterId",
		bindingCRD + " spec.workload.clusterScope":   "map group,resource,name",
		bindingCRD + " spec.workload.namespaceScope": "map group,resource,namespace,name",
	}
	gotLists := map[string]string{}
	for _, file := range controlCRDs {
		walkSchema("", loadCRD(t, file).Spec.Versions[0].Schema.OpenAPIV3Schema, func(path string, s *apiextensionsv1.JSONSchemaProps) {
			// The atomic lists are those of the embedded metav1.LabelSelector, marked so by Kubernetes today; an
			// unmarked list is atomic too, so they match KubeStellar's unmarked ones.
			if s.XListType != nil && *s.XListType != "atomic" {
				gotLists[file+" "+path] = *s.XListType + " " + strings.Join(s.XListMapKeys, ",")
			}
		})
	}
	if diff := cmp.Diff(wantLists, gotLists); diff != "" {
		t.Errorf("list types (-want +got):\n%s", diff)
	}
}

// TestCRDValidationIsMinimal: besides required lists, KubeStellar's CRDs validate only the BindingPolicy
// selector patterns and the downsync anyOf; no defaults, enums, bounds or CEL rules anywhere.
func TestCRDValidationIsMinimal(t *testing.T) {
	want := map[string]string{
		"spec.clusterSelectors[].matchLabels{}":               "pattern " + labelValuePattern,
		"spec.clusterSelectors[].matchExpressions[].key":      "pattern " + labelKeyPattern,
		"spec.clusterSelectors[].matchExpressions[].operator": "pattern ^(In|NotIn|Exists|DoesNotExist)$",
		"spec.clusterSelectors[].matchExpressions[].values[]": "pattern " + labelValuePattern,
		"spec.downsync[]": "anyOf apiGroup|resources|namespaces|namespaceSelectors|objectSelectors|objectNames",
	}
	for _, file := range controlCRDs {
		got := map[string]string{}
		walkSchema("", loadCRD(t, file).Spec.Versions[0].Schema.OpenAPIV3Schema, func(path string, s *apiextensionsv1.JSONSchemaProps) {
			if s.Default != nil || len(s.Enum) > 0 || len(s.XValidations) > 0 || s.Minimum != nil || s.Maximum != nil ||
				s.MinLength != nil || s.MaxLength != nil || s.MinItems != nil || s.MaxItems != nil ||
				s.MinProperties != nil || s.MaxProperties != nil || len(s.OneOf) > 0 || len(s.AllOf) > 0 || s.Not != nil {
				t.Errorf("%s: %s has validation beyond KubeStellar's", file, path)
			}
			if s.Pattern != "" {
				got[path] = "pattern " + s.Pattern
			}
			if len(s.AnyOf) > 0 {
				var keys []string
				for _, alt := range s.AnyOf {
					keys = append(keys, strings.Join(alt.Required, ","))
				}
				got[path] = "anyOf " + strings.Join(keys, "|")
			}
		})
		if file != bindingPolicyCRD {
			if len(got) > 0 {
				t.Errorf("%s: unexpected patterns or anyOf: %v", file, got)
			}
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s patterns and anyOf (-want +got):\n%s", file, diff)
		}
	}
	for _, path := range []string{"results[].rows[].columns[].object", "results[].rows[].columns[].array"} {
		s := testutil.SchemaAt(t, loadCRD(t, combinedStatusCRD), path)
		if !ptr.Deref(s.XPreserveUnknownFields, false) || s.Type != "" {
			t.Errorf("%s: type %q preserve-unknown-fields %v, want any JSON", path, s.Type, s.XPreserveUnknownFields)
		}
	}
}

const (
	labelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	labelKeyPattern   = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
)

// walkSchema calls visit on s and every schema below it, with its path ("name[]" for items, "name{}" for
// additionalProperties).
func walkSchema(path string, s *apiextensionsv1.JSONSchemaProps, visit func(string, *apiextensionsv1.JSONSchemaProps)) {
	if s == nil {
		return
	}
	visit(path, s)
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	for name, p := range s.Properties {
		walkSchema(join(name), &p, visit)
	}
	if s.Items != nil {
		walkSchema(path+"[]", s.Items.Schema, visit)
	}
	if s.AdditionalProperties != nil {
		walkSchema(path+"{}", s.AdditionalProperties.Schema, visit)
	}
}

// validator returns the schema validator the API server builds from a CRD file.
func validator(t *testing.T, file string) apiservervalidation.SchemaValidator {
	t.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(
		loadCRD(t, file).Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatalf("converting the schema: %v", err)
	}
	v, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		t.Fatalf("building the schema validator: %v", err)
	}
	return v
}

// toMap encodes a Go object as the API server receives it.
func toMap(t *testing.T, obj any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCRDSchemaAdmitsZeroValues: objects whose always-sent keys hold zero values (generation 0, limit 0, empty
// message, core group "", no columns) pass the generated schemas, as KubeStellar's own writes do.
func TestCRDSchemaAdmitsZeroValues(t *testing.T) {
	cond := controlv1alpha1.BindingPolicyCondition{
		Type: controlv1alpha1.TypeStatusCollectorsAvailable, Status: corev1.ConditionTrue,
		LastTransitionTime: transitionTime, Reason: controlv1alpha1.ReasonReconcileSuccess,
	}
	gvr := metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	tests := map[string]struct {
		file string
		obj  any
	}{
		"BindingPolicy": {bindingPolicyCRD, &controlv1alpha1.BindingPolicy{
			Spec: controlv1alpha1.BindingPolicySpec{
				ClusterSelectors: []metav1.LabelSelector{{}},
				Downsync: []controlv1alpha1.DownsyncPolicyClause{
					{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("")}},
				},
			},
			Status: controlv1alpha1.BindingPolicyStatus{Conditions: []controlv1alpha1.BindingPolicyCondition{cond}},
		}},
		"Binding": {bindingCRD, &controlv1alpha1.Binding{
			Spec: controlv1alpha1.BindingSpec{
				Workload: controlv1alpha1.DownsyncObjectClauses{
					ClusterScope: []controlv1alpha1.ClusterScopeDownsyncClause{{
						ClusterScopeDownsyncObject: controlv1alpha1.ClusterScopeDownsyncObject{GroupVersionResource: gvr},
					}},
					NamespaceScope: []controlv1alpha1.NamespaceScopeDownsyncClause{{
						NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{GroupVersionResource: gvr},
					}},
				},
				Destinations: []controlv1alpha1.Destination{{}},
			},
			Status: controlv1alpha1.BindingStatus{Conditions: []controlv1alpha1.BindingPolicyCondition{cond}},
		}},
		"StatusCollector": {statusCollectorCRD, &controlv1alpha1.StatusCollector{
			Spec: controlv1alpha1.StatusCollectorSpec{
				Select:         []controlv1alpha1.NamedExpression{{}},
				CombinedFields: []controlv1alpha1.NamedAggregator{{}},
			},
		}},
		"CombinedStatus": {combinedStatusCRD, &controlv1alpha1.CombinedStatus{
			Results: []controlv1alpha1.NamedStatusCombination{{
				ColumnNames:       []string{},
				Rows:              []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{{Type: controlv1alpha1.TypeNull}}}},
				RowErrors:         []controlv1alpha1.RowEvaluationError{{}},
				AggregationErrors: []controlv1alpha1.ErrorInColumn{{}},
			}},
		}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if errs := apiservervalidation.ValidateCustomResource(nil, toMap(t, tt.obj), validator(t, tt.file)); len(errs) > 0 {
				t.Errorf("refused: %v", errs.ToAggregate())
			}
		})
	}
}

// TestCRDSchemaBindingPolicyChecks: the installed BindingPolicy schema refuses a downsync clause without any
// object-test key and malformed cluster selectors, and accepts the empty core group as the only key.
func TestCRDSchemaBindingPolicyChecks(t *testing.T) {
	v := validator(t, bindingPolicyCRD)
	tests := map[string]struct {
		spec string
		path string // where the error is; empty for an accepted spec
	}{
		"clause with only the core group":     {spec: `{"downsync":[{"apiGroup":""}]}`},
		"clause with an empty names list":     {spec: `{"downsync":[{"objectNames":[]}]}`},
		"clause with only a modulation":       {spec: `{"downsync":[{"createOnly":true,"statusCollectors":["a"]}]}`, path: "spec.downsync[0]"},
		"empty clause":                        {spec: `{"downsync":[{}]}`, path: "spec.downsync[0]"},
		"selectors that select every cluster": {spec: `{"clusterSelectors":[{},{"matchLabels":{"example.com/zone":""}}]}`},
		"bad label value": {
			spec: `{"clusterSelectors":[{"matchLabels":{"zone":"a b"}}]}`, path: "spec.clusterSelectors[0].matchLabels.zone",
		},
		"bad key": {
			spec: `{"clusterSelectors":[{"matchExpressions":[{"key":"Example.com/zone","operator":"Exists"}]}]}`,
			path: "spec.clusterSelectors[0].matchExpressions[0].key",
		},
		"bad operator": {
			spec: `{"clusterSelectors":[{"matchExpressions":[{"key":"zone","operator":"Gt","values":["1"]}]}]}`,
			path: "spec.clusterSelectors[0].matchExpressions[0].operator",
		},
		"bad value": {
			spec: `{"clusterSelectors":[{"matchExpressions":[{"key":"zone","operator":"In","values":["-a"]}]}]}`,
			path: "spec.clusterSelectors[0].matchExpressions[0].values[0]",
		},
		"namespace selectors are not checked": {
			spec: `{"downsync":[{"namespaceSelectors":[{"matchLabels":{"zone":"a b"}}]}]}`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var spec any
			if err := json.Unmarshal([]byte(tt.spec), &spec); err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{
				"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "BindingPolicy",
				"metadata": map[string]any{"name": "bp"}, "spec": spec,
			}
			errs := apiservervalidation.ValidateCustomResource(nil, obj, v)
			if tt.path == "" {
				if len(errs) > 0 {
					t.Errorf("refused: %v", errs.ToAggregate())
				}
				return
			}
			// The anyOf failure is reported without a field path, naming the clause in its message.
			if !slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == tt.path || strings.Contains(e.Error(), `"`+tt.path+`"`) }) {
				t.Errorf("want an error at %s, got %v", tt.path, errs.ToAggregate())
			}
		})
	}
}

// TestManagedClusterCRD checks the hand-written OCM ManagedCluster stand-in.
func TestManagedClusterCRD(t *testing.T) {
	crd := loadCRD(t, managedClusterCRD)
	if crd.Name != "managedclusters.cluster.open-cluster-management.io" || crd.Spec.Group != "cluster.open-cluster-management.io" ||
		crd.Spec.Scope != apiextensionsv1.ClusterScoped {
		t.Errorf("name/group/scope = %s/%s/%s", crd.Name, crd.Spec.Group, crd.Spec.Scope)
	}
	if crd.Spec.Names.Kind != "ManagedCluster" || crd.Spec.Names.Plural != "managedclusters" {
		t.Errorf("kind/plural = %s/%s", crd.Spec.Names.Kind, crd.Spec.Names.Plural)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("want one version, got %d", len(crd.Spec.Versions))
	}
	v := crd.Spec.Versions[0]
	if v.Name != "v1" || !v.Served || !v.Storage {
		t.Errorf("version %s served=%t storage=%t, want v1 served and storage", v.Name, v.Served, v.Storage)
	}
	wantSub := &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	if diff := cmp.Diff(wantSub, v.Subresources); diff != "" {
		t.Errorf("subresources (-want +got):\n%s", diff)
	}
	for _, path := range []string{"spec", "status"} {
		s := testutil.SchemaAt(t, crd, path)
		if s.Type != "object" || !ptr.Deref(s.XPreserveUnknownFields, false) {
			t.Errorf("%s: type %q preserve-unknown-fields %v, want an object kept as written", path, s.Type, s.XPreserveUnknownFields)
		}
	}
}
