// Package webhook registers drover's admission webhooks with the manager's webhook server.
//
// Validation lives in pure functions returning field.ErrorList so it can be tested without a server; the
// handlers only decode, call them and turn the result into an admission response.
package webhook

import (
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Setup registers the webhooks of the controllers that were started (see controller.Setup): a webhook for a
// kind whose controller was skipped (its API is not served) would have nothing to admit.
func Setup(mgr manager.Manager, started []string) error {
	if slices.Contains(started, "nodepool") {
		if err := SetupNodePoolWebhook(mgr); err != nil {
			return fmt.Errorf("setting up NodePool webhooks: %w", err)
		}
	}
	if slices.Contains(started, "yurtappdaemon") {
		if err := SetupYurtAppDaemonWebhook(mgr); err != nil {
			return fmt.Errorf("setting up YurtAppDaemon webhooks: %w", err)
		}
	}
	if slices.Contains(started, "uniteddaemonset") {
		if err := SetupUnitedDaemonSetWebhook(mgr); err != nil {
			return fmt.Errorf("setting up UnitedDaemonSet webhooks: %w", err)
		}
	}
	if slices.Contains(started, "tapp") {
		if err := SetupTAppWebhook(mgr); err != nil {
			return fmt.Errorf("setting up TApp webhooks: %w", err)
		}
	}
	return nil
}
