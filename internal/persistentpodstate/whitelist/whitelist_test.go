package whitelist

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	foo  = Entry{Group: "example.com", Version: "v1", Kind: "Foo"}
	bar  = Entry{Group: "example.com", Version: "v1", Kind: "Bar", ReplicasPath: "spec.size"}
	baz  = Entry{Group: "other.io", Kind: "Baz"}
	fooK = schema.GroupKind{Group: "example.com", Kind: "Foo"}
)

func TestEntryKinds(t *testing.T) {
	if got, want := bar.GroupKind(), (schema.GroupKind{Group: "example.com", Kind: "Bar"}); got != want {
		t.Errorf("GroupKind = %v, want %v", got, want)
	}
	want := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Bar"}
	if got := bar.GroupVersionKind(); got != want {
		t.Errorf("GroupVersionKind = %v, want %v", got, want)
	}
}

func TestSnapshotLookup(t *testing.T) {
	s := newSnapshot([]Entry{foo, bar})
	var nilSnap *Snapshot
	tests := map[string]struct {
		snap   *Snapshot
		gk     schema.GroupKind
		want   Entry
		wantOK bool
	}{
		"found":                 {snap: s, gk: fooK, want: foo, wantOK: true},
		"kind case differs":     {snap: s, gk: schema.GroupKind{Group: "example.com", Kind: "foo"}},
		"group case differs":    {snap: s, gk: schema.GroupKind{Group: "Example.com", Kind: "Foo"}},
		"other group same kind": {snap: s, gk: schema.GroupKind{Group: "other.io", Kind: "Foo"}},
		"nil snapshot":          {snap: nilSnap, gk: fooK},
		"zero snapshot":         {snap: &Snapshot{}, gk: fooK},
		"empty snapshot":        {snap: Empty(), gk: fooK},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := tc.snap.Lookup(tc.gk)
			if ok != tc.wantOK {
				t.Fatalf("Lookup ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Lookup (-want +got):\n%s", diff)
			}
			if allowed := tc.snap.Allowed(tc.gk); allowed != tc.wantOK {
				t.Errorf("Allowed = %v, want %v", allowed, tc.wantOK)
			}
		})
	}
}

func TestSnapshotEntriesIsACopy(t *testing.T) {
	s := newSnapshot([]Entry{foo, bar})
	got := s.Entries()
	if diff := cmp.Diff([]Entry{foo, bar}, got); diff != "" {
		t.Fatalf("Entries (-want +got):\n%s", diff)
	}
	got[0].Kind = "Changed"
	if diff := cmp.Diff([]Entry{foo, bar}, s.Entries()); diff != "" {
		t.Errorf("modifying the returned slice changed the snapshot (-want +got):\n%s", diff)
	}
	var nilSnap *Snapshot
	if n := len(nilSnap.Entries()) + len(Empty().Entries()); n != 0 {
		t.Errorf("nil and empty snapshots have %d entries", n)
	}
}

func TestDiff(t *testing.T) {
	fooV2 := foo
	fooV2.Version = "v2"
	barPath := bar
	barPath.ReplicasPath = "spec.count"
	tests := map[string]struct {
		prev, next                      *Snapshot
		wantAdd, wantRemove, wantChange []Entry
	}{
		"both nil":           {},
		"nil to some":        {next: newSnapshot([]Entry{foo, bar}), wantAdd: []Entry{foo, bar}},
		"some to empty":      {prev: newSnapshot([]Entry{foo, bar}), next: Empty(), wantRemove: []Entry{foo, bar}},
		"equal":              {prev: newSnapshot([]Entry{foo, bar}), next: newSnapshot([]Entry{foo, bar})},
		"reordered is equal": {prev: newSnapshot([]Entry{foo, bar}), next: newSnapshot([]Entry{bar, foo})},
		"added and removed": {
			prev: newSnapshot([]Entry{foo, bar}), next: newSnapshot([]Entry{bar, baz}),
			wantAdd: []Entry{baz}, wantRemove: []Entry{foo},
		},
		"version and replicas path changed": {
			prev: newSnapshot([]Entry{foo, bar, baz}), next: newSnapshot([]Entry{fooV2, barPath, baz}),
			wantChange: []Entry{fooV2, barPath},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			added, removed, changed := Diff(tc.prev, tc.next)
			if diff := cmp.Diff(tc.wantAdd, added); diff != "" {
				t.Errorf("added (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRemove, removed); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantChange, changed); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
		})
	}
}
