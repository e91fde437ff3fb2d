package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/drover-dev/drover/internal/kit"
)

func mustObject(t *testing.T, text string) object {
	t.Helper()
	var o object
	if err := yaml.Unmarshal([]byte(text), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func mustRender(t *testing.T, tp *templ, o any) string {
	t.Helper()
	out, err := tp.render(o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPlaceholders(t *testing.T) {
	tp := &templ{}
	meta := object{"name": "x", "labels": tp.Block(`include "l" $`), tp.Line(`include "a" $`): ""}
	o := object{"metadata": meta, "spec": object{"ns": tp.Scalar("$.Release.Namespace"), "text": "keep {{nodepool-name}} as is"}}
	got := mustRender(t, tp, o)
	want := `metadata:
  {{- with include "a" $ }}{{ . | nindent 2 }}{{- end }}
  labels: {{- include "l" $ | nindent 4 }}
  name: x
spec:
  ns: {{ $.Release.Namespace }}
  text: keep {{` + "`{{`" + `}}nodepool-name{{` + "`}}`" + `}} as is
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestPlaceholderMisuse(t *testing.T) {
	tp := &templ{}
	if _, err := tp.render(object{"list": []any{tp.Block("x")}}); err == nil {
		t.Error("a block placeholder in a list must fail")
	}
	tp = &templ{}
	if _, err := tp.render(object{"k": tp.Line("x")}); err == nil {
		t.Error("a line placeholder as a value must fail")
	}
	if err := checkNoPlaceholder("f", []byte("a: "+placeholderPrefix+"0X")); err == nil {
		t.Error("a source holding the placeholder prefix must fail")
	}
}

func TestValueKey(t *testing.T) {
	for name, kind := range map[string]string{"persistentpodstate": "PersistentPodState", "tapp": "TApp", "nodepool": "NodePool"} {
		c := &kit.Controller{Name: name, Kinds: []schema.GroupVersionKind{{Kind: "Other"}, {Kind: kind}}}
		want := map[string]string{"persistentpodstate": "persistentPodState", "tapp": "tapp", "nodepool": "nodePool"}[name]
		if got := valueKey(c); got != want {
			t.Errorf("valueKey(%s) = %s, want %s", name, got, want)
		}
	}
	if got := valueKey(&kit.Controller{Name: "generator", Kinds: []schema.GroupVersionKind{{Kind: "Pod"}}}); got != "generator" {
		t.Errorf("a controller without a kind of its name: key %s, want its name", got)
	}
}

func TestLocalize(t *testing.T) {
	tp := &templ{}
	o := mustObject(t, `metadata: {namespace: drover-system}
subjects: [{name: manager, namespace: system}, {name: other, namespace: elsewhere}]
spec: {namespaceName: system}
`)
	localize(tp, o)
	got := mustRender(t, tp, o)
	if strings.Count(got, "{{ $.Release.Namespace }}") != 2 || !strings.Contains(got, "namespace: elsewhere") ||
		!strings.Contains(got, "namespaceName: system") {
		t.Errorf("only the values of namespace keys naming config/'s namespaces become the release's:\n%s", got)
	}
}

func TestRBACDocs(t *testing.T) {
	docs := []object{
		mustObject(t, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: tapp-role, labels: {"+aggregateLabel+": \"true\"}}\nrules: []\n"),
		mustObject(t, "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: r, namespace: drover-system}\n"+
			"roleRef: {kind: Role, name: r}\nsubjects: [{kind: ServiceAccount, name: manager, namespace: system}]\n"),
	}
	got, err := rbacDocs(&templ{}, docs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, aggregateLabel) {
		t.Errorf("a ClusterRole of the chart joins the aggregated role (an uninstall would race the aggregation controller):\n%s", got)
	}
	for _, want := range []string{"name: drover-tapp-role", "kind: ClusterRoleBinding", "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: drover-tapp-role",
		`include "drover.labels" $`,
		"  name: drover-r\n  namespace: {{ $.Release.Namespace }}", "roleRef:\n  kind: Role\n  name: drover-r",
		"- kind: ServiceAccount\n  name: drover-manager\n  namespace: {{ $.Release.Namespace }}"} {
		if !strings.Contains(got, want) {
			t.Errorf("RBAC template lacks %q:\n%s", want, got)
		}
	}
	if _, err := rbacDocs(&templ{}, []object{{"kind": "Deployment"}}); err == nil {
		t.Error("a role file holding another kind must fail")
	}
}

const crdText = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations: {controller-gen.kubebuilder.io/version: v0.21.0}
  name: tapps.apps.tkestack.io
spec:
  group: apps.tkestack.io
  names: {kind: TApp, plural: tapps}
  scope: Namespaced
`

func TestCRDTemplate(t *testing.T) {
	got, info, err := crdTemplate(&templ{}, mustObject(t, crdText))
	if err != nil {
		t.Fatal(err)
	}
	if info != (crdInfo{Name: "tapps.apps.tkestack.io", Group: "apps.tkestack.io", Plural: "tapps", Scope: "Namespaced", Owner: "TKEStack"}) {
		t.Errorf("info %+v", info)
	}
	for _, want := range []string{`{{- if include "drover.crdRendered" (list $ "tapps.apps.tkestack.io") }}`,
		`{{- include "drover.crdGuard" (list $ "tapps.apps.tkestack.io") }}`, "controller-gen.kubebuilder.io/version: v0.21.0",
		`include "drover.labels" $`} {
		if !strings.Contains(got, want) {
			t.Errorf("CRD template lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "resource-policy") || strings.Contains(got, "caBundle") {
		t.Errorf("CRD template keeps the CRD on uninstall, or has a caBundle without a conversion webhook:\n%s", got)
	}
	if _, _, err := crdTemplate(&templ{}, object{"kind": "ConfigMap"}); err == nil {
		t.Error("not a CRD: want an error")
	}
}

func TestCRDConversionWebhook(t *testing.T) {
	text := crdText + "  conversion:\n    strategy: Webhook\n    webhook:\n      clientConfig:\n" +
		"        service: {name: webhook-service, namespace: system, path: /convert}\n"
	got, _, err := crdTemplate(&templ{}, mustObject(t, text))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: drover-webhook-service", "namespace: {{ $.Release.Namespace }}",
		`include "drover.caBundle" $`, `include "drover.caInjection" $`} {
		if !strings.Contains(got, want) {
			t.Errorf("conversion webhook: template lacks %q:\n%s", want, got)
		}
	}
}

func TestOwnerOf(t *testing.T) {
	if ownerOf("apps.kruise.io") != "OpenKruise" || ownerOf("example.com") != "another installation" {
		t.Error("ownerOf")
	}
}

func TestCheckUnique(t *testing.T) {
	a := controllerInfo{Name: "a", Key: "a", CRDs: []crdInfo{{Name: "xs.g1", Plural: "xs"}}}
	if err := checkUnique([]controllerInfo{a, {Name: "b", Key: "a"}}); err == nil {
		t.Error("two controllers with one key must fail")
	}
	if err := checkUnique([]controllerInfo{a, {Name: "b", Key: "b", CRDs: []crdInfo{{Name: "xs.g2", Plural: "xs"}}}}); err == nil {
		t.Error("two CRDs with one plural must fail")
	}
}

func TestCheckLocalized(t *testing.T) {
	if checkLocalized("f", "namespace: drover-system\n") == nil || checkLocalized("f", "  namespace: system\n") == nil {
		t.Error("config/'s namespaces left in a template must fail")
	}
	if err := checkLocalized("f", "namespace: {{ $.Release.Namespace }}\n"); err != nil {
		t.Error(err)
	}
}
