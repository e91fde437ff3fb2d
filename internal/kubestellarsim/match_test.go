package kubestellarsim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

var (
	deployment = objectInfo{
		ObjectRef: ObjectRef{Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx"},
		Version:   "v1", Namespaced: true, Labels: map[string]string{"app.kubernetes.io/name": "nginx"}, ResourceVersion: "10",
	}
	configMap = objectInfo{
		ObjectRef: ObjectRef{Resource: "configmaps", Namespace: "other", Name: "settings"},
		Version:   "v1", Namespaced: true, ResourceVersion: "11",
	}
	namespaceObj = objectInfo{
		ObjectRef: ObjectRef{Resource: "namespaces", Name: "demo"},
		Version:   "v1", Labels: map[string]string{"team": "a"}, ResourceVersion: "12",
	}
	testNamespaces = namespaceLabels{"demo": {"team": "a"}, "other": {}}
)

func TestClauseMatches(t *testing.T) {
	byLabel := func(k, v string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	cases := map[string]struct {
		test controlv1alpha1.DownsyncObjectTest
		obj  objectInfo
		want bool
	}{
		"nil apiGroup matches any group":          {test: controlv1alpha1.DownsyncObjectTest{Resources: []string{"deployments"}}, obj: deployment, want: true},
		"empty apiGroup is the core group":        {test: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("")}, obj: configMap, want: true},
		"empty apiGroup does not match apps":      {test: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("")}, obj: deployment},
		"apiGroup apps":                           {test: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("apps")}, obj: deployment, want: true},
		"resource star":                           {test: controlv1alpha1.DownsyncObjectTest{Resources: []string{"*"}}, obj: configMap, want: true},
		"resource not listed":                     {test: controlv1alpha1.DownsyncObjectTest{Resources: []string{"services"}}, obj: configMap},
		"namespace listed":                        {test: controlv1alpha1.DownsyncObjectTest{Namespaces: []string{"x", "demo"}}, obj: deployment, want: true},
		"namespace not listed":                    {test: controlv1alpha1.DownsyncObjectTest{Namespaces: []string{"x"}}, obj: deployment},
		"cluster-scoped object and namespaces":    {test: controlv1alpha1.DownsyncObjectTest{Namespaces: []string{"demo"}}, obj: namespaceObj},
		"cluster-scoped object and namespace *":   {test: controlv1alpha1.DownsyncObjectTest{Namespaces: []string{"*"}}, obj: namespaceObj, want: true},
		"object name star":                        {test: controlv1alpha1.DownsyncObjectTest{ObjectNames: []string{"*"}}, obj: deployment, want: true},
		"object name listed":                      {test: controlv1alpha1.DownsyncObjectTest{ObjectNames: []string{"nginx"}}, obj: deployment, want: true},
		"object name not listed":                  {test: controlv1alpha1.DownsyncObjectTest{ObjectNames: []string{"apache"}}, obj: deployment},
		"object selectors any-of":                 {test: controlv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{byLabel("x", "y"), byLabel("app.kubernetes.io/name", "nginx")}}, obj: deployment, want: true},
		"object selectors none match":             {test: controlv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{byLabel("x", "y")}}, obj: deployment},
		"criteria are ANDed":                      {test: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("apps"), ObjectNames: []string{"apache"}}, obj: deployment},
		"namespace selector matches":              {test: controlv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{byLabel("team", "a")}}, obj: deployment, want: true},
		"namespace selector does not match":       {test: controlv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{byLabel("team", "b")}}, obj: deployment},
		"namespace selector {} accepts":           {test: controlv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{byLabel("team", "b"), {}}}, obj: configMap, want: true},
		"namespace selector {} cluster-scoped":    {test: controlv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{{}}}, obj: namespaceObj, want: true},
		"namespace selector cluster-scoped":       {test: controlv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{byLabel("team", "a")}}, obj: namespaceObj},
		"namespace selector, missing namespace":   {test: controlv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpDoesNotExist}}}}}, obj: objectInfo{ObjectRef: ObjectRef{Resource: "configmaps", Namespace: "gone", Name: "x"}, Namespaced: true}},
		"invalid object selector matches none":    {test: controlv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}}, obj: deployment},
		"empty test (only modulation) matches":    {obj: deployment, want: true},
		"empty lists set no constraint":           {test: controlv1alpha1.DownsyncObjectTest{Resources: []string{}, Namespaces: []string{}}, obj: deployment, want: true},
		"resource star and name listed, wrong ns": {test: controlv1alpha1.DownsyncObjectTest{Resources: []string{"*"}, ObjectNames: []string{"nginx"}, Namespaces: []string{"other"}}, obj: deployment},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := clauseMatches(&parseClauses([]controlv1alpha1.DownsyncPolicyClause{{DownsyncObjectTest: tc.test}})[0], &tc.obj, testNamespaces); got != tc.want {
				t.Errorf("clauseMatches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExcluded(t *testing.T) {
	cases := map[string]struct {
		group, resource string
		want            bool
	}{
		"core events":                {"", "events", true},
		"core nodes":                 {"", "nodes", true},
		"core endpoints":             {"", "endpoints", true},
		"events.k8s.io events":       {"events.k8s.io", "events", true},
		"csinodes":                   {"storage.k8s.io", "csinodes", true},
		"csistoragecapacities":       {"storage.k8s.io", "csistoragecapacities", true},
		"leases":                     {"coordination.k8s.io", "leases", true},
		"endpointslices":             {"discovery.k8s.io", "endpointslices", true},
		"flowschemas":                {"flowcontrol.apiserver.k8s.io", "flowschemas", true},
		"apiservices":                {"apiregistration.k8s.io", "apiservices", true},
		"kubestellar's own":          {"control.kubestellar.io", "bindingpolicies", true},
		"deployments":                {"apps", "deployments", false},
		"storage classes":            {"storage.k8s.io", "storageclasses", false},
		"core configmaps":            {"", "configmaps", false},
		"events of some other group": {"example.com", "events", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Excluded(tc.group, tc.resource); got != tc.want {
				t.Errorf("Excluded(%q, %q) = %v, want %v", tc.group, tc.resource, got, tc.want)
			}
		})
	}
	// An excluded object is never selected, even by a clause that accepts everything.
	event := objectInfo{ObjectRef: ObjectRef{Resource: "events", Namespace: "demo", Name: "e"}, Namespaced: true}
	if _, ok := matchObject(parseClauses([]controlv1alpha1.DownsyncPolicyClause{{}}), &event, testNamespaces); ok {
		t.Error("an event was selected")
	}
}

func TestSelectDestinations(t *testing.T) {
	clusters := []clusterInfo{
		{Name: "c3", Labels: map[string]string{"env": "prod"}},
		{Name: "c1", Labels: map[string]string{"env": "dev"}},
		{Name: "c2", Labels: map[string]string{"env": "dev", "zone": "b"}},
	}
	cases := map[string]struct {
		selectors []metav1.LabelSelector
		want      []string
	}{
		"no selectors select none":    {},
		"empty list selects none":     {selectors: []metav1.LabelSelector{}},
		"empty selector selects all":  {selectors: []metav1.LabelSelector{{}}, want: []string{"c1", "c2", "c3"}},
		"one selector":                {selectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "dev"}}}, want: []string{"c1", "c2"}},
		"union, without duplicates":   {selectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "dev"}}, {MatchLabels: map[string]string{"zone": "b"}}, {MatchLabels: map[string]string{"env": "prod"}}}, want: []string{"c1", "c2", "c3"}},
		"match expressions":           {selectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev"}}}}}, want: []string{"c3"}},
		"invalid selector is skipped": {selectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}, {MatchLabels: map[string]string{"env": "prod"}}}, want: []string{"c3"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, selectDestinations(tc.selectors, clusters)); diff != "" {
				t.Errorf("destinations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatchObjectMergesModulation(t *testing.T) {
	clauses := []controlv1alpha1.DownsyncPolicyClause{
		{
			DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("apps")},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"z", "a"}, CreateOnly: true},
		},
		{
			DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("")}, // does not match
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"core"}, WantMultiWECReportedState: true},
		},
		{
			DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{ObjectNames: []string{"nginx"}},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"a", "m"}, WantSingletonReportedState: true},
		},
	}
	got, ok := matchObject(parseClauses(clauses), &deployment, testNamespaces)
	if !ok {
		t.Fatal("no clause matched")
	}
	want := controlv1alpha1.DownsyncModulation{
		CreateOnly: true, StatusCollectors: []string{"a", "m", "z"}, WantSingletonReportedState: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("modulation (-want +got):\n%s", diff)
	}
}
