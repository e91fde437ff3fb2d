// Package index holds the shape every controller's field indexes share, so that production (the manager's
// cache) and tests (the fake client) register exactly the same indexes.
package index

import (
	"context"
	"fmt"

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
