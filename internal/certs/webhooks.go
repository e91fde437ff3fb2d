package certs

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/kit"
)

// Webhooks lists what the manager injects its CA into (self mode): the installed webhook configurations
// (ConfigurationPrefix + the names kit.Configurations gives, as hack/registrygen writes them) of every
// controller enabled by --controllers, and the CRDs whose conversion webhook those controllers serve. A
// controller that is off for another reason (its own flag, its CRD not served) is listed too: its webhooks are
// still served, admitting everything, and the API server must trust them. A configuration that is not
// installed is only logged by the rotator. Setup leaves out the CRDs whose conversion webhook is not the
// manager's (ownConversions).
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

// OptionalConversions lists the CRDs whose conversion webhook the controllers --controllers leaves out
// declare. The manager still serves their conversion (kit.ServesConversion), so Setup injects its CA into
// each one that is installed calling the manager's Service (make deploy installs every CRD, whatever
// --controllers says), and leaves out, without a word, one that is not installed: the chart installs no CRD of
// a disabled controller.
func OptionalConversions(controllers []*kit.Controller, enabled sets.Set[string]) []string {
	var out []string
	for _, c := range controllers {
		if !enabled.Has(c.Name) {
			out = append(out, c.ConversionCRDs...)
		}
	}
	return out
}

// ownConversions returns hooks without the CRD conversions whose CA is not the manager's to keep: a CRD that
// is installed with no conversion webhook, or one that calls another Service than the manager's
// (<namespace>/<service>, as the installation renders drover's CRDs). Such a CRD is another installation's
// (OpenYurt's NodePool CRD, whose conversion webhook is yurt-manager's, while drover leaves NodePools to it)
// or drover's from a release without conversion; writing the manager's CA into it would break that
// installation's conversion, and the rotator would fail on a CRD without a conversion webhook. Each dropped
// CRD is logged. A CRD of hooks that is not installed is kept: the rotator only logs it. The CRDs of optional
// (OptionalConversions) are added when installed and calling the manager's Service.
func ownConversions(ctx context.Context, reader client.Reader, namespace, service string, hooks []rotator.WebhookInfo,
	optional []string, log logr.Logger) ([]rotator.WebhookInfo, error) {
	out := make([]rotator.WebhookInfo, 0, len(hooks)+len(optional))
	keep := func(name string, missing bool) (bool, error) {
		// Unstructured: the manager's scheme has no apiextensions types.
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		err := reader.Get(ctx, client.ObjectKey{Name: name}, crd)
		switch {
		case apierrors.IsNotFound(err):
			return missing, nil
		case err != nil:
			return false, fmt.Errorf("reading CRD %s: %w", name, err)
		}
		if calls := conversionService(crd); calls != namespace+"/"+service {
			log.Info("Not injecting the CA into a CRD whose conversion webhook is not the manager's", "crd", name,
				"conversionService", calls, "want", namespace+"/"+service)
			return false, nil
		}
		return true, nil
	}
	for _, h := range hooks {
		ok := true
		if h.Type == rotator.CRDConversion {
			var err error
			if ok, err = keep(h.Name, true); err != nil {
				return nil, err
			}
		}
		if ok {
			out = append(out, h)
		}
	}
	for _, name := range optional {
		ok, err := keep(name, false)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rotator.WebhookInfo{Name: name, Type: rotator.CRDConversion})
		}
	}
	return out, nil
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
