package yurtappdaemon

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IndexControllerUID is the field index key under which Deployments, StatefulSets and ControllerRevisions are
// indexed by the UID of their controller ownerReference (YC-7, PF-1). Each of the three types has its own
// index under this one key. Tests build their fake clients with the same key and functions (see Indexes).
const IndexControllerUID = "drover.dev/controller-uid"

// Index is one field index: the indexed type, its key and the function computing the indexed values.
type Index struct {
	Object  client.Object
	Field   string
	Extract client.IndexerFunc
}

// Indexes returns every index of this package. Production registers them through SetupIndexes; tests pass
// them to fake.ClientBuilder.WithIndex.
func Indexes() []Index {
	return []Index{
		{Object: &appsv1.Deployment{}, Field: IndexControllerUID, Extract: controllerUIDValues},
		{Object: &appsv1.StatefulSet{}, Field: IndexControllerUID, Extract: controllerUIDValues},
		{Object: &appsv1.ControllerRevision{}, Field: IndexControllerUID, Extract: controllerUIDValues},
	}
}

// SetupIndexes registers the indexes both owner kinds share with the manager's field indexer (its cache).
// Call it once per manager.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range Indexes() {
		if err := indexer.IndexField(ctx, ix.Object, ix.Field, ix.Extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.Object, ix.Field, err)
		}
	}
	return nil
}

// controllerUIDValues returns the UID of the object's controller ownerReference, if it has one.
func controllerUIDValues(obj client.Object) []string {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.UID == "" {
		return nil
	}
	return []string{string(ref.UID)}
}
