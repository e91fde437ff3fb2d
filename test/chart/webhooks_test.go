package chart

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// webhooksOf decodes the webhooks of a Mutating- or ValidatingWebhookConfiguration (a validating webhook's
// fields are a subset of a mutating one's).
func webhooksOf(t *testing.T, o object) []admissionregistrationv1.MutatingWebhook {
	t.Helper()
	var cfg struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Webhooks          []admissionregistrationv1.MutatingWebhook `json:"webhooks"`
	}
	o.into(t, &cfg)
	return cfg.Webhooks
}

func allWebhooks(t *testing.T, objs []object) map[string]admissionregistrationv1.MutatingWebhook {
	t.Helper()
	out := map[string]admissionregistrationv1.MutatingWebhook{}
	for _, o := range ofKind(objs, "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration") {
		for _, w := range webhooksOf(t, o) {
			out[w.Name] = w
		}
	}
	return out
}

// matches tells whether sel selects an object with labels l.
func matches(t *testing.T, sel *metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labels.Set(l))
}

// namespacedResources are the resources of the chart's webhooks that live in namespaces (the CRDs' scopes
// are in config/components; pods are built in).
func namespacedResources(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{"pods": true, "nodes": false}
	for _, f := range glob(t, "config/components/*/crd/*.yaml") {
		for _, o := range readDocs(t, f) {
			spec, _ := o["spec"].(map[string]any)
			names, _ := spec["names"].(map[string]any)
			plural, _ := names["plural"].(string)
			out[plural] = spec["scope"] == "Namespaced"
		}
	}
	return out
}

// TestWebhookNamespaceSelectors checks, in every case, that no webhook on namespaced resources is called
// for kube-system or the release's namespace, and that webhooks only on cluster-scoped resources carry no
// selector (it would not apply).
func TestWebhookNamespaceSelectors(t *testing.T) {
	t.Parallel()
	scoped := namespacedResources(t)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, w := range allWebhooks(t, c.objects(t)) {
				namespaced := false
				for _, r := range w.Rules {
					for _, res := range r.Resources {
						known, ok := scoped[strings.Split(res, "/")[0]]
						if !ok {
							t.Fatalf("webhook %s: unknown resource %s", w.Name, res)
						}
						namespaced = namespaced || known
					}
				}
				if !namespaced {
					if w.NamespaceSelector != nil {
						t.Errorf("webhook %s matches only cluster-scoped resources, yet has a namespaceSelector", w.Name)
					}
					continue
				}
				for _, ns := range []string{"kube-system", c.ns()} {
					if w.NamespaceSelector == nil || matches(t, w.NamespaceSelector, map[string]string{corev1.LabelMetadataName: ns}) {
						t.Errorf("webhook %s is called for namespace %s (selector %v)", w.Name, ns, w.NamespaceSelector)
					}
				}
				if !matches(t, w.NamespaceSelector, map[string]string{corev1.LabelMetadataName: "team-a"}) {
					t.Errorf("webhook %s is not called for an ordinary namespace", w.Name)
				}
			}
		})
	}
}

// podOrNode tells whether a webhook matches pods or nodes.
func podOrNode(w admissionregistrationv1.MutatingWebhook) bool {
	for _, r := range w.Rules {
		if slices.Contains(r.APIGroups, "") && (slices.Contains(r.Resources, "pods") || slices.Contains(r.Resources, "nodes")) {
			return true
		}
	}
	return false
}

func TestFailurePolicies(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, r render, own, podsNodes admissionregistrationv1.FailurePolicyType, timeout int32) {
		t.Helper()
		hooks := allWebhooks(t, r.objects(t))
		sawPods := false
		for _, w := range hooks {
			want := own
			if podOrNode(w) {
				want, sawPods = podsNodes, true
			}
			if *w.FailurePolicy != want {
				t.Errorf("webhook %s: failurePolicy %s, want %s", w.Name, *w.FailurePolicy, want)
			}
			if timeout != 0 && *w.TimeoutSeconds != timeout {
				t.Errorf("webhook %s: timeoutSeconds %d, want %d", w.Name, *w.TimeoutSeconds, timeout)
			}
		}
		if !sawPods {
			t.Error("no webhook on pods rendered")
		}
	}
	t.Run("default", func(t *testing.T) {
		check(t, render{}, admissionregistrationv1.Fail, admissionregistrationv1.Ignore, 0)
	})
	t.Run("values", func(t *testing.T) {
		r := render{values: "webhooks: {failurePolicy: Ignore, podFailurePolicy: Fail, timeoutSeconds: 7}\n"}
		check(t, r, admissionregistrationv1.Ignore, admissionregistrationv1.Fail, 7)
	})
	t.Run("invalid", func(t *testing.T) {
		_, err := render{values: "webhooks: {podFailurePolicy: Sometimes}\n"}.try(t)
		if err == nil || !strings.Contains(err.Error(), "webhooks.podFailurePolicy") {
			t.Errorf("want a failure naming webhooks.podFailurePolicy, got %v", err)
		}
	})
}

func TestCertModeSelf(t *testing.T) {
	t.Parallel()
	objs := render{}.objects(t)
	secret := &corev1.Secret{}
	find(t, objs, "Secret", "drover-webhook-server-cert").into(t, secret)
	if secret.Type != corev1.SecretTypeOpaque || len(secret.Data) > 0 {
		t.Errorf("want an empty Opaque Secret for the manager to fill, have type %s with %d keys", secret.Type, len(secret.Data))
	}
	for _, o := range ofKind(objs, "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration") {
		if len(o.annotations()) > 0 {
			t.Errorf("%s has annotations %v in self mode", o.name(), o.annotations())
		}
		for _, w := range webhooksOf(t, o) {
			if len(w.ClientConfig.CABundle) > 0 {
				t.Errorf("webhook %s has a caBundle in self mode (the manager injects it)", w.Name)
			}
		}
	}
	if len(ofKind(objs, "Certificate", "Issuer")) > 0 {
		t.Error("self mode renders cert-manager objects")
	}
}

func TestCertModeCertManager(t *testing.T) {
	t.Parallel()
	c := cases["certmanager"]
	objs := c.objects(t)
	if !slices.Contains(managerArgs(t, objs), "--cert-mode=external") {
		t.Errorf("the manager must not manage its certificate with cert-manager: args %v", managerArgs(t, objs))
	}
	if len(ofKind(objs, "Secret")) > 0 {
		t.Error("certManager mode renders the Secret (cert-manager creates it)")
	}
	find(t, objs, "Issuer", "drover-selfsigned-issuer")
	cert := find(t, objs, "Certificate", "drover-serving-cert")
	spec, _ := cert["spec"].(map[string]any)
	dns, _ := spec["dnsNames"].([]any)
	want := []any{"drover-webhook-service.drover-system.svc", "drover-webhook-service.drover-system.svc.cluster.local"}
	if !slices.Equal(dns, want) || spec["secretName"] != "drover-webhook-server-cert" {
		t.Errorf("Certificate spec %v", spec)
	}
	for _, o := range ofKind(objs, "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration") {
		if o.annotations()["cert-manager.io/inject-ca-from"] != "drover-system/drover-serving-cert" {
			t.Errorf("%s lacks cert-manager's CA injection: %v", o.name(), o.annotations())
		}
	}
	_, err := render{values: c.values}.try(t)
	if err == nil || !strings.Contains(err.Error(), "needs cert-manager") {
		t.Errorf("certManager without cert-manager's API: want a clear failure, got %v", err)
	}
}

func TestCertModeExternal(t *testing.T) {
	t.Parallel()
	objs := cases["external"].objects(t)
	if !slices.Contains(managerArgs(t, objs), "--cert-mode=external") {
		t.Errorf("args %v lack --cert-mode=external", managerArgs(t, objs))
	}
	if len(ofKind(objs, "Secret", "Certificate", "Issuer")) > 0 {
		t.Error("external mode renders a Secret or cert-manager objects: the Secret is the user's")
	}
	hooks := allWebhooks(t, objs)
	for _, w := range hooks {
		if !strings.HasPrefix(string(w.ClientConfig.CABundle), "-----BEGIN CERTIFICATE-----") {
			t.Errorf("webhook %s: caBundle %q is not the PEM given", w.Name, w.ClientConfig.CABundle)
		}
	}
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	b64 := base64.StdEncoding.EncodeToString([]byte(pem))
	for _, w := range allWebhooks(t, render{values: "certs: {mode: external, external: {caBundle: " + b64 + "}}\n"}.objects(t)) {
		if string(w.ClientConfig.CABundle) != pem {
			t.Errorf("webhook %s: a base64 caBundle is not passed as is: %q", w.Name, w.ClientConfig.CABundle)
		}
	}
	_, err := render{values: "certs: {mode: external}\n"}.try(t)
	if err == nil || !strings.Contains(err.Error(), "certs.external.caBundle") {
		t.Errorf("external without a caBundle: want a failure naming certs.external.caBundle, got %v", err)
	}
	_, err = render{values: "certs: {mode: vault}\n"}.try(t)
	if err == nil || !strings.Contains(err.Error(), "certs.mode") {
		t.Errorf("an unknown certs.mode: want a failure naming it, got %v", err)
	}
}
