package kit

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Webhook declares one admission webhook of a controller: where the manager serves it and how the API server
// calls it. The declaration is the only source of the webhook configurations: hack/registrygen writes them
// into the controller's kustomize component (config/components/<controller>/webhooks.yaml), and the manager
// serves every declared path, with the controller's handler or, when the controller does not run, a handler
// that admits everything unchanged (kit.Start).
type Webhook struct {
	// Name is the webhook's name in its configuration: <something>.drover.dev.
	Name string
	// Path is the URL path the manager's webhook server serves it at.
	Path string
	// Mutating puts the webhook into the controller's MutatingWebhookConfiguration, else into its
	// ValidatingWebhookConfiguration.
	Mutating bool
	// Rules are the operations and resources the API server sends.
	Rules []admissionregistrationv1.RuleWithOperations
	// FailurePolicy is what the API server does when the webhook cannot be called: Fail for drover's own
	// kinds, Ignore for built-in kinds that must never wait on drover.
	FailurePolicy admissionregistrationv1.FailurePolicyType
	// SideEffects: None, or NoneOnDryRun for a webhook that records events.
	SideEffects admissionregistrationv1.SideEffectClass
	// TimeoutSeconds is the API server's budget for one call.
	TimeoutSeconds int32
	// MatchPolicy, ReinvocationPolicy (mutating only), NamespaceSelector, ObjectSelector and MatchConditions
	// are set when not empty.
	MatchPolicy        admissionregistrationv1.MatchPolicyType
	ReinvocationPolicy admissionregistrationv1.ReinvocationPolicyType
	NamespaceSelector  *metav1.LabelSelector
	ObjectSelector     *metav1.LabelSelector
	MatchConditions    []admissionregistrationv1.MatchCondition
}

// WebhookPath is the path of the defaulting (mutating) or validating webhook of a kind, by
// controller-runtime's convention: /mutate-<group with dashes>-<version>-<lower-case kind>.
func WebhookPath(mutating bool, gvk schema.GroupVersionKind) string {
	prefix := "/validate-"
	if mutating {
		prefix = "/mutate-"
	}
	return prefix + strings.ReplaceAll(gvk.Group, ".", "-") + "-" + gvk.Version + "-" + strings.ToLower(gvk.Kind)
}

// KindWebhook declares the defaulting (mutating) or validating webhook of one of drover's kinds as every
// such webhook is configured: served at WebhookPath, called for ops on resource (the kind's plural), failing
// closed (a drover kind is never written unchecked while the manager runs), no side effects, 10 seconds.
func KindWebhook(mutating bool, gvk schema.GroupVersionKind, resource string, ops ...admissionregistrationv1.OperationType) Webhook {
	letter := "v"
	if mutating {
		letter = "m"
	}
	return Webhook{
		Name:     letter + strings.ToLower(gvk.Kind) + ".drover.dev",
		Path:     WebhookPath(mutating, gvk),
		Mutating: mutating,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{gvk.Group}, APIVersions: []string{gvk.Version},
				Resources: []string{resource}},
		}},
		FailurePolicy:  admissionregistrationv1.Fail,
		SideEffects:    admissionregistrationv1.SideEffectClassNone,
		TimeoutSeconds: 10,
	}
}

// Configurations returns the webhook configurations of one controller's declared webhooks, named
// <controller>-mutating and <controller>-validating (nil when it declares none of that type). Each webhook's
// client is the Service webhook-service in namespace system, which kustomize and the chart rename.
func Configurations(controller string, hooks []Webhook) (*admissionregistrationv1.MutatingWebhookConfiguration,
	*admissionregistrationv1.ValidatingWebhookConfiguration) {
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	for _, h := range hooks {
		client := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Name: "webhook-service", Namespace: "system", Path: ptr.To(h.Path)}}
		var matchPolicy *admissionregistrationv1.MatchPolicyType
		if h.MatchPolicy != "" {
			matchPolicy = ptr.To(h.MatchPolicy)
		}
		if h.Mutating {
			if mutating == nil {
				mutating = &admissionregistrationv1.MutatingWebhookConfiguration{
					TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
					ObjectMeta: metav1.ObjectMeta{Name: controller + "-mutating"},
				}
			}
			var reinvocation *admissionregistrationv1.ReinvocationPolicyType
			if h.ReinvocationPolicy != "" {
				reinvocation = ptr.To(h.ReinvocationPolicy)
			}
			mutating.Webhooks = append(mutating.Webhooks, admissionregistrationv1.MutatingWebhook{
				Name: h.Name, ClientConfig: client, Rules: h.Rules, FailurePolicy: ptr.To(h.FailurePolicy),
				MatchPolicy: matchPolicy, NamespaceSelector: h.NamespaceSelector, ObjectSelector: h.ObjectSelector,
				SideEffects: ptr.To(h.SideEffects), TimeoutSeconds: ptr.To(h.TimeoutSeconds),
				AdmissionReviewVersions: []string{"v1"}, ReinvocationPolicy: reinvocation, MatchConditions: h.MatchConditions,
			})
			continue
		}
		if validating == nil {
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{
				TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
				ObjectMeta: metav1.ObjectMeta{Name: controller + "-validating"},
			}
		}
		validating.Webhooks = append(validating.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: h.Name, ClientConfig: client, Rules: h.Rules, FailurePolicy: ptr.To(h.FailurePolicy),
			MatchPolicy: matchPolicy, NamespaceSelector: h.NamespaceSelector, ObjectSelector: h.ObjectSelector,
			SideEffects: ptr.To(h.SideEffects), TimeoutSeconds: ptr.To(h.TimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"}, MatchConditions: h.MatchConditions,
		})
	}
	return mutating, validating
}

// checkServed returns an error naming the first declared webhook whose path srv does not serve.
func checkServed(srv webhook.Server, hooks []Webhook) error {
	mux := srv.WebhookMux()
	for _, h := range hooks {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, h.Path, http.NoBody)
		if err != nil {
			return fmt.Errorf("webhook %s: %w", h.Name, err)
		}
		if _, pattern := mux.Handler(req); pattern != h.Path {
			return fmt.Errorf("webhook %s is declared at %s but no handler is registered there", h.Name, h.Path)
		}
	}
	return nil
}

// serveAllowAll serves every declared webhook of a controller that does not run with a handler that admits
// each request unchanged: the webhook configurations installed for it keep calling, and its kinds stay
// writable.
func serveAllowAll(srv webhook.Server, controller, reason string, hooks []Webhook) {
	msg := fmt.Sprintf("drover's %s controller is off (%s): admitted unchanged", controller, reason)
	for _, h := range hooks {
		srv.Register(h.Path, &admission.Webhook{Handler: admission.HandlerFunc(
			func(context.Context, admission.Request) admission.Response { return admission.Allowed(msg) })})
	}
}
