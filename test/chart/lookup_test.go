package chart

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The guards that use lookup (a CRD another installation owns, a missing external certificate Secret) act
// only against a cluster. `helm template --dry-run=server` renders client-side but sends lookup to the
// cluster of the kubeconfig: here a fake API server that serves discovery and the objects given, by path.

func fakeCluster(t *testing.T, objects map[string]any) string {
	t.Helper()
	resources := map[string]metav1.APIResourceList{
		"/api/v1": {GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Kind: "Namespace", Verbs: []string{"get"}},
			{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: []string{"get"}}}},
		"/apis/apiextensions.k8s.io/v1": {GroupVersion: "apiextensions.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "customresourcedefinitions", Kind: "CustomResourceDefinition", Verbs: []string{"get"}}}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var body any
		if l, ok := resources[r.URL.Path]; ok {
			l.Kind, l.APIVersion = "APIResourceList", "v1"
			body = l
		} else if obj, ok := objects[r.URL.Path]; ok && r.Method == http.MethodGet {
			body = obj
		} else {
			w.WriteHeader(http.StatusNotFound)
			body = metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
				Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: r.URL.Path + " not found"}
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	config := "apiVersion: v1\nkind: Config\nclusters: [{name: fake, cluster: {server: " + srv.URL + "}}]\n" +
		"users: [{name: fake, user: {}}]\ncontexts: [{name: fake, context: {cluster: fake, user: fake}}]\ncurrent-context: fake\n"
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

func crdObject(name string, annotations map[string]string) map[string]any {
	return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name, "annotations": annotations}}
}

// against renders r with lookup answered by a fake cluster holding objects.
func against(t *testing.T, r render, objects map[string]any) error {
	t.Helper()
	r.args = append(r.args, "--dry-run=server", "--kubeconfig", fakeCluster(t, objects))
	_, err := r.run(t)
	return err
}

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"

func TestCRDGuard(t *testing.T) {
	t.Parallel()
	tapps := crdPath + "tapps.apps.tkestack.io"
	err := against(t, render{}, map[string]any{tapps: crdObject("tapps.apps.tkestack.io", nil)})
	for _, want := range []string{"CustomResourceDefinition tapps.apps.tkestack.io already exists",
		"probably installed by TKEStack", "set crds.tapps.install=false"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a foreign TApp CRD: want a failure saying %q, got %v", want, err)
		}
	}
	err = against(t, render{}, map[string]any{crdPath + "persistentpodstates.apps.kruise.io": crdObject("persistentpodstates.apps.kruise.io",
		map[string]string{"meta.helm.sh/release-name": "kruise", "meta.helm.sh/release-namespace": "kruise-system"})})
	if err == nil || !strings.Contains(err.Error(), "owned by the Helm release kruise in namespace kruise-system") ||
		!strings.Contains(err.Error(), "crds.persistentpodstates.install=false") {
		t.Errorf("a CRD of another release: want a failure naming it, got %v", err)
	}
	ours := map[string]string{"meta.helm.sh/release-name": "drover", "meta.helm.sh/release-namespace": defaultNamespace}
	if err := against(t, render{}, map[string]any{tapps: crdObject("tapps.apps.tkestack.io", ours)}); err != nil {
		t.Errorf("the release's own CRD (an upgrade): %v", err)
	}
	foreign := map[string]any{tapps: crdObject("tapps.apps.tkestack.io", nil)}
	if err := against(t, render{values: "crds: {tapps: {install: false}}\n"}, foreign); err != nil {
		t.Errorf("crds.tapps.install=false next to a foreign CRD: %v", err)
	}
	if err := against(t, render{values: onlyControllers("nodePool")}, foreign); err != nil {
		t.Errorf("tapp disabled next to a foreign TApp CRD: %v", err)
	}
}

func TestExternalSecretGuard(t *testing.T) {
	t.Parallel()
	r := render{values: cases["external"].values}
	cluster := map[string]any{"/api/v1/namespaces/kube-system": map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "kube-system"}}}
	err := against(t, r, cluster)
	if err == nil || !strings.Contains(err.Error(), "the Secret drover-webhook-server-cert") ||
		!strings.Contains(err.Error(), "does not exist in namespace drover-system") {
		t.Errorf("external mode without the Secret: want a clear failure, got %v", err)
	}
	cluster["/api/v1/namespaces/drover-system/secrets/drover-webhook-server-cert"] = map[string]any{"apiVersion": "v1",
		"kind": "Secret", "metadata": map[string]any{"name": "drover-webhook-server-cert", "namespace": defaultNamespace}}
	if err := against(t, r, cluster); err != nil {
		t.Errorf("external mode with the Secret: %v", err)
	}
}

// TestUpgradeKeepsHeldCRDs: an upgrade that turns a controller off, or sets crds.<plural>.install=false,
// still renders a CRD the release installed, because Helm would delete it and every object of its kind; a CRD
// annotated helm.sh/resource-policy=keep is let go (Helm leaves it in the cluster), and one of another
// release, or a first install, is not rendered.
func TestUpgradeKeepsHeldCRDs(t *testing.T) {
	t.Parallel()
	const name = "tapps.apps.tkestack.io"
	ours := map[string]string{"meta.helm.sh/release-name": "drover", "meta.helm.sh/release-namespace": defaultNamespace}
	kept := map[string]string{"helm.sh/resource-policy": "keep"}
	for k, v := range ours {
		kept[k] = v
	}
	other := map[string]string{"meta.helm.sh/release-name": "drover", "meta.helm.sh/release-namespace": "elsewhere"}
	tappOff := onlyControllers("nodePool")
	noInstall := "crds: {tapps: {install: false}}\n"
	for desc, tc := range map[string]struct {
		values      string
		annotations map[string]string
		upgrade     bool
		want        bool
	}{
		"upgrade: controller off: the release CRD":     {values: tappOff, annotations: ours, upgrade: true, want: true},
		"upgrade: install false: the release CRD":      {values: noInstall, annotations: ours, upgrade: true, want: true},
		"upgrade: controller off: the CRD marked keep": {values: tappOff, annotations: kept, upgrade: true},
		"upgrade: controller off: another release CRD": {values: tappOff, annotations: other, upgrade: true},
		"install: controller off: a CRD already there": {values: tappOff, annotations: ours},
	} {
		t.Run(desc, func(t *testing.T) { // no comma in desc: helm splits --values (in the test's directory) at commas
			t.Parallel()
			r := render{values: tc.values, args: []string{"--dry-run=server",
				"--kubeconfig", fakeCluster(t, map[string]any{crdPath + name: crdObject(name, tc.annotations)})}}
			if tc.upgrade {
				r.args = append(r.args, "--is-upgrade")
			}
			out, err := r.run(t)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out, "\n  name: "+name+"\n"); got != tc.want {
				t.Errorf("CRD %s rendered: %t, want %t", name, got, tc.want)
			}
		})
	}
}
