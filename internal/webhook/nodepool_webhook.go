package webhook

import "sigs.k8s.io/controller-runtime/pkg/manager"

// SetupNodePoolWebhook registers the NodePool defaulting and validating webhooks.
func SetupNodePoolWebhook(mgr manager.Manager) error {
	return nil // TODO(nodepool): implemented by the NodePool webhook work.
}
