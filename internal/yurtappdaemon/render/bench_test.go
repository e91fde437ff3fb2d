package render

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/testutil"
)

// BenchmarkValidateSpecPatches measures the structural validation of one tweak with n patches (the webhook
// runs it on every CREATE and UPDATE). Its cost must grow linearly with n: the ns/patch metric stays flat
// across the sizes.
func BenchmarkValidateSpecPatches(b *testing.B) {
	for _, n := range []int{100, 200, 400, 800, 1600, 3200} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			spec := deploySpec()
			spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{
				Pools: []string{"hz"}, Tweaks: openyurtv1alpha1.Tweaks{Patches: testutil.PoolPatches(n)},
			}}
			path := field.NewPath("spec")
			for b.Loop() {
				if errs := ValidateSpec(spec, path); len(errs) > 0 {
					b.Fatalf("ValidateSpec: %v", errs)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/patch")
		})
	}
}
