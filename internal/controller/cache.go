package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// CacheOptions returns the manager cache configuration drover's controllers are written for:
// Deployments and StatefulSets are cached only when they carry apps.openyurt.io/pool-name, so drover never
// caches every workload of the cluster, and cached objects drop managedFields, which no controller reads.
func CacheOptions() cache.Options {
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
