package chart

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The namespaces of config/ (before and after kustomize's namespace).
var configNamespaces = []string{"system", "drover-system"}

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s (%v)", pattern, err)
	}
	var out []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			rel, _ := filepath.Rel(root, f)
			out = append(out, rel)
		}
	}
	return out
}

func configCRDs(t *testing.T) []apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var out []apiextensionsv1.CustomResourceDefinition
	for _, f := range glob(t, "config/components/*/crd/*.yaml") {
		for _, o := range readDocs(t, f) {
			var crd apiextensionsv1.CustomResourceDefinition
			o.into(t, &crd)
			out = append(out, crd)
		}
	}
	return out
}

// TestChartMatchesConfig: the chart's CRDs, webhooks and RBAC are config/'s, but for the names, namespaces and
// the values' settings (with the default values, those are config/'s too).
func TestChartMatchesConfig(t *testing.T) {
	t.Parallel()
	objs := render{}.objects(t)
	t.Run("CRDs", func(t *testing.T) { compareCRDs(t, objs) })
	t.Run("webhooks", func(t *testing.T) {
		for _, f := range glob(t, "config/components/*/webhooks.yaml") {
			for _, src := range readDocs(t, f) {
				compareWebhooks(t, src, find(t, objs, src.kind(), "drover-"+src.name()))
			}
		}
	})
	t.Run("RBAC", func(t *testing.T) {
		files := append(glob(t, "config/components/*/role.yaml"), glob(t, "config/rbac/*.yaml")...)
		for _, f := range files {
			for _, src := range readDocs(t, f) {
				switch {
				case src.kind() == "ServiceAccount":
				case src.kind() == "ClusterRoleBinding" && !has(objs, src.kind(), "drover-"+src.name()):
					// The chart binds a generated ClusterRole with a binding named after it.
					var b rbacv1.ClusterRoleBinding
					src.into(t, &b)
					compareRBAC(t, src, find(t, objs, src.kind(), "drover-"+b.RoleRef.Name))
				default:
					compareRBAC(t, src, find(t, objs, src.kind(), "drover-"+src.name()))
				}
				if src.kind() == "ClusterRole" && strings.HasSuffix(src.name(), "-role") && src.name() != "manager-aggregated-role" {
					checkBoundDirectly(t, objs, "drover-"+src.name())
				}
			}
		}
	})
}

func compareCRDs(t *testing.T, objs []object) {
	want := configCRDs(t)
	rendered := ofKind(objs, "CustomResourceDefinition")
	if len(rendered) != len(want) {
		t.Errorf("%d CRDs rendered, config/components has %d", len(rendered), len(want))
	}
	for _, w := range want {
		var got apiextensionsv1.CustomResourceDefinition
		find(t, rendered, "CustomResourceDefinition", w.Name).into(t, &got)
		// A conversion webhook calls the chart's Service, as the webhook configurations do.
		if c := w.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil && c.Webhook.ClientConfig.Service != nil {
			c.Webhook.ClientConfig.Service.Name = "drover-" + c.Webhook.ClientConfig.Service.Name
			c.Webhook.ClientConfig.Service.Namespace = defaultNamespace
		}
		if !equality.Semantic.DeepEqual(got.Spec, w.Spec) {
			t.Errorf("CRD %s: the chart's spec differs from config/components'", w.Name)
		}
		for k, v := range w.Annotations {
			if got.Annotations[k] != v {
				t.Errorf("CRD %s: annotation %s is %q, config/components has %q", w.Name, k, got.Annotations[k], v)
			}
		}
		if got.Annotations["helm.sh/resource-policy"] == "keep" {
			t.Errorf("CRD %s is kept on uninstall", w.Name)
		}
	}
}

// compareWebhooks compares a component's webhook configuration with the chart's, once each webhook's client,
// and the namespaces its selector excludes, are made the chart's.
func compareWebhooks(t *testing.T, src, got object) {
	want, have := webhooksOf(t, src), webhooksOf(t, got)
	if len(want) != len(have) {
		t.Fatalf("%s: %d webhooks, config/components has %d", got.name(), len(have), len(want))
	}
	for i := range want {
		w, h := want[i], have[i]
		w.ClientConfig.Service.Name = "drover-" + w.ClientConfig.Service.Name
		w.ClientConfig.Service.Namespace = defaultNamespace
		w.NamespaceSelector = chartSelector(w.NamespaceSelector, h.NamespaceSelector != nil)
		if !equality.Semantic.DeepEqual(w, h) {
			t.Errorf("webhook %s differs from config/components':\nchart  %+v\nconfig %+v", w.Name, h, w)
		}
	}
}

// chartSelector is the namespaceSelector the chart gives a webhook of config/ (when it gives it one): the
// kubernetes.io/metadata.name NotIn expression (a new first one if there is none) excludes kube-system,
// the namespaces it excluded but config/'s, and the release's.
func chartSelector(sel *metav1.LabelSelector, has bool) *metav1.LabelSelector {
	if !has {
		return sel
	}
	out := &metav1.LabelSelector{}
	if sel != nil {
		out = sel.DeepCopy()
	}
	for i, e := range out.MatchExpressions {
		if e.Key == corev1.LabelMetadataName && e.Operator == metav1.LabelSelectorOpNotIn {
			out.MatchExpressions[i].Values = excluded(e.Values)
			return out
		}
	}
	first := metav1.LabelSelectorRequirement{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: excluded(nil)}
	out.MatchExpressions = append([]metav1.LabelSelectorRequirement{first}, out.MatchExpressions...)
	return out
}

func excluded(values []string) []string {
	out := []string{"kube-system"}
	for _, v := range values {
		if !slices.Contains(out, v) && !slices.Contains(configNamespaces, v) {
			out = append(out, v)
		}
	}
	return append(out, defaultNamespace)
}

// compareRBAC compares a role or binding of config/ with the chart's, named with the prefix config/default
// gives, in the release's namespace, binding the chart's ServiceAccount.
func compareRBAC(t *testing.T, src, got object) {
	switch src.kind() {
	case "ClusterRole", "Role":
		var w, h rbacv1.ClusterRole // a Role's fields are a subset of a ClusterRole's
		src.into(t, &w)
		got.into(t, &h)
		if !equality.Semantic.DeepEqual(w.Rules, h.Rules) || !equality.Semantic.DeepEqual(w.AggregationRule, h.AggregationRule) {
			t.Errorf("%s %s: rules differ from config/'s\nchart  %+v\nconfig %+v", src.kind(), h.Name, h.Rules, w.Rules)
		}

	case "ClusterRoleBinding", "RoleBinding":
		var w, h rbacv1.RoleBinding
		src.into(t, &w)
		got.into(t, &h)
		w.RoleRef.Name = "drover-" + w.RoleRef.Name
		for i := range w.Subjects {
			w.Subjects[i].Name = "drover-" + w.Subjects[i].Name
			w.Subjects[i].Namespace = defaultNamespace
		}
		if !equality.Semantic.DeepEqual(w.RoleRef, h.RoleRef) || !equality.Semantic.DeepEqual(w.Subjects, h.Subjects) {
			t.Errorf("%s %s: binds %+v to %+v, config/ %+v to %+v", src.kind(), h.Name, h.RoleRef, h.Subjects, w.RoleRef, w.Subjects)
		}
	default:
		t.Errorf("unexpected %s %s in config's RBAC", src.kind(), src.name())
	}
}

func has(objs []object, kind, name string) bool {
	return slices.ContainsFunc(objs, func(o object) bool { return o.kind() == kind && o.name() == name })
}

// checkBoundDirectly: a generated ClusterRole is bound to the manager by a ClusterRoleBinding of its own
// name, and does not join the aggregated role (an uninstall would race kube-controller-manager's aggregation
// controller, which applies the aggregated role again when a labelled role is deleted).
func checkBoundDirectly(t *testing.T, objs []object, role string) {
	t.Helper()
	var r rbacv1.ClusterRole
	find(t, objs, "ClusterRole", role).into(t, &r)
	if _, ok := r.Labels["drover.dev/aggregate-to-manager"]; ok {
		t.Errorf("ClusterRole %s joins the aggregated role", role)
	}
	var b rbacv1.ClusterRoleBinding
	find(t, objs, "ClusterRoleBinding", role).into(t, &b)
	want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "drover-manager", Namespace: defaultNamespace}}
	if b.RoleRef.Name != role || !equality.Semantic.DeepEqual(b.Subjects, want) {
		t.Errorf("ClusterRoleBinding %s binds %s to %+v, want %s to %+v", role, b.RoleRef.Name, b.Subjects, role, want)
	}
}
