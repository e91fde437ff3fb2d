package certs

import (
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/drover-dev/drover/internal/kit"
)

// Webhooks lists the webhook configurations the manager injects its CA into (self mode): the installed ones
// (ConfigurationPrefix + the names kit.Configurations gives, as hack/registrygen writes them) of every
// controller enabled by --controllers. A controller that is off for another reason (its own flag, its CRD not
// served) is listed too: its webhooks are still served, admitting everything, and the API server must trust
// them. A configuration that is not installed is only logged by the rotator. The CRDs are not here:
// kit.ConvertedCRDs lists them, for the conversion injector.
func Webhooks(controllers []*kit.Controller, enabled sets.Set[string]) []rotator.WebhookInfo {
	var out []rotator.WebhookInfo
	for _, c := range controllers {
		if !enabled.Has(c.Name) {
			continue
		}
		mutating, validating := kit.Configurations(c.Name, c.Webhooks)
		if mutating != nil {
			out = append(out, rotator.WebhookInfo{Name: ConfigurationPrefix + mutating.Name, Type: rotator.Mutating})
		}
		if validating != nil {
			out = append(out, rotator.WebhookInfo{Name: ConfigurationPrefix + validating.Name, Type: rotator.Validating})
		}
	}
	return out
}

// conversionService returns <namespace>/<name> of the Service a CRD's conversion webhook calls, or what it
// has instead.
func conversionService(crd *unstructured.Unstructured) string {
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	cc, found, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig")
	switch {
	case strategy != string(apiextensionsv1.WebhookConverter) || !found:
		return "none"
	case cc["service"] == nil:
		return "a URL"
	}
	ns, _, _ := unstructured.NestedString(cc, "service", "namespace")
	name, _, _ := unstructured.NestedString(cc, "service", "name")
	return ns + "/" + name
}
