// Package whitelist holds the custom workload whitelist of PersistentPodState: the StatefulSet-like kinds,
// beyond the built-in ones, that a PersistentPodState may target. The whitelist lives in one ConfigMap key as
// JSON. A Store watches that ConfigMap, parses its value once per change and publishes the result as an
// immutable Snapshot, so that the controller, the generator, the workload finder and both webhooks read it
// without any I/O or parsing.
//
// Kinds are matched by API group and kind, exactly and case-sensitively; the version is ignored.
package whitelist

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DataKey is the ConfigMap data key that holds the whitelist; DefaultConfigMapName is the ConfigMap's
// default name (in the manager's namespace).
const (
	DataKey              = "PPS_Watch_Custom_Workload_WhiteList"
	DefaultConfigMapName = "kruise-configuration"
)

// Entry is one whitelisted StatefulSet-like kind.
type Entry struct {
	Group, Version, Kind string
	// ReplicasPath is the dotted path of the replica count in the workload object; "" means spec.replicas.
	ReplicasPath string
}

// GroupKind returns the entry's group and kind, the key a target is matched by.
// DefaultReplicasPath is where a workload keeps its replica count unless its entry names another path.
const DefaultReplicasPath = "spec.replicas"

// Replicas returns the dotted path of the entry's replica count: ReplicasPath, or DefaultReplicasPath.
func (e Entry) Replicas() string {
	if e.ReplicasPath == "" {
		return DefaultReplicasPath
	}
	return e.ReplicasPath
}

func (e Entry) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: e.Group, Kind: e.Kind}
}

// GroupVersionKind returns the entry's group, version and kind. The version is empty when the whitelist
// names none; the caller resolves it.
func (e Entry) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind}
}

// Snapshot is an immutable parsed whitelist. The zero value, and a nil *Snapshot, allow nothing. It is safe
// for concurrent reads.
type Snapshot struct {
	entries []Entry                  // in the order the whitelist gives them, one per group and kind
	byGK    map[schema.GroupKind]int // index into entries
}

// empty is shared: a Snapshot is never modified.
var empty = &Snapshot{}

// Empty returns the snapshot that allows no kind.
func Empty() *Snapshot { return empty }

// newSnapshot builds a snapshot from entries that are already unique by group and kind.
func newSnapshot(entries []Entry) *Snapshot {
	if len(entries) == 0 {
		return empty
	}
	byGK := make(map[schema.GroupKind]int, len(entries))
	for i, e := range entries {
		byGK[e.GroupKind()] = i
	}
	return &Snapshot{entries: entries, byGK: byGK}
}

// Lookup returns the entry of the group and kind gk (exact, case-sensitive match; the version plays no
// part).
func (s *Snapshot) Lookup(gk schema.GroupKind) (Entry, bool) {
	if s == nil {
		return Entry{}, false
	}
	i, ok := s.byGK[gk]
	if !ok {
		return Entry{}, false
	}
	return s.entries[i], true
}

// Allowed reports whether the group and kind gk is whitelisted.
func (s *Snapshot) Allowed(gk schema.GroupKind) bool {
	_, ok := s.Lookup(gk)
	return ok
}

// Entries returns a copy of the entries, in the order the whitelist gives them.
func (s *Snapshot) Entries() []Entry {
	if s == nil || len(s.entries) == 0 {
		return nil
	}
	return slices.Clone(s.entries)
}

// equal reports whether two snapshots hold the same entries in the same order.
func (s *Snapshot) equal(o *Snapshot) bool {
	var a, b []Entry
	if s != nil {
		a = s.entries
	}
	if o != nil {
		b = o.entries
	}
	return slices.Equal(a, b)
}

// Diff compares two snapshots by group and kind (nil counts as empty). added lists the entries of next whose
// group and kind prev lacks, in next's order; removed lists the entries of prev whose group and kind next
// lacks, in prev's order; changed lists the entries of next whose group and kind prev has with another
// Version or ReplicasPath, with next's values. A changed entry is neither added nor removed.
func Diff(prev, next *Snapshot) (added, removed, changed []Entry) {
	for _, e := range next.list() {
		old, ok := prev.Lookup(e.GroupKind())
		switch {
		case !ok:
			added = append(added, e)
		case old != e:
			changed = append(changed, e)
		}
	}
	for _, e := range prev.list() {
		if !next.Allowed(e.GroupKind()) {
			removed = append(removed, e)
		}
	}
	return added, removed, changed
}

// list returns the entries without copying them; callers must not modify the result.
func (s *Snapshot) list() []Entry {
	if s == nil {
		return nil
	}
	return s.entries
}
