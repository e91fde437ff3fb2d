package v1beta1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/drover-dev/drover/internal/testutil"
)

// TestCRDBounds checks that the generated NodePool CRD bounds the attributes a pool copies onto its nodes.
func TestCRDBounds(t *testing.T) {
	crd := testutil.LoadCRD(t, "../../../../config/components/nodepool/crd/apps.openyurt.io_nodepools.yaml")
	type bounds struct{ MaxItems, MaxProperties *int64 }
	want := map[string]bounds{
		"spec.labels":      {MaxProperties: ptr.To[int64](128)},
		"spec.annotations": {MaxProperties: ptr.To[int64](128)},
		"spec.taints":      {MaxItems: ptr.To[int64](64)},
	}
	for path, w := range want {
		s := testutil.SchemaAt(t, crd, path)
		if diff := cmp.Diff(w, bounds{MaxItems: s.MaxItems, MaxProperties: s.MaxProperties}); diff != "" {
			t.Errorf("%s bounds (-want +got):\n%s", path, diff)
		}
	}
}
