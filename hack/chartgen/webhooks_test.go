package main

import (
	"strings"
	"testing"
)

var testResources = newResources([]crdInfo{
	{Name: "tapps.apps.tkestack.io", Group: "apps.tkestack.io", Plural: "tapps", Scope: "Namespaced"},
	{Name: "nodepools.apps.openyurt.io", Group: "apps.openyurt.io", Plural: "nodepools", Scope: "Cluster"},
})

func hook(t *testing.T, rules string) object {
	t.Helper()
	return mustObject(t, "name: w.drover.dev\nclientConfig: {service: {name: webhook-service, namespace: system, path: /p}}\n"+
		"failurePolicy: Ignore\ntimeoutSeconds: 5\nrules: "+rules+"\n")
}

func TestClass(t *testing.T) {
	for rules, want := range map[string]string{
		`[{apiGroups: [""], resources: [pods]}]`:                                      classPods,
		`[{apiGroups: [""], resources: [pods/binding]}]`:                              classPods,
		`[{apiGroups: [""], resources: [nodes]}]`:                                     classNodes,
		`[{apiGroups: [apps.tkestack.io], resources: [tapps, tapps/scale]}]`:          classKinds,
		`[{apiGroups: [apps.tkestack.io, apps.openyurt.io], resources: [nodepools]}]`: classDeclared, // nodepools.apps.tkestack.io is not drover's
		`[{apiGroups: [apps], resources: [deployments]}]`:                             classDeclared,
		`[]`: classDeclared,
	} {
		if got := testResources.class(hook(t, rules)); got != want {
			t.Errorf("class of %s = %s, want %s", rules, got, want)
		}
	}
}

func TestNamespaced(t *testing.T) {
	for rules, want := range map[string]bool{
		`[{apiGroups: [""], resources: [pods]}]`:                                                          true,
		`[{apiGroups: [""], resources: [nodes]}]`:                                                         false,
		`[{apiGroups: [apps.openyurt.io], resources: [nodepools]}]`:                                       false,
		`[{apiGroups: [apps.tkestack.io], resources: [tapps]}]`:                                           true,
		`[{apiGroups: [apps.openyurt.io], resources: [nodepools]}, {apiGroups: [""], resources: [pods]}]`: true,
		`[{apiGroups: [example.com], resources: [widgets]}]`:                                              true,
	} {
		if got := testResources.namespaced(hook(t, rules)); got != want {
			t.Errorf("namespaced(%s) = %t, want %t", rules, got, want)
		}
	}
}

func TestWebhookTransform(t *testing.T) {
	tp := &templ{}
	w := hook(t, `[{apiGroups: [apps.tkestack.io], resources: [tapps]}]`)
	if err := testResources.webhook(tp, w); err != nil {
		t.Fatal(err)
	}
	localize(tp, w)
	got := mustRender(t, tp, w)
	for _, want := range []string{
		`{{- with include "drover.caBundle" $ }}{{ . | nindent 2 }}{{- end }}`,
		"name: drover-webhook-service", "namespace: {{ $.Release.Namespace }}",
		`failurePolicy: {{ include "drover.failurePolicy" (list $ "kinds" "Ignore") }}`,
		"timeoutSeconds: {{ $.Values.webhooks.timeoutSeconds | default 5 }}",
		"namespaceSelector:\n  matchExpressions:\n  - key: kubernetes.io/metadata.name\n    operator: NotIn\n" +
			`    values: {{ include "drover.excludedNamespaces" (list $) }}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("webhook template lacks %q:\n%s", want, got)
		}
	}
	tp = &templ{}
	w = hook(t, `[{apiGroups: [apps.openyurt.io], resources: [nodepools]}]`)
	if err := testResources.webhook(tp, w); err != nil {
		t.Fatal(err)
	}
	if got := mustRender(t, tp, w); strings.Contains(got, "namespaceSelector") {
		t.Errorf("a webhook on cluster-scoped resources got a namespaceSelector:\n%s", got)
	}
	if err := testResources.webhook(&templ{}, mustObject(t, "clientConfig: {url: https://x}\n")); err == nil {
		t.Error("a webhook whose client is a URL must fail")
	}
}

func TestExcludeNamespacesMerges(t *testing.T) {
	tp := &templ{}
	w := mustObject(t, `namespaceSelector:
  matchLabels: {team: a}
  matchExpressions:
  - {key: other, operator: Exists}
  - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kube-public, drover-system]}
`)
	excludeNamespaces(tp, w)
	got := mustRender(t, tp, w)
	want := `namespaceSelector:
  matchExpressions:
  - key: other
    operator: Exists
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ include "drover.excludedNamespaces" (list $ "kube-public") }}
  matchLabels:
    team: a
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	tp = &templ{}
	w = mustObject(t, "namespaceSelector: {matchExpressions: [{key: other, operator: Exists}]}\n")
	excludeNamespaces(tp, w)
	if got := mustRender(t, tp, w); !strings.HasPrefix(got, "namespaceSelector:\n  matchExpressions:\n  - key: kubernetes.io/metadata.name") ||
		!strings.Contains(got, "key: other") {
		t.Errorf("a new NotIn expression comes first, the others stay:\n%s", got)
	}
}

func TestWebhookConfig(t *testing.T) {
	tp := &templ{}
	doc := mustObject(t, "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"+
		"metadata: {name: tapp-validating}\nwebhooks:\n- name: w\n  clientConfig: {service: {name: webhook-service, namespace: system}}\n")
	if err := testResources.webhookConfig(tp, doc); err != nil {
		t.Fatal(err)
	}
	got := mustRender(t, tp, doc)
	for _, want := range []string{"name: drover-tapp-validating", `include "drover.webhookAnnotations" $`, `include "drover.labels" $`} {
		if !strings.Contains(got, want) {
			t.Errorf("webhook configuration lacks %q:\n%s", want, got)
		}
	}
	if err := testResources.webhookConfig(&templ{}, object{"kind": "Service"}); err == nil {
		t.Error("a webhooks file holding another kind must fail")
	}
}
