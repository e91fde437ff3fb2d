package tapp

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// ControllerName is the name of the controller (--controllers, logs, metrics, event source).
const ControllerName = "tapp"

// Setup registers the TApp indexes and controller with the manager. The controller runs on the leader only
// (controller-runtime's default). Every TApp update triggers a pass, status updates included (a user
// removing a finished entry from status.statuses restarts it, §8); the echo of drover's own status write
// is a pass that writes nothing (§15).
func Setup(ctx context.Context, mgr manager.Manager, opts Options) error {
	if err := SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	r := NewReconciler(Config{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Recorder:                mgr.GetEventRecorder("drover-" + ControllerName),
		DeletePodAfterAppFinish: opts.DeletePodAfterAppFinish,
		PodWriteConcurrency:     opts.PodWriteConcurrency,
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&tkestackv1.TApp{}).
		Watches(&corev1.Pod{}, podHandler{exp: r.exp}).
		Watches(&corev1.Node{}, nodeHandler{reader: mgr.GetClient()}).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.ConcurrentReconciles, 1)}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the %s controller: %w", ControllerName, err)
	}
	return nil
}
