package yurtappdaemon

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// benchPools is the pool count of the scale target (docs/yurtappdaemon.md).
const benchPools = 1000

// BenchmarkNoopReconcile measures one pass of an owner selecting 1,000 pools whose children are all in
// sync (the target: at most 100 ms of CPU and no request). The reads go to the fake client, which copies
// every object it returns and so costs more than the manager's cache: the figure is an upper bound. The
// benchmark fails if a pass writes anything.
func BenchmarkNoopReconcile(b *testing.B) {
	for _, k := range ownerKindCases {
		b.Run(k.kind, func(b *testing.B) {
			f := settledFixture(b, k)
			f.writes.Reset()
			for b.Loop() {
				f.mustReconcile()
			}
			n := f.writes.Get("total")
			b.ReportMetric(float64(n)/float64(b.N), "writes/op")
			if n != 0 {
				b.Fatalf("no-op passes wrote %d times: %v", n, f.writes.Take())
			}
		})
	}
}

// settledFixture is an owner of kind k selecting benchPools pools, with every child created and the status
// written.
func settledFixture(b *testing.B, k kindCase) *fixture {
	b.Helper()
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
	return f
}

// BenchmarkNewPoolReconcile measures the pass that serves one new pool of an owner already serving 1,000
// (the new-pool latency's critical path, per owner): the pass creates the pool's child, hands its fields over and writes the
// status: 3 writes. Creating the pool is not timed. Against the fake client, an upper bound far above the
// manager's cost: the fake answers an indexed List (the orphan lookup, the owned children) by scanning and
// copying every object of the namespace, where the cache looks the index up.
func BenchmarkNewPoolReconcile(b *testing.B) {
	for _, k := range ownerKindCases {
		b.Run(k.kind, func(b *testing.B) {
			f := settledFixture(b, k)
			f.writes.Reset()
			for i := range b.N {
				b.StopTimer()
				if err := f.c.Create(context.Background(), pool(fmt.Sprintf("new-%06d", i), edgeLabels).Obj()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				f.mustReconcile()
			}
			b.StopTimer()
			creates := f.writes.Get("create Deployment")
			b.ReportMetric(float64(f.writes.Get("total"))/float64(b.N), "writes/op")
			if creates != b.N {
				b.Fatalf("%d children created for %d new pools", creates, b.N)
			}
		})
	}
}
