// Package nodepool implements the NodePool controller: pool membership, propagation of pool attributes to
// member nodes and the pool status (docs/design/nodepool.md).
package nodepool

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/nodepool/membership"
)

// ControllerName is the name of the controller (--controllers, logs, metrics, event source).
const ControllerName = "nodepool"

// Options configures the NodePool controller; Controller binds them to its flags.
type Options struct {
	// Manage starts the controller and its webhooks (--manage-nodepools); false leaves NodePools to OpenYurt.
	Manage bool
	// Workers is the number of concurrent reconciles (--nodepool-workers).
	Workers int
	// SyncNodeAttributes propagates pool labels, annotations and taints to members
	// (--nodepool-sync-node-attributes).
	SyncNodeAttributes bool
	// NodeWriteConcurrency bounds the node patches of one pass in flight (--nodepool-node-write-concurrency).
	NodeWriteConcurrency int
}

// Controller describes the NodePool controller to the manager.
func Controller() *kit.Controller {
	gvk := openyurtv1beta2.GroupVersion.WithKind("NodePool")
	opts := &Options{}
	fs := kit.NewFlagSet(ControllerName)
	fs.BoolVar(&opts.Manage, "manage-nodepools", true,
		"Run the NodePool controller and webhooks. Set false next to OpenYurt's yurt-manager, which then owns NodePools.")
	fs.IntVar(&opts.Workers, "nodepool-workers", 3, "Concurrent NodePool reconciles.")
	fs.BoolVar(&opts.SyncNodeAttributes, "nodepool-sync-node-attributes", true,
		"Push NodePool labels, annotations and taints to member nodes.")
	fs.IntVar(&opts.NodeWriteConcurrency, "nodepool-node-write-concurrency", 8,
		"Most node patches of one NodePool pass in flight at once.")
	mutating := kit.KindWebhook(true, gvk, "nodepools", admissionregistrationv1.Create, admissionregistrationv1.Update)
	validating := kit.KindWebhook(false, gvk, "nodepools", admissionregistrationv1.Create, admissionregistrationv1.Update,
		admissionregistrationv1.Delete)
	// The webhooks name v1beta2 only: a request in v1beta1 or v1alpha1 is converted to v1beta2 for them.
	mutating.MatchPolicy, validating.MatchPolicy = admissionregistrationv1.Equivalent, admissionregistrationv1.Equivalent
	return &kit.Controller{
		Name:  ControllerName,
		Kinds: []schema.GroupVersionKind{gvk},
		Flags: fs,
		Disabled: func() string {
			if !opts.Manage {
				return "NodePools are managed elsewhere (--manage-nodepools=false)"
			}
			return ""
		},
		Indexes:         membership.Indexes(),
		RegisterMetrics: RegisterMetrics,
		Setup:           func(ctx context.Context, mgr manager.Manager) error { return Setup(ctx, mgr, *opts) },
		Webhooks:        []kit.Webhook{mutating, validating},
		ServeWebhooks:   SetupNodePoolWebhook,
		CRDs:            []string{"apps.openyurt.io_nodepools.yaml"},
		ConversionCRDs:  []string{"nodepools.apps.openyurt.io"},
		// The controller works on v1beta2, the storage version and hub; the scheme knows the other versions
		// for the conversion webhook.
		Objects: []client.Object{&openyurtv1beta2.NodePool{}, &openyurtv1beta1.NodePool{}, &openyurtv1alpha1.NodePool{}},
	}
}

// Setup registers the NodePool controller with the manager; the indexes of membership.Indexes must be
// registered. The controller runs on the leader only (controller-runtime's default).
func Setup(_ context.Context, mgr manager.Manager, opts Options) error {
	r := NewReconciler(Config{
		Client:               mgr.GetClient(),
		Recorder:             mgr.GetEventRecorder("drover-" + ControllerName),
		SyncNodeAttributes:   opts.SyncNodeAttributes,
		NodeWriteConcurrency: opts.NodeWriteConcurrency,
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&openyurtv1beta2.NodePool{}, builder.WithPredicates(poolPredicate())).
		Watches(&corev1.Node{}, nodeHandler{syncAttributes: opts.SyncNodeAttributes}).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.Workers, 1)}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the %s controller: %w", ControllerName, err)
	}
	return nil
}
