package localcluster

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/certs"
)

// The webhooks are installed as an installation has them: the Service WebhookService in front of the
// manager, the Secret WebhookSecret the manager keeps its certificate in (created empty), and the generated
// webhook configurations named and pointed at that Service as kustomize does, without a caBundle: the manager
// (--cert-mode=self) creates its CA and certificate, and injects the CA. A CRD with a conversion webhook gets
// the same Service (installedConversion), so conversion reaches the manager through the egress proxy and
// trusts the CA it injects, exactly as admission does.
const (
	// WebhookService is the Service in ManagerNamespace in front of the managers' webhook servers.
	WebhookService = certs.DefaultServiceName
	// WebhookSecret is the Secret in ManagerNamespace holding the webhook serving certificate.
	WebhookSecret = certs.DefaultSecretName
	// webhookServicePort is the Service's port, which the webhook configurations name.
	webhookServicePort int32 = 443
)

// installWebhooks creates the webhook Service and the empty certificate Secret, installs the webhook
// configurations of Options.WebhookManifests and exposes the Service with the manager's webhook port as its
// backend.
func (c *Cluster) installWebhooks(ctx context.Context) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: WebhookService, Namespace: ManagerNamespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{
			Name: "webhook", Port: webhookServicePort, TargetPort: intstr.FromInt32(9443), Protocol: corev1.ProtocolTCP}}},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: WebhookSecret, Namespace: ManagerNamespace},
		Type: corev1.SecretTypeOpaque}
	for _, o := range []client.Object{svc, secret} {
		if err := c.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	configs, err := readWebhookConfigurations(c.opts.WebhookManifests)
	if err != nil {
		return err
	}
	if len(configs) == 0 {
		c.log.Info("No webhook manifests, running without webhooks", "paths", c.opts.WebhookManifests)
	}
	for _, u := range configs {
		if err := c.Client.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	c.webhooks = len(configs)
	return c.ExposeService(ctx, ManagerNamespace, WebhookService, webhookServicePort, "127.0.0.1:"+strconv.Itoa(c.WebhookPort))
}

// readWebhookConfigurations reads the webhook configurations of files (a missing file is skipped) and
// rewrites them for installation (installedConfiguration).
func readWebhookConfigurations(files []string) ([]*unstructured.Unstructured, error) {
	return readManifests(files, func(o *unstructured.Unstructured) (bool, error) {
		if o.GetKind() != "MutatingWebhookConfiguration" && o.GetKind() != "ValidatingWebhookConfiguration" {
			return false, nil
		}
		return true, installedConfiguration(o)
	})
}

// installedConfiguration turns a generated webhook configuration into the installed one, as kustomize's
// namePrefix and namespace do: its name prefixed with certs.ConfigurationPrefix, each webhook's client the
// Service WebhookService in ManagerNamespace on port 443 (keeping its path), and no caBundle.
func installedConfiguration(u *unstructured.Unstructured) error {
	u.SetName(certs.ConfigurationPrefix + u.GetName())
	hooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
	if err != nil {
		return err
	}
	for i, h := range hooks {
		hook, ok := h.(map[string]any)
		if !ok {
			return fmt.Errorf("webhook %d is not an object", i)
		}
		path, _, err := unstructured.NestedString(hook, "clientConfig", "service", "path")
		if err != nil {
			return err
		}
		service := map[string]any{"namespace": ManagerNamespace, "name": WebhookService, "port": int64(webhookServicePort)}
		if path != "" {
			service["path"] = path
		}
		if err := unstructured.SetNestedMap(hook, map[string]any{"service": service}, "clientConfig"); err != nil {
			return err
		}
		hooks[i] = hook
	}
	return unstructured.SetNestedSlice(u.Object, hooks, "webhooks")
}

// installedConversion points the conversion webhook of crd, if it has one, at the Service WebhookService in
// ManagerNamespace on port 443 (keeping its path), as kustomize's namePrefix and namespace do, without a
// caBundle.
func installedConversion(crd *apiextensionsv1.CustomResourceDefinition) {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return
	}
	var path *string
	if svc := conv.Webhook.ClientConfig.Service; svc != nil {
		path = svc.Path
	}
	conv.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
		Namespace: ManagerNamespace, Name: WebhookService, Path: path, Port: ptr.To(webhookServicePort)}}
}
