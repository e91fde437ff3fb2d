package yurtappdaemon

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// benchPools is the pool count of PF-5's scale target.
const benchPools = 1000

// BenchmarkNoopReconcile measures one pass of an owner selecting 1,000 pools whose children are all in
// sync (PF-3, PF-5: at most 100 ms of CPU and no request). The reads go to the fake client, which copies
// every object it returns and so costs more than the manager's cache: the figure is an upper bound. The
// benchmark fails if a pass writes anything.
func BenchmarkNoopReconcile(b *testing.B) {
	for _, k := range ownerKindCases {
		b.Run(k.kind, func(b *testing.B) {
			objs := []client.Object{k.owner().Obj()}
			for i := range benchPools {
				objs = append(objs, pool(fmt.Sprintf("pool-%04d", i), edgeLabels).Obj())
			}
			// The fake client leaves UIDs empty; the API server sets them, and the loop guard keys on them.
			f := newFixture(b, k, objs, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if obj.GetUID() == "" {
						obj.SetUID(uuid.NewUUID())
					}
					return c.Create(ctx, obj, opts...)
				},
			})
			f.mustReconcile() // creates the children
			f.mustReconcile() // settles the status
			if n := len(f.deployments()); n != benchPools {
				b.Fatalf("%d children after the first passes, want %d", n, benchPools)
			}
			f.writes.reset()
			for b.Loop() {
				f.mustReconcile()
			}
			n := f.writes.get("total")
			b.ReportMetric(float64(n)/float64(b.N), "writes/op")
			if n != 0 {
				b.Fatalf("no-op passes wrote %d times: %v", n, f.writes.entries())
			}
		})
	}
}
