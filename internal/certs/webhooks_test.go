package certs

import (
	"context"
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
		{Name: "persistentpodstates.apps.kruise.io", Type: rotator.CRDConversion},
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
	want := []rotator.WebhookInfo{
		{Name: "drover-thing-validating", Type: rotator.Validating},
		{Name: "things.example.drover.dev", Type: rotator.CRDConversion},
		{Name: "others.example.drover.dev", Type: rotator.CRDConversion},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Webhooks mismatch (-want +got):\n%s", diff)
	}
	// The controller left out still has its CRD's conversion served: its CA goes in when the CRD is installed.
	if diff := cmp.Diff([]string{"offs.example.drover.dev"}, OptionalConversions(controllers, sets.New("thing", "other"))); diff != "" {
		t.Errorf("OptionalConversions mismatch (-want +got):\n%s", diff)
	}
}

// TestWebhooksMatchGeneratedConfigurations: with every controller enabled, the list names exactly the webhook
// configurations of the generated components, with the installation's prefix, and the CRDs generated with a
// conversion webhook.
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
func TestOwnConversions(t *testing.T) {
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
	webhookAt := func(ns, name string) *apiextensionsv1.CustomResourceConversion {
		return &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service: &apiextensionsv1.ServiceReference{Namespace: ns, Name: name}}}}
	}
	// The manager's scheme, which has no apiextensions types: the CRDs are read unstructured.
	reader := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		crd("ours.example.drover.dev", webhookAt("drover-system", "drover-webhook-service")),
		crd("theirs.example.drover.dev", webhookAt("kube-system", "yurt-manager-webhook-service")),
		crd("old.example.drover.dev", nil),
		crd("off.example.drover.dev", webhookAt("drover-system", "drover-webhook-service")),
		crd("offtheirs.example.drover.dev", webhookAt("kube-system", "yurt-manager-webhook-service")),
	).Build()
	hooks := []rotator.WebhookInfo{
		{Name: "drover-thing-validating", Type: rotator.Validating},
		{Name: "ours.example.drover.dev", Type: rotator.CRDConversion},
		{Name: "theirs.example.drover.dev", Type: rotator.CRDConversion},
		{Name: "old.example.drover.dev", Type: rotator.CRDConversion},
		{Name: "later.example.drover.dev", Type: rotator.CRDConversion},
	}
	// The CRDs of controllers --controllers leaves out: kept only when installed and calling the manager.
	optional := []string{"off.example.drover.dev", "offtheirs.example.drover.dev", "offmissing.example.drover.dev"}
	got, err := ownConversions(context.Background(), reader, "drover-system", "drover-webhook-service", hooks, optional,
		logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	want := []rotator.WebhookInfo{hooks[0], hooks[1], hooks[4], {Name: "off.example.drover.dev", Type: rotator.CRDConversion}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ownConversions (-want +got):\n%s", diff)
	}
}
