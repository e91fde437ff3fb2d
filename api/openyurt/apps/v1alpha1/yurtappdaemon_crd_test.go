package v1alpha1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/drover-dev/drover/internal/testutil"
)

// bounds are the size bounds a schema declares.
type bounds struct {
	MaxItems, MaxLength, MaxProperties *int64
}

// TestCRDBounds checks that the generated CRDs of both owner kinds bound every list and string a request can
// grow, with the numbers the API documents.
func TestCRDBounds(t *testing.T) {
	want := map[string]bounds{
		"spec.workloadTweaks":                                        {MaxItems: ptr.To[int64](32)},
		"spec.workloadTweaks[].pools":                                {MaxItems: ptr.To[int64](1000)},
		"spec.workloadTweaks[].pools[]":                              {MaxLength: ptr.To[int64](63)},
		"spec.workloadTweaks[].tweaks.patches":                       {MaxItems: ptr.To[int64](500)},
		"spec.workloadTweaks[].tweaks.patches[].path":                {MaxLength: ptr.To[int64](1024)},
		"spec.workloadTweaks[].tweaks.containerImages":               {MaxItems: ptr.To[int64](64)},
		"spec.workloadTweaks[].tweaks.containerImages[].name":        {MaxLength: ptr.To[int64](63)},
		"spec.workloadTweaks[].tweaks.containerImages[].targetImage": {MaxLength: ptr.To[int64](1024)},
	}
	for _, file := range []string{
		"../../../../config/components/yurtappdaemon/crd/apps.openyurt.io_yurtappdaemons.yaml",
		"../../../../config/components/uniteddaemonset/crd/apps.openyurt.io_uniteddaemonsets.yaml",
	} {
		crd := testutil.LoadCRD(t, file)
		for path, w := range want {
			s := testutil.SchemaAt(t, crd, path)
			got := bounds{MaxItems: s.MaxItems, MaxLength: s.MaxLength, MaxProperties: s.MaxProperties}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("%s: %s bounds (-want +got):\n%s", crd.Name, path, diff)
			}
		}
	}
}
