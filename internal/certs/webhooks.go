package certs

import (
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/drover-dev/drover/internal/kit"
)

// Webhooks lists what the manager injects its CA into (self mode): the installed webhook configurations
// (ConfigurationPrefix + the names kit.Configurations gives, as hack/registrygen writes them) of every
// controller enabled by --controllers, and the CRDs whose conversion webhook those controllers serve. A
// controller that is off for another reason (its own flag, its CRD not served) is listed too: its webhooks are
// still served, admitting everything, and the API server must trust them. A configuration that is not
// installed is only logged by the rotator.
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
		for _, crd := range c.ConversionCRDs {
			out = append(out, rotator.WebhookInfo{Name: crd, Type: rotator.CRDConversion})
		}
	}
	return out
}
