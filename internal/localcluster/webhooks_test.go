package localcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestReadWebhookConfigurations: the generated configurations are installed as kustomize renders them.
func TestReadWebhookConfigurations(t *testing.T) {
	root, err := FindRepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(root, "config", "components", "tapp", "webhooks.yaml"), filepath.Join(root, "missing.yaml")}
	configs, err := readWebhookConfigurations(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(configs) != 2 {
		t.Fatalf("read %d configurations from tapp's webhooks.yaml, want 2", len(configs))
	}
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(configs[0].Object, &m); err != nil {
		t.Fatal(err)
	}
	if m.Name != "drover-tapp-mutating" || len(m.Webhooks) != 1 {
		t.Fatalf("first configuration: %s with %d webhooks, want drover-tapp-mutating with 1", m.Name, len(m.Webhooks))
	}
	want := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: ManagerNamespace, Name: WebhookService, Port: ptr.To[int32](443), Path: ptr.To("/mutate-apps-tkestack-io-v1-tapp")}}
	if diff := cmp.Diff(want, m.Webhooks[0].ClientConfig); diff != "" {
		t.Errorf("clientConfig (-want +got):\n%s", diff)
	}
	if configs[1].GetKind() != "ValidatingWebhookConfiguration" || configs[1].GetName() != "drover-tapp-validating" {
		t.Errorf("second configuration: %s %s", configs[1].GetKind(), configs[1].GetName())
	}
}

// TestInstalledConfigurationDropsCABundle: a caBundle or URL left in a manifest is not installed.
func TestInstalledConfigurationDropsCABundle(t *testing.T) {
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	yaml := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: x-validating
webhooks:
- name: vx.drover.dev
  clientConfig:
    caBundle: Zm9v
    url: https://127.0.0.1:1/validate
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	configs, err := readWebhookConfigurations([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	got := configs[0].Object["webhooks"].([]any)[0].(map[string]any)["clientConfig"]
	want := map[string]any{"service": map[string]any{"namespace": ManagerNamespace, "name": WebhookService, "port": int64(443)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clientConfig (-want +got):\n%s", diff)
	}
}

// TestSecretMount: a Secret's keys are copied into every directory, a changed key rewritten, a removed key's
// file deleted, and an unchanged Secret not written again.
func TestSecretMount(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	m := &secretMount{dirs: []string{a, b}}
	if err := m.update(map[string][]byte{"tls.crt": []byte("c1"), "tls.key": []byte("k1"), "ca.crt": []byte("ca")}); err != nil {
		t.Fatal(err)
	}
	if err := m.update(map[string][]byte{"tls.crt": []byte("c2"), "tls.key": []byte("k2")}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{a, b} {
		for name, want := range map[string]string{"tls.crt": "c2", "tls.key": "k2"} {
			if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
				t.Errorf("%s/%s = %q, %v; want %q", dir, name, got, err, want)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "ca.crt")); !os.IsNotExist(err) {
			t.Errorf("%s/ca.crt is left after the key was removed: %v", dir, err)
		}
	}
	if err := os.Remove(filepath.Join(a, "tls.key")); err != nil {
		t.Fatal(err)
	}
	if err := m.update(map[string][]byte{"tls.crt": []byte("c2"), "tls.key": []byte("k2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(a, "tls.key")); !os.IsNotExist(err) {
		t.Errorf("an unchanged Secret was written again: %v", err)
	}
}

// TestInstalledConversion: a CRD's conversion webhook calls the webhook Service, as the admission webhooks do,
// without the caBundle or URL a manifest may hold; a CRD without one is left alone.
func TestInstalledConversion(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
				ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: []byte("x"), Service: &apiextensionsv1.ServiceReference{
					Namespace: "system", Name: "webhook-service", Path: ptr.To("/convert"), Port: ptr.To[int32](443)}}}}}}
	installedConversion(crd)
	want := &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
		Namespace: ManagerNamespace, Name: WebhookService, Port: ptr.To[int32](443), Path: ptr.To("/convert")}}
	if diff := cmp.Diff(want, crd.Spec.Conversion.Webhook.ClientConfig); diff != "" {
		t.Errorf("clientConfig (-want +got):\n%s", diff)
	}
	none := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}}}
	installedConversion(none)
	if none.Spec.Conversion.Webhook != nil {
		t.Errorf("a CRD without a conversion webhook got one: %+v", none.Spec.Conversion)
	}
}
