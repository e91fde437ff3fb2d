// Package yurtappdaemon implements the one generic controller behind YurtAppDaemon and UnitedDaemonSet
// (spec: yurtappdaemon.md §4): a Deployment or StatefulSet per selected NodePool. The pure parts (naming,
// rendering, tweaks, revision hashing, the sync check, structural validation, workload adapters) live in
// the render subpackage, which the webhooks share.
package yurtappdaemon

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Options configures the controllers of both kinds.
type Options struct {
	// Workers is the number of concurrent reconciles of each kind (--yurtappdaemon-workers).
	Workers int
	// MaxBatch caps the slow-start batches of creates, updates and deletes (--yurtappdaemon-max-batch).
	MaxBatch int
}

// SetupIndexes registers the field indexes both kinds share. Call it once per manager.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return nil // TODO(yurtappdaemon): reconciler work.
}

// SetupYurtAppDaemon registers the YurtAppDaemon controller.
func SetupYurtAppDaemon(ctx context.Context, mgr manager.Manager, opts Options) error {
	return nil // TODO(yurtappdaemon): reconciler work.
}

// SetupUnitedDaemonSet registers the UnitedDaemonSet controller.
func SetupUnitedDaemonSet(ctx context.Context, mgr manager.Manager, opts Options) error {
	return nil // TODO(yurtappdaemon): reconciler work.
}
