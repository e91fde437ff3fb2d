package uninstallguard

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/scheme"
)

const (
	tappsCRD = "tapps.apps.tkestack.io"
	ppsCRD   = "persistentpodstates.apps.kruise.io"
	yadCRD   = "yurtappdaemons.apps.openyurt.io"
)

// mapper serves TApp and PersistentPodState, not YurtAppDaemon.
func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(tkestackv1.GroupVersion.WithKind("TApp"), meta.RESTScopeNamespace)
	m.Add(kruisev1alpha1.GroupVersion.WithKind("PersistentPodState"), meta.RESTScopeNamespace)
	return m
}

func tapps(n int) []client.Object {
	var objs []client.Object
	for i := range n {
		objs = append(objs, &tkestackv1.TApp{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("t%02d", i)}})
	}
	return objs
}

func check(t *testing.T, objs []client.Object, crds ...string) Report {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	r, err := Check(context.Background(), c, mapper(), crds)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheckPassesWhenNoObjectRemains(t *testing.T) {
	r := check(t, nil, tappsCRD, ppsCRD, yadCRD)
	if r.Blocked() {
		t.Fatalf("blocked with no objects: %s", r)
	}
	if len(r.Skipped) != 1 || r.Skipped[0] != yadCRD {
		t.Fatalf("skipped = %v, want only the unserved %s", r.Skipped, yadCRD)
	}
}

func TestCheckNamesTheObjectsThatRemain(t *testing.T) {
	r := check(t, tapps(2), tappsCRD, ppsCRD)
	if !r.Blocked() || len(r.Found) != 1 {
		t.Fatalf("report = %+v, want TApps found", r)
	}
	f := r.Found[0]
	if f.Kind != "TApp" || f.CRD != tappsCRD || f.Count != 2 || strings.Join(f.Names, ",") != "ns/t00,ns/t01" {
		t.Fatalf("found = %+v", f)
	}
	msg := r.String()
	for _, want := range []string{"refusing to uninstall", "TApp (tapps.apps.tkestack.io): 2", "ns/t00", "--no-hooks"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

func TestCheckBoundsTheList(t *testing.T) {
	r := check(t, tapps(listLimit+5), tappsCRD)
	if !r.Blocked() || r.Found[0].Count != listLimit+5 || len(r.Found[0].Names) != shown {
		t.Fatalf("report = %+v, want %d counted and %d named", r, listLimit+5, shown)
	}
}

func TestCheckRejectsAMalformedName(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	if _, err := Check(context.Background(), c, mapper(), []string{"tapps"}); err == nil {
		t.Fatal("want an error for a name without a group")
	}
}
