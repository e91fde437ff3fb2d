package yurtappdaemon

import (
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/index"
)

// IndexControllerUID is the field index key under which Deployments, StatefulSets and ControllerRevisions are
// indexed by the UID of their controller ownerReference. Each of the three types has its own
// index under this one key. Tests build their fake clients with the same key and functions (see Indexes).
const IndexControllerUID = "drover.dev/controller-uid"

// IndexPoolName is the field index key under which Deployments and StatefulSets are indexed by the value of
// their apps.openyurt.io/pool-name label. It finds the adoption candidates of a pool without
// scanning every workload of the namespace: at the scale target a namespace holds 10,000 children, and each
// owner looks for orphans whenever a pool is added.
const IndexPoolName = "drover.dev/pool-name"

// Indexes returns every index of this package. The manager registers them from Controllers; tests pass
// them to fake.ClientBuilder.WithIndex.
func Indexes() []index.Index {
	return []index.Index{
		{Object: &appsv1.Deployment{}, Field: IndexControllerUID, Extract: index.ControllerUIDValues},
		{Object: &appsv1.StatefulSet{}, Field: IndexControllerUID, Extract: index.ControllerUIDValues},
		{Object: &appsv1.ControllerRevision{}, Field: IndexControllerUID, Extract: index.ControllerUIDValues},
		{Object: &appsv1.Deployment{}, Field: IndexPoolName, Extract: poolNameValues},
		{Object: &appsv1.StatefulSet{}, Field: IndexPoolName, Extract: poolNameValues},
	}
}

// poolNameValues returns the object's pool-name label value, if it has one.
func poolNameValues(obj client.Object) []string {
	if v := obj.GetLabels()[openyurtv1alpha1.LabelPoolName]; v != "" {
		return []string{v}
	}
	return nil
}
