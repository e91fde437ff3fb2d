package whitelist

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// CacheByObject restricts the ConfigMap cache to the one ConfigMap namespace/name, so that no other
// ConfigMap of the cluster is cached. The manager's cache options use it for &corev1.ConfigMap{}.
func CacheByObject(namespace, name string) cache.ByObject {
	return cache.ByObject{
		Namespaces: map[string]cache.Config{
			namespace: {FieldSelector: fields.OneTermEqualSelector("metadata.name", name)},
		},
	}
}

// Runnable returns the manager runnable that feeds the store from the ConfigMap informer of c. It runs on
// every replica, leader or not, because the webhooks of every replica read the whitelist.
func (s *Store) Runnable(c cache.Cache) manager.Runnable {
	return &runnable{store: s, cache: c}
}

type runnable struct {
	store *Store
	cache cache.Cache
}

var (
	_ manager.Runnable               = &runnable{}
	_ manager.LeaderElectionRunnable = &runnable{}
)

// NeedLeaderElection is false: the whitelist is needed on every replica.
func (r *runnable) NeedLeaderElection() bool { return false }

// Start adds an event handler to the shared ConfigMap informer and blocks until ctx is done. The handler
// applies the configured ConfigMap on add and update and applies nil on delete; the informer's initial list
// delivers the existing ConfigMap as an add. Every other ConfigMap is ignored, should the cache hold any.
func (r *runnable) Start(ctx context.Context) error {
	inf, err := r.cache.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return fmt.Errorf("getting the ConfigMap informer for the whitelist: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.store.handle(obj, false) },
		UpdateFunc: func(_, obj any) { r.store.handle(obj, false) },
		DeleteFunc: func(obj any) { r.store.handle(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("watching the whitelist ConfigMap: %w", err)
	}
	<-ctx.Done()
	if err := inf.RemoveEventHandler(reg); err != nil {
		r.store.opts.Log.Error(err, "Removing the whitelist ConfigMap handler")
	}
	return nil
}

// handle applies one informer event. obj is a *corev1.ConfigMap, or on delete possibly a tombstone holding
// one. Events of any other ConfigMap, or of anything else, are ignored. Apply has already logged, counted and
// recorded a parse error, so it is dropped here.
func (s *Store) handle(obj any, deleted bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || cm == nil || cm.Namespace != s.opts.Namespace || cm.Name != s.opts.Name {
		return
	}
	if deleted {
		cm = nil
	}
	_ = s.Apply(cm)
}
