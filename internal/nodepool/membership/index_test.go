package membership

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/testutil"
)

func TestIndexes(t *testing.T) {
	prev := map[string]string{openyurtv1beta2.AnnotationPrevAttrs: `{"labels":{"a":"1"}}`}
	tests := map[string]struct {
		obj  client.Object
		want map[string][]string // index key -> values
	}{
		"plain node": {obj: testutil.MakeNode("n").Obj(), want: map[string][]string{}},
		"member": {
			obj:  testutil.MakeNode("n").Pool("p").Annotations(prev).Obj(),
			want: map[string][]string{IndexNodeMembership: {"p"}},
		},
		"asks to join": {
			obj:  testutil.MakeNode("n").DesiredPool("q").Obj(),
			want: map[string][]string{IndexNodeDesiredPool: {"q"}},
		},
		"member asking for another pool": {
			obj:  testutil.MakeNode("n").Pool("p").DesiredPool("q").Obj(),
			want: map[string][]string{IndexNodeMembership: {"p"}, IndexNodeDesiredPool: {"q"}},
		},
		"left a pool with attributes": {
			obj:  testutil.MakeNode("n").Annotations(prev).Obj(),
			want: map[string][]string{IndexNodeStaleAttributes: {StaleAttributesValue}},
		},
		"empty membership label is no membership": {
			obj:  testutil.MakeNode("n").Pool("").Annotations(prev).Obj(),
			want: map[string][]string{IndexNodeStaleAttributes: {StaleAttributesValue}},
		},
		"not a node": {obj: testutil.MakeNodePool("p").Obj(), want: map[string][]string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := map[string][]string{}
			for _, ix := range Indexes() {
				if v := ix.Extract(tc.obj); len(v) > 0 {
					got[ix.Field] = v
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("index values (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIndexesListsEveryKey(t *testing.T) {
	var got []string
	for _, ix := range Indexes() {
		got = append(got, ix.Field)
	}
	want := []string{IndexNodeMembership, IndexNodeDesiredPool, IndexNodeStaleAttributes}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("indexes (-want +got):\n%s", diff)
	}
}
