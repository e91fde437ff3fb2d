package registry

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/scheme"
)

// CacheOptions returns the manager cache configuration for the enabled controllers: cached objects drop
// managedFields, which no controller reads, and each type holds what the controllers' cache needs ask for,
// merged by kit.MergeCacheNeeds (YurtAppDaemon and UnitedDaemonSet cache only pool-labelled Deployments and
// StatefulSets; PersistentPodState caches every StatefulSet and, of ConfigMaps, its whitelist alone). A need
// that cannot be merged stops start-up.
func CacheOptions(controllers []*kit.Controller, enabled sets.Set[string]) (cache.Options, error) {
	base := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	return kit.MergeCacheNeeds(base, scheme.New(), controllers, enabled)
}

// ClientOptions returns the manager client configuration: unstructured objects (the custom workload kinds
// of PersistentPodState) are read from the cache too, like typed ones.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{Unstructured: true}}
}
