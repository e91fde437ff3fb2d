package main

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// The chart's fixed names: one drover per cluster, its CRDs and webhooks being cluster-wide, so no name
// follows the release's. Every name of the sources gets the prefix, as config/default's namePrefix does.
const (
	namePrefix     = "drover-"
	aggregateLabel = "drover.dev/aggregate-to-manager"
	// nsNameLabel is the label every namespace carries with its own name.
	nsNameLabel = "kubernetes.io/metadata.name"
)

// sourceNamespaces are the namespaces of config/ (before and after kustomize's namespace): each becomes the
// release's.
var sourceNamespaces = []string{"system", "drover-system"}

// releaseNamespace is the template expression of the release's namespace.
const releaseNamespace = "$.Release.Namespace"

type object = map[string]any

// crdInfo is what the chart knows of one CRD.
type crdInfo struct {
	Name   string `json:"name"`
	Group  string `json:"group"`
	Plural string `json:"plural"`
	Scope  string `json:"scope"`
	Owner  string `json:"owner"`
}

// owners names the project that first proposed each API group: the likely owner of a CRD of that group found
// in a cluster without this release's ownership.
var owners = map[string]string{
	"apps.kruise.io":           "OpenKruise",
	"apps.openyurt.io":         "OpenYurt",
	"apps.tkestack.io":         "TKEStack",
	"community.kubestellar.io": "KubeStellar",
}

func ownerOf(group string) string {
	if o, ok := owners[group]; ok {
		return o
	}
	return "another installation"
}

// splitDocs decodes the YAML documents of a manifest file.
func splitDocs(data []byte) ([]object, error) {
	var out []object
	for doc := range strings.SplitSeq("\n"+string(data), "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var obj object
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func str(obj object, path ...string) string {
	v, _ := get(obj, path...).(string)
	return v
}

func get(obj object, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(object)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func child(obj object, key string) object {
	m, ok := obj[key].(object)
	if !ok {
		m = object{}
		obj[key] = m
	}
	return m
}

// localize makes every namespace of config/ the release's: any value "system" or "drover-system" of a key
// namespace, at any depth.
func localize(t *templ, v any) {
	switch v := v.(type) {
	case object:
		for k, val := range v {
			if s, ok := val.(string); ok && k == "namespace" && slices.Contains(sourceNamespaces, s) {
				v[k] = t.Scalar(releaseNamespace)
				continue
			}
			localize(t, val)
		}
	case []any:
		for _, e := range v {
			localize(t, e)
		}
	}
}

// addChartLabels adds the chart's labels to an object's metadata, keeping its own.
func addChartLabels(t *templ, obj object) {
	labels := child(child(obj, "metadata"), "labels")
	labels[t.Line(`include "drover.labels" $`)] = ""
}

// crdTemplate is the template of one CRD: rendered when its controller is enabled and crds.<plural>.install
// is true, after the guard refusing to take over a CRD another installation owns.
func crdTemplate(t *templ, crd object) (string, crdInfo, error) {
	info := crdInfo{Name: str(crd, "metadata", "name"), Group: str(crd, "spec", "group"),
		Plural: str(crd, "spec", "names", "plural"), Scope: str(crd, "spec", "scope")}
	if crd["kind"] != "CustomResourceDefinition" || info.Name == "" || info.Group == "" || info.Plural == "" {
		return "", info, fmt.Errorf("not a CustomResourceDefinition with a name, group and plural")
	}
	info.Owner = ownerOf(info.Group)
	addChartLabels(t, crd)
	conversionClient(t, crd)
	localize(t, crd)
	body, err := t.render(crd)
	if err != nil {
		return "", info, err
	}
	return fmt.Sprintf("{{- if include \"drover.crdRendered\" (list $ %q) }}\n"+
		"{{- include \"drover.crdGuard\" (list $ %q) }}\n---\n%s{{- end }}\n", info.Name, info.Name, body), info, nil
}

// conversionClient makes a CRD's conversion webhook, if it has one, call the chart's Service with the CA of the
// certificate mode, as the webhook configurations do.
func conversionClient(t *templ, crd object) {
	cc, ok := get(crd, "spec", "conversion", "webhook", "clientConfig").(object)
	if !ok {
		return
	}
	if svc, ok := cc["service"].(object); ok {
		svc["name"] = namePrefix + str(svc, "name")
	}
	cc[t.Line(`include "drover.caBundle" $`)] = ""
	addCAInjection(t, child(crd, "metadata"))
}

// addCAInjection gives metadata cert-manager's CA injection annotation when certs.mode is certManager: in its
// annotations if it has some, else as its annotations.
func addCAInjection(t *templ, meta object) {
	if ann, ok := meta["annotations"].(object); ok {
		ann[t.Line(`include "drover.caInjection" $`)] = ""
		return
	}
	meta[t.Line(`include "drover.webhookAnnotations" $`)] = ""
}

// rbacDocs transforms the documents of a role file: every name gets the prefix, every namespace becomes the
// release's, ClusterRoles join the manager's aggregated role, bindings name the manager's ServiceAccount.
func rbacDocs(t *templ, docs []object) (string, error) {
	var b strings.Builder
	for i := 0; i < len(docs); i++ {
		doc := docs[i]
		meta := child(doc, "metadata")
		meta["name"] = namePrefix + str(meta, "name")
		switch doc["kind"] {
		case "ClusterRole":
			// Bound directly, not through the aggregated ClusterRole: at an uninstall, kube-controller-manager's
			// aggregation controller reacts to the deletion of a labelled role by applying the aggregated role's
			// rules, and its apply creates the aggregated role again when helm has just deleted it.
			labels := child(meta, "labels")
			delete(labels, aggregateLabel)
			if len(labels) == 0 {
				delete(meta, "labels")
			}
			docs = slices.Insert(docs, i+1, clusterRoleBinding(str(meta, "name")))
		case "Role":
		case "RoleBinding", "ClusterRoleBinding":
			ref := child(doc, "roleRef")
			ref["name"] = namePrefix + str(ref, "name")
			subjects, _ := doc["subjects"].([]any)
			for _, s := range subjects {
				if s, ok := s.(object); ok && s["kind"] == "ServiceAccount" {
					s["name"] = namePrefix + str(s, "name")
				}
			}
		default:
			return "", fmt.Errorf("unexpected %v in a role file", doc["kind"])
		}
		addChartLabels(t, doc)
		localize(t, doc)
		body, err := t.render(doc)
		if err != nil {
			return "", err
		}
		b.WriteString("---\n" + body)
	}
	return b.String(), nil
}

// wrapEnabled renders body only when the controller is enabled.
func wrapEnabled(controller, body string) string {
	return fmt.Sprintf("{{- if include \"drover.controllerEnabled\" (list $ %q) }}\n%s{{- end }}\n", controller, body)
}

// clusterRoleBinding binds the ClusterRole name (already prefixed) to the manager's ServiceAccount; its
// names are prefixed again by rbacDocs' RoleBinding case, so they are given without the prefix.
func clusterRoleBinding(name string) object {
	bare := strings.TrimPrefix(name, namePrefix)
	return object{
		"apiVersion": "rbac.authorization.k8s.io/v1",
		"kind":       "ClusterRoleBinding",
		"metadata":   object{"name": bare},
		"roleRef":    object{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": bare},
		"subjects":   []any{object{"kind": "ServiceAccount", "name": "manager", "namespace": "system"}},
	}
}
