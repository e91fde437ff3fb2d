// Package nodepool implements the NodePool controller: pool membership, propagation of pool attributes to
// member nodes and the pool status (spec: yurtappdaemon.md §5).
package nodepool

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

// ControllerName is the name of the controller (--controllers, logs, metrics, event source).
const ControllerName = "nodepool"

// Options configures the NodePool controller.
type Options struct {
	// Workers is the number of concurrent reconciles (--nodepool-workers).
	Workers int
	// SyncNodeAttributes propagates pool labels, annotations and taints to members
	// (--nodepool-sync-node-attributes).
	SyncNodeAttributes bool
}

// Setup registers the NodePool indexes and controller with the manager. The controller runs on the leader
// only (controller-runtime's default).
func Setup(ctx context.Context, mgr manager.Manager, opts Options) error {
	if err := SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	r := &Reconciler{
		Client:             mgr.GetClient(),
		Recorder:           mgr.GetEventRecorder("drover-" + ControllerName),
		SyncNodeAttributes: opts.SyncNodeAttributes,
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&openyurtv1beta1.NodePool{}, builder.WithPredicates(poolPredicate())).
		Watches(&corev1.Node{}, nodeHandler{syncAttributes: opts.SyncNodeAttributes}).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.Workers, 1)}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the %s controller: %w", ControllerName, err)
	}
	return nil
}
