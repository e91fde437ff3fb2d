package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

const (
	deploy = openyurtv1alpha1.DeploymentTemplateType
	sts    = openyurtv1alpha1.StatefulSetTemplateType
)

func TestChildNameKeepsQualifyingNames(t *testing.T) {
	cases := map[string]struct {
		kind        openyurtv1alpha1.TemplateType
		owner, pool string
		want        string
	}{
		"short deployment":                        {deploy, "web", "hangzhou", "web-hangzhou"},
		"short statefulset":                       {sts, "web", "hangzhou", "web-hangzhou"},
		"dotted deployment":                       {deploy, "web.v1", "pool.a", "web.v1-pool.a"},
		"deployment at the limit":                 {deploy, strings.Repeat("a", 100), strings.Repeat("b", 141), strings.Repeat("a", 100) + "-" + strings.Repeat("b", 141)},
		"statefulset at the limit":                {sts, strings.Repeat("a", 20), strings.Repeat("b", 31), strings.Repeat("a", 20) + "-" + strings.Repeat("b", 31)},
		"unknown kind uses the deployment limits": {"", "web", "p", "web-p"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ChildName(tc.kind, tc.owner, tc.pool)); diff != "" {
				t.Errorf("ChildName (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChildNameFallback(t *testing.T) {
	cases := map[string]struct {
		kind        openyurtv1alpha1.TemplateType
		owner, pool string
		limit       int
	}{
		"deployment one over the limit":   {deploy, strings.Repeat("a", 100), strings.Repeat("b", 142), DeploymentNameLimit},
		"statefulset one over the limit":  {sts, strings.Repeat("a", 20), strings.Repeat("b", 32), StatefulSetNameLimit},
		"statefulset with dots":           {sts, "web", "pool.a", StatefulSetNameLimit},
		"statefulset long with dots":      {sts, "web.v1.x", strings.Repeat("p.", 30) + "q", StatefulSetNameLimit},
		"cut ends on a dash":              {sts, strings.Repeat("a", 40), "-" + strings.Repeat("b", 30), StatefulSetNameLimit},
		"deployment cut ends on a dot":    {deploy, strings.Repeat("a", 230), "." + strings.Repeat("b", 30), DeploymentNameLimit},
		"very long deployment":            {deploy, strings.Repeat("o", 253), strings.Repeat("p", 63), DeploymentNameLimit},
		"very long statefulset":           {sts, strings.Repeat("o", 253), strings.Repeat("p", 63), StatefulSetNameLimit},
		"statefulset over the label size": {sts, strings.Repeat("a", 60), "b", StatefulSetNameLimit},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ChildName(tc.kind, tc.owner, tc.pool)
			if got != ChildName(tc.kind, tc.owner, tc.pool) {
				t.Fatalf("not deterministic")
			}
			if len(got) > tc.limit {
				t.Errorf("len(%q) = %d > %d", got, len(got), tc.limit)
			}
			if strings.HasPrefix(got, tc.owner+"-"+tc.pool) {
				t.Errorf("%q did not fall back", got)
			}
			prefix, hash, ok := cutLast(got, "-")
			if !ok || len(hash) != 10 || strings.HasSuffix(prefix, "-") || strings.HasSuffix(prefix, ".") {
				t.Errorf("%q is not <prefix without trailing -/.>-<10 hex>", got)
			}
			var errs []string
			if tc.kind == sts {
				errs = validation.IsDNS1123Label(got)
			} else {
				errs = validation.IsDNS1123Subdomain(got)
			}
			if len(errs) > 0 {
				t.Errorf("%q is not a valid name: %v", got, errs)
			}
		})
	}
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func TestChildNameFallbackHashIsOverOwnerSlashPool(t *testing.T) {
	// "a-b" + "c" and "a" + "b-c" share the base "a-b-c" but not "<owner>/<pool>".
	x := ChildName(sts, strings.Repeat("a", 50)+"-b", "c")
	y := ChildName(sts, strings.Repeat("a", 50), "b-c")
	if x == y {
		t.Errorf("both gave %q", x)
	}
}

func TestChildNameDistinctPoolsNeverCollide(t *testing.T) {
	for _, kind := range []openyurtv1alpha1.TemplateType{deploy, sts} {
		for _, owner := range []string{"web", strings.Repeat("o", 60), strings.Repeat("o", 240)} {
			seen := map[string]string{}
			for i := range 3000 {
				pool := fmt.Sprintf("pool-%d", i)
				if i%3 == 0 {
					pool = strings.Repeat("p", 50) + pool
				}
				name := ChildName(kind, owner, pool)
				if prev, dup := seen[name]; dup {
					t.Fatalf("%s owner %q: pools %q and %q both get %q", kind, owner, prev, pool, name)
				}
				seen[name] = pool
			}
		}
	}
}
