package tapp

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover/internal/tapp/core"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/kit"
)

// ControllerName is the name of the controller (--controllers, logs, metrics, event source).
const ControllerName = "tapp"

// Controller describes the TApp controller to the manager.
func Controller() *kit.Controller {
	gvk := tkestackv1.GroupVersion.WithKind("TApp")
	opts := &core.Options{}
	fs := kit.NewFlagSet(ControllerName)
	fs.IntVar(&opts.ConcurrentReconciles, "tapp-workers", 5, "Concurrent TApp reconciles.")
	kit.Alias(fs, "tapp-concurrent-reconciles", "tapp-workers")
	fs.IntVar(&opts.PodWriteConcurrency, "tapp-pod-write-concurrency", DefaultPodWriteConcurrency,
		"Most pod and PVC writes of one TApp pass in flight at once.")
	fs.BoolVar(&opts.DeletePodAfterAppFinish, "tapp-delete-pod-after-app-finish", true,
		"Delete the pods of finished TApp instances once the whole TApp has finished (default of spec.deletePodAfterAppFinish).")
	return &kit.Controller{
		Name:            ControllerName,
		Kinds:           []schema.GroupVersionKind{gvk},
		Flags:           fs,
		Indexes:         Indexes(),
		RegisterMetrics: RegisterMetrics,
		Setup:           func(ctx context.Context, mgr manager.Manager) error { return Setup(ctx, mgr, *opts) },
		Webhooks: []kit.Webhook{
			kit.KindWebhook(true, gvk, "tapps", admissionregistrationv1.Create, admissionregistrationv1.Update),
			kit.KindWebhook(false, gvk, "tapps", admissionregistrationv1.Create, admissionregistrationv1.Update),
		},
		ServeWebhooks: SetupTAppWebhook,
		CRDs:          []string{"apps.tkestack.io_tapps.yaml"},
		Objects:       []client.Object{&tkestackv1.TApp{}},
	}
}

// Setup registers the TApp controller with the manager; the indexes of Indexes must be registered. The controller runs on the leader only
// (controller-runtime's default). Every TApp update triggers a pass, status updates included (a user
// removing a finished entry from status.statuses restarts it); the echo of drover's own status write
// is a pass that writes nothing.
func Setup(_ context.Context, mgr manager.Manager, opts core.Options) error {
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
