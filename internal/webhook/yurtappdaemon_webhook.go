package webhook

import "sigs.k8s.io/controller-runtime/pkg/manager"

// SetupYurtAppDaemonWebhook registers the YurtAppDaemon defaulting and validating webhooks.
func SetupYurtAppDaemonWebhook(mgr manager.Manager) error {
	return nil // TODO(yurtappdaemon): webhook work.
}

// SetupUnitedDaemonSetWebhook registers the UnitedDaemonSet defaulting and validating webhooks.
func SetupUnitedDaemonSetWebhook(mgr manager.Manager) error {
	return nil // TODO(yurtappdaemon): webhook work.
}
