package chart

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// allVerbs are the verbs every SubjectAccessReview asks about.
var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// grants are the rules the generated role files give the manager: cluster-wide (ClusterRoles) and in its own
// namespace (Roles).
type grants struct {
	cluster, namespaced []rbacv1.PolicyRule
}

// generatedGrants reads the role files `make manifests` generates: exactly what an installation must grant.
func generatedGrants(t *testing.T, root string) grants {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "config", "components", "*", "role.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no generated component roles (%v)", err)
	}
	files = append(files, filepath.Join(root, "config", "rbac", "role.yaml"))
	var g grants
	for _, o := range readObjects(t, files...) {
		var role rbacv1.ClusterRole // a Role has the same rules field
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatal(err)
		}
		switch o.GetKind() {
		case "ClusterRole":
			g.cluster = append(g.cluster, role.Rules...)
		case "Role":
			g.namespaced = append(g.namespaced, role.Rules...)
		}
	}
	return g
}

// access is one question for a SubjectAccessReview.
type access struct {
	group, resource, subresource, verb, namespace string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	ns := a.namespace
	if ns == "" {
		ns = "(all namespaces)"
	}
	return fmt.Sprintf("%s %s.%s in %s", a.verb, r, a.group, ns)
}

func ruleAllows(r rbacv1.PolicyRule, a access) bool {
	resource := a.resource
	if a.subresource != "" {
		resource += "/" + a.subresource
	}
	match := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	return len(r.ResourceNames) == 0 && match(r.APIGroups, a.group) && match(r.Resources, resource) && match(r.Verbs, a.verb)
}

// allows is what the generated roles say of a: a ClusterRole rule anywhere, a Role rule only in the
// manager's namespace.
func (g grants) allows(a access, managerNS string) bool {
	for _, r := range g.cluster {
		if ruleAllows(r, a) {
			return true
		}
	}
	if a.namespace != managerNS {
		return false
	}
	for _, r := range g.namespaced {
		if ruleAllows(r, a) {
			return true
		}
	}
	return false
}

// questions are every verb on every resource the generated roles name, and on Secrets and ConfigMaps, in
// the manager's namespace, in another one and cluster-wide.
func (g grants) questions(managerNS string) []access {
	type gr struct{ group, resource string }
	seen := map[gr]bool{{"", "secrets"}: true, {"", "configmaps"}: true}
	for _, r := range append(slices.Clone(g.cluster), g.namespaced...) {
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				seen[gr{group, res}] = true
			}
		}
	}
	var qs []access
	for k := range seen {
		resource, sub, _ := strings.Cut(k.resource, "/")
		for _, verb := range allVerbs {
			for _, ns := range []string{managerNS, "default", ""} {
				qs = append(qs, access{group: k.group, resource: resource, subresource: sub, verb: verb, namespace: ns})
			}
		}
	}
	return qs
}

// checkPermissions asks the API server, for every question, whether user may, and compares with the
// generated roles: both what the role grants and nothing more.
func checkPermissions(t *testing.T, c client.Client, user, managerNS string, g grants) {
	t.Helper()
	qs := g.questions(managerNS)
	var wrong []string
	for _, q := range qs {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + managerNS, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: q.group, Resource: q.resource, Subresource: q.subresource, Verb: q.verb, Namespace: q.namespace,
			},
		}}
		if err := c.Create(context.Background(), sar); err != nil {
			t.Fatalf("SubjectAccessReview %s: %v", q, err)
		}
		if want := g.allows(q, managerNS); sar.Status.Allowed != want {
			wrong = append(wrong, fmt.Sprintf("%s: allowed=%t, the generated role says %t", q, sar.Status.Allowed, want))
		}
	}
	slices.Sort(wrong)
	if len(wrong) > 0 {
		t.Errorf("%d of %d permissions of %s differ from the generated role:\n  %s", len(wrong), len(qs), user,
			strings.Join(wrong, "\n  "))
	}
	t.Logf("%d SubjectAccessReviews of %s agree with the generated role", len(qs), user)
}
