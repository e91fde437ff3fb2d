// Package nodepool implements the NodePool controller: pool membership, propagation of pool attributes to
// member nodes and the pool status (spec: yurtappdaemon.md §5).
package nodepool

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Options configures the NodePool controller.
type Options struct {
	// Workers is the number of concurrent reconciles (--nodepool-workers).
	Workers int
	// SyncNodeAttributes propagates pool labels, annotations and taints to members
	// (--nodepool-sync-node-attributes).
	SyncNodeAttributes bool
}

// Setup registers the NodePool indexes and controller with the manager.
func Setup(ctx context.Context, mgr manager.Manager, opts Options) error {
	return nil // TODO(nodepool): implemented by the NodePool controller work.
}
