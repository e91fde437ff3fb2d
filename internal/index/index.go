// Package index holds the shape every controller's field indexes share, so that production (the manager's
// cache) and tests (the fake client) register exactly the same indexes.
package index

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Index is one field index: the indexed type, its key and the function computing the indexed values.
type Index struct {
	Object  client.Object
	Field   string
	Extract client.IndexerFunc
}

// Register adds the indexes to a field indexer (the manager's cache).
func Register(ctx context.Context, indexer client.FieldIndexer, indexes []Index) error {
	for _, ix := range indexes {
		if err := indexer.IndexField(ctx, ix.Object, ix.Field, ix.Extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.Object, ix.Field, err)
		}
	}
	return nil
}

// WithIndexes adds the indexes to a fake client builder.
func WithIndexes(b *fake.ClientBuilder, indexes []Index) *fake.ClientBuilder {
	for _, ix := range indexes {
		b = b.WithIndex(ix.Object, ix.Field, ix.Extract)
	}
	return b
}

// ControllerUIDValues is the extract function of an index by the UID of an object's controller
// ownerReference: it returns that UID, or nothing for an object without a controller.
func ControllerUIDValues(obj client.Object) []string {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.UID == "" {
		return nil
	}
	return []string{string(ref.UID)}
}
