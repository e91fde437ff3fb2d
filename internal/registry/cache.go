package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
)

// CacheOptions returns the manager cache configuration drover's enabled controllers are written for. By
// default Deployments and StatefulSets are cached only when they carry apps.openyurt.io/pool-name, so
// drover does not cache every workload of the cluster, and cached objects drop managedFields, which no
// controller reads. A controller may adjust this (kit.Controller.Cache): PersistentPodState, which targets
// any StatefulSet, caches them all and caches its whitelist ConfigMap alone.
func CacheOptions(registry []*kit.Controller, enabled sets.Set[string]) cache.Options {
	return kit.CacheOptions(baseCacheOptions(), registry, enabled)
}

// ClientOptions returns the manager client configuration: unstructured objects (the custom workload kinds
// of PersistentPodState) are read from the cache too, like typed ones.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{Unstructured: true}}
}

func baseCacheOptions() cache.Options {
	hasPool, err := labels.NewRequirement(openyurtv1alpha1.LabelPoolName, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key: cannot fail
	}
	perPool := labels.NewSelector().Add(*hasPool)
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}:  {Label: perPool},
			&appsv1.StatefulSet{}: {Label: perPool},
		},
	}
}
