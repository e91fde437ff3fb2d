package kit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// CacheNeed declares what a controller needs the manager's cache to hold of one object type. A type no
// enabled controller declares is cached whole the first time something reads or watches it.
type CacheNeed struct {
	// Object is an empty object of the type. Every type is cached one way only: typed, never also as
	// metadata (a metav1.PartialObjectMetadata of the same kind is refused).
	Object client.Object
	// Only restricts the objects cached (a label selector, a field selector, namespaces); the zero value
	// needs every object of the type.
	Only cache.ByObject
}

// MergeCacheNeeds merges the cache needs of the enabled controllers into base (whose ByObject it must not
// already restrict for a declared type), by these rules, for each type:
//
//   - a controller that needs every object wins: the type is cached whole, whatever the others restrict, so
//     no controller ever removes what another needs (a handler that wants fewer objects filters its events);
//   - controllers that all declare the same restriction get it;
//   - two different restrictions cannot be merged into one informer (a cache holds one selector per type):
//     start-up fails, naming both;
//   - a type declared both typed and as metadata only fails start-up too: it would be cached twice.
//
// scheme resolves each Object's kind.
func MergeCacheNeeds(base cache.Options, scheme *runtime.Scheme, controllers []*Controller,
	enabled sets.Set[string]) (cache.Options, error) {
	type merged struct {
		obj      client.Object
		only     cache.ByObject
		whole    bool
		by       string // the controller whose restriction is kept
		metadata bool
	}
	byKind := map[schema.GroupVersionKind]*merged{}
	var order []schema.GroupVersionKind
	for _, c := range controllers {
		if !enabled.Has(c.Name) {
			continue
		}
		if c.Cache == nil {
			continue
		}
		for _, need := range c.Cache() {
			gvk, err := apiutil.GVKForObject(need.Object, scheme)
			if err != nil {
				return base, fmt.Errorf("controller %s: cache need: %w", c.Name, err)
			}
			metadata := isMetadata(need.Object)
			whole := restriction(need.Only) == ""
			m, ok := byKind[gvk]
			if !ok {
				byKind[gvk] = &merged{obj: need.Object, only: need.Only, whole: whole, by: c.Name, metadata: metadata}
				order = append(order, gvk)
				continue
			}
			if m.metadata != metadata {
				return base, fmt.Errorf("controllers %s and %s need %s cached both typed and as metadata only; "+
					"drover caches each type one way", m.by, c.Name, gvk.Kind)
			}
			switch {
			case m.whole:
			case whole:
				m.whole, m.by = true, c.Name
			case restriction(m.only) != restriction(need.Only):
				return base, fmt.Errorf("controllers %s and %s need different subsets of %s (%s; %s): one informer "+
					"cannot hold both; declare the union (or no restriction) in one of them",
					m.by, c.Name, gvk.Kind, restriction(m.only), restriction(need.Only))
			}
		}
	}
	if base.ByObject == nil {
		base.ByObject = map[client.Object]cache.ByObject{}
	}
	for _, gvk := range order {
		m := byKind[gvk]
		for obj := range base.ByObject {
			if sameKind(obj, gvk, scheme) {
				return base, fmt.Errorf("the base cache options already configure %s", gvk.Kind)
			}
		}
		if !m.whole {
			base.ByObject[m.obj] = m.only
		}
	}
	return base, nil
}

func isMetadata(obj client.Object) bool {
	_, ok := obj.(*metav1.PartialObjectMetadata)
	return ok
}

func sameKind(obj client.Object, gvk schema.GroupVersionKind, scheme *runtime.Scheme) bool {
	got, err := apiutil.GVKForObject(obj, scheme)
	return err == nil && got == gvk
}

// restriction renders what a ByObject restricts ("" for nothing), for comparison and messages.
func restriction(b cache.ByObject) string {
	var parts []string
	if b.Label != nil && !b.Label.Empty() {
		parts = append(parts, "labels "+b.Label.String())
	}
	if b.Field != nil && !b.Field.Empty() {
		parts = append(parts, "fields "+b.Field.String())
	}
	for _, ns := range slices.Sorted(maps.Keys(b.Namespaces)) {
		cfg := b.Namespaces[ns]
		part := "namespace " + ns
		if cfg.LabelSelector != nil && !cfg.LabelSelector.Empty() {
			part += " labels " + cfg.LabelSelector.String()
		}
		if cfg.FieldSelector != nil && !cfg.FieldSelector.Empty() {
			part += " fields " + cfg.FieldSelector.String()
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}
