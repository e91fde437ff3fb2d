package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Failure-policy classes of a webhook, by the resources its rules match; the helper drover.failurePolicy
// maps each to its value.
const (
	classKinds    = "kinds"    // only drover's own kinds: webhooks.failurePolicy (default Fail)
	classPods     = "pods"     // pods: webhooks.podFailurePolicy (default Ignore)
	classNodes    = "nodes"    // nodes: webhooks.nodeFailurePolicy (default Ignore)
	classDeclared = "declared" // anything else keeps the policy its declaration gives
)

// clusterScoped are the built-in resources that have no namespace, so a namespaceSelector never applies to
// them. A resource not listed here and not one of drover's CRDs counts as namespaced.
var clusterScoped = []string{
	"nodes", "namespaces", "persistentvolumes", "storageclasses", "csinodes", "csidrivers", "volumeattachments",
	"clusterroles", "clusterrolebindings", "customresourcedefinitions", "mutatingwebhookconfigurations",
	"validatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings",
	"priorityclasses", "runtimeclasses", "ingressclasses", "certificatesigningrequests", "apiservices",
}

// resources knows drover's CRDs, by group/plural.
type resources map[string]crdInfo

func newResources(crds []crdInfo) resources {
	r := resources{}
	for _, c := range crds {
		r[c.Group+"/"+c.Plural] = c
	}
	return r
}

type groupResource struct{ group, resource string }

// ruleResources lists the group/resource pairs of a webhook's rules (without subresources).
func ruleResources(w object) []groupResource {
	var out []groupResource
	rules, _ := w["rules"].([]any)
	for _, r := range rules {
		rule, _ := r.(object)
		groups, _ := rule["apiGroups"].([]any)
		res, _ := rule["resources"].([]any)
		for _, g := range groups {
			for _, name := range res {
				gs, _ := g.(string)
				rs, _ := name.(string)
				rs, _, _ = strings.Cut(rs, "/")
				out = append(out, groupResource{group: gs, resource: rs})
			}
		}
	}
	return out
}

// class returns the failure-policy class of a webhook: pods or nodes when a rule matches them, kinds when
// every rule matches drover's own kinds, else declared.
func (ix resources) class(w object) string {
	rs := ruleResources(w)
	own := len(rs) > 0
	for _, r := range rs {
		switch {
		case r.group == "" && r.resource == "pods":
			return classPods
		case r.group == "" && r.resource == "nodes":
			return classNodes
		}
		if _, ok := ix[r.group+"/"+r.resource]; !ok {
			own = false
		}
	}
	if own {
		return classKinds
	}
	return classDeclared
}

// namespaced tells whether any resource a webhook's rules match is namespaced: only then does a
// namespaceSelector mean anything.
func (ix resources) namespaced(w object) bool {
	for _, r := range ruleResources(w) {
		if crd, ok := ix[r.group+"/"+r.resource]; ok {
			if crd.Scope == "Namespaced" {
				return true
			}
			continue
		}
		if !slices.Contains(clusterScoped, r.resource) {
			return true
		}
	}
	return false
}

// webhookConfig transforms a Mutating- or ValidatingWebhookConfiguration of a component.
func (ix resources) webhookConfig(t *templ, doc object) error {
	if k := doc["kind"]; k != "MutatingWebhookConfiguration" && k != "ValidatingWebhookConfiguration" {
		return fmt.Errorf("unexpected %v in a webhooks file", k)
	}
	meta := child(doc, "metadata")
	meta["name"] = namePrefix + str(meta, "name")
	addChartLabels(t, doc)
	addCAInjection(t, meta)
	hooks, _ := doc["webhooks"].([]any)
	for _, h := range hooks {
		w, ok := h.(object)
		if !ok {
			return fmt.Errorf("%s: a webhook is not a map", str(meta, "name"))
		}
		if err := ix.webhook(t, w); err != nil {
			return fmt.Errorf("webhook %s: %w", str(w, "name"), err)
		}
	}
	localize(t, doc)
	return nil
}

// webhook makes one webhook the chart's: its client the chart's Service (with the caBundle of the
// certificate mode), its failure policy and timeout from the values, its namespaceSelector excluding
// kube-system and the release's namespace where its resources are namespaced.
func (ix resources) webhook(t *templ, w object) error {
	cc := child(w, "clientConfig")
	svc, ok := cc["service"].(object)
	if !ok {
		return fmt.Errorf("its client is not a Service")
	}
	svc["name"] = namePrefix + str(svc, "name")
	cc[t.Line(`include "drover.caBundle" $`)] = ""
	policy := str(w, "failurePolicy")
	if policy == "" {
		policy = "Fail" // the API's default
	}
	w["failurePolicy"] = t.Scalar(fmt.Sprintf(`include "drover.failurePolicy" (list $ %q %q)`, ix.class(w), policy))
	timeout := 10.0 // the API's default
	if v, ok := w["timeoutSeconds"].(float64); ok {
		timeout = v
	}
	w["timeoutSeconds"] = t.Scalar(fmt.Sprintf("$.Values.webhooks.timeoutSeconds | default %d", int(timeout)))
	if ix.namespaced(w) {
		excludeNamespaces(t, w)
	}
	return nil
}

// excludeNamespaces makes a webhook's namespaceSelector exclude kube-system and the release's namespace:
// into its kubernetes.io/metadata.name NotIn expression when it has one, else in a new one.
func excludeNamespaces(t *templ, w object) {
	sel := child(w, "namespaceSelector")
	exprs, _ := sel["matchExpressions"].([]any)
	for _, e := range exprs {
		if e, ok := e.(object); ok && e["key"] == nsNameLabel && e["operator"] == "NotIn" {
			e["values"] = t.Scalar(excludedNamespaces(e["values"]))
			return
		}
	}
	first := object{"key": nsNameLabel, "operator": "NotIn", "values": t.Scalar(excludedNamespaces(nil))}
	sel["matchExpressions"] = append([]any{first}, exprs...)
}

// excludedNamespaces is the expression of the namespaces a selector excludes: kube-system, the ones the
// source lists besides it and config/'s namespace, and the release's namespace.
func excludedNamespaces(values any) string {
	list, _ := values.([]any)
	args := ""
	for _, v := range list {
		if s, _ := v.(string); s != "" && s != "kube-system" && !slices.Contains(sourceNamespaces, s) {
			args += " " + strconv.Quote(s)
		}
	}
	return `include "drover.excludedNamespaces" (list $` + args + `)`
}
