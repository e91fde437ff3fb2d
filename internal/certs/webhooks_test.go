package certs

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/registry"
	"github.com/drover-dev/drover/internal/scheme"
)

func TestWebhooksOfEnabledControllers(t *testing.T) {
	controllers := registry.Registry()
	got := Webhooks(controllers, sets.New("tapp", "stagedbindingpolicy", "persistentpodstate"))
	want := []rotator.WebhookInfo{
		{Name: "drover-tapp-mutating", Type: rotator.Mutating},
		{Name: "drover-tapp-validating", Type: rotator.Validating},
		{Name: "drover-persistentpodstate-mutating", Type: rotator.Mutating},
		{Name: "drover-persistentpodstate-validating", Type: rotator.Validating},
		{Name: "drover-stagedbindingpolicy-validating", Type: rotator.Validating},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Webhooks mismatch (-want +got):\n%s", diff)
	}
	if got := Webhooks(controllers, sets.New[string]()); len(got) != 0 {
		t.Errorf("Webhooks with no controller enabled = %v, want none", got)
	}
}

func TestWebhooksConversionCRDs(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.drover.dev", Version: "v1", Kind: "Thing"}
	controllers := []*kit.Controller{
		{Name: "thing", Webhooks: []kit.Webhook{kit.KindWebhook(false, gvk, "things", admissionregistrationv1.Create)},
			ConversionCRDs: []string{"things.example.drover.dev"}},
		{Name: "other", ConversionCRDs: []string{"others.example.drover.dev"}},
		{Name: "off", ConversionCRDs: []string{"offs.example.drover.dev"}},
	}
	got := Webhooks(controllers, sets.New("thing", "other"))
	want := []rotator.WebhookInfo{{Name: "drover-thing-validating", Type: rotator.Validating}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Webhooks mismatch (-want +got):\n%s", diff)
	}
	// Every declared conversion, the controller left out included: the manager serves them all.
	wantCRDs := []string{"things.example.drover.dev", "others.example.drover.dev", "offs.example.drover.dev"}
	if diff := cmp.Diff(wantCRDs, kit.ConvertedCRDs(controllers)); diff != "" {
		t.Errorf("ConvertedCRDs mismatch (-want +got):\n%s", diff)
	}
}

// TestWebhooksMatchGeneratedConfigurations: with every controller enabled, Webhooks names exactly the webhook
// configurations of the generated components, with the installation's prefix, and Conversions the CRDs
// generated with a conversion webhook.
func TestWebhooksMatchGeneratedConfigurations(t *testing.T) {
	controllers := registry.Registry()
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "components", "*", "webhooks.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no generated webhook configurations found: %v", err)
	}
	want := sets.New[string]()
	for _, f := range files {
		for _, o := range readObjects(t, f) {
			want.Insert(o.GetKind() + " " + ConfigurationPrefix + o.GetName())
		}
	}
	crds, err := filepath.Glob(filepath.Join("..", "..", "config", "components", "*", "crd", "*_*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no generated CRDs found: %v", err)
	}
	for _, f := range crds {
		for _, o := range readObjects(t, f) {
			if _, ok, _ := unstructured.NestedMap(o.Object, "spec", "conversion", "webhook"); ok {
				want.Insert("CustomResourceDefinition " + o.GetName())
			}
		}
	}
	kinds := map[rotator.WebhookType]string{rotator.Mutating: "MutatingWebhookConfiguration",
		rotator.Validating: "ValidatingWebhookConfiguration", rotator.CRDConversion: "CustomResourceDefinition"}
	got := sets.New[string]()
	for _, w := range Webhooks(controllers, sets.New(kit.Names(controllers)...)) {
		got.Insert(kinds[w.Type] + " " + w.Name)
	}
	for _, name := range kit.ConvertedCRDs(controllers) {
		got.Insert("CustomResourceDefinition " + name)
	}
	if !got.Equal(want) {
		t.Errorf("Webhooks lists %v, the generated configurations are %v (missing %v, extra %v)", sets.List(got),
			sets.List(want), sets.List(want.Difference(got)), sets.List(got.Difference(want)))
	}
}

func readObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(filepath.Clean(file))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// TestOwnConversions: the CA goes only into CRDs whose conversion webhook calls the manager's Service, or
// that are not installed (the rotator logs those).
// TestConversionInjector: the CA goes into a CRD calling the manager's Service that lacks it or has another
// one, and nowhere else: not into a CRD calling another Service (another installation's, or one handed back to
// it while the manager runs), nor one without a conversion webhook; a CRD that is not installed is skipped.
func TestConversionInjector(t *testing.T) {
	crd := func(name string, conv *apiextensionsv1.CustomResourceConversion) *unstructured.Unstructured {
		typed := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Conversion: conv}}
		typed.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: m}
	}
	webhookAt := func(ns, name string, ca []byte) *apiextensionsv1.CustomResourceConversion {
		return &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: ca,
				Service: &apiextensionsv1.ServiceReference{Namespace: ns, Name: name}}}}
	}
	dir := t.TempDir()
	ca := []byte("the manager's CA")
	if err := os.WriteFile(filepath.Join(dir, caCertFile), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	theirs := []byte("yurt-manager's CA")
	// The manager's scheme, which has no apiextensions types: the CRDs are read unstructured.
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		crd("ours.example.drover.dev", webhookAt("drover-system", "drover-webhook-service", nil)),
		crd("stale.example.drover.dev", webhookAt("drover-system", "drover-webhook-service", []byte("an older CA"))),
		crd("theirs.example.drover.dev", webhookAt("kube-system", "yurt-manager-webhook-service", theirs)),
		crd("none.example.drover.dev", nil),
	).Build()
	names := []string{"ours.example.drover.dev", "stale.example.drover.dev", "theirs.example.drover.dev",
		"none.example.drover.dev", "later.example.drover.dev"}
	ready := make(chan struct{})
	close(ready)
	inj := newConversionInjector(names, Options{Namespace: "drover-system", ServiceName: "drover-webhook-service", CertDir: dir},
		c, c, ready, logr.Discard())
	if err := inj.pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"ours.example.drover.dev": ca, "stale.example.drover.dev": ca, "theirs.example.drover.dev": theirs,
		"none.example.drover.dev": nil}
	for name, bundle := range want {
		got := crd(name, nil)
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, got); err != nil {
			t.Fatal(err)
		}
		b64, _, _ := unstructured.NestedString(got.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		decoded, _ := base64.StdEncoding.DecodeString(b64)
		if !bytes.Equal(decoded, bundle) {
			t.Errorf("%s: caBundle %q, want %q", name, decoded, bundle)
		}
	}
	if diff := cmp.Diff(map[string]string{"theirs.example.drover.dev": "kube-system/yurt-manager-webhook-service",
		"none.example.drover.dev": "none"}, inj.foreign); diff != "" {
		t.Errorf("CRDs logged as not the manager's (-want +got):\n%s", diff)
	}
}
