package core

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// scalePass is the scale target: one StatefulSet of 5,000 Ready pods on 100 nodes in 3 zones, tracking the
// zone and the hostname, every pod already recorded.
func scalePass() Pass {
	const pods, nodes = 5000, 100
	labels := map[string]map[string]string{}
	for i := range nodes {
		n := fmt.Sprintf("node-%03d", i)
		labels[n] = map[string]string{zoneKey: fmt.Sprintf("zone-%d", i%3), hostKey: n, "kubernetes.io/os": "linux"}
	}
	have := make(States, pods)
	list := make([]*corev1.Pod, 0, pods)
	for i := range pods {
		name, node := fmt.Sprintf("web-%d", i), fmt.Sprintf("node-%03d", i%nodes)
		have[name] = st(node, zoneKey, labels[node][zoneKey], hostKey, node)
		list = append(list, readyPod(name, node))
	}
	return Pass{PPS: newPPS(withStates(have)), Target: nativeTarget(pods, 0), Pods: list, Node: lookupIn(labels, nil)}
}

// BenchmarkCompute5000 measures a no-op pass at the scale target.
func BenchmarkCompute5000(b *testing.B) {
	p := scalePass()
	if diff := cmp.Diff(Result{PodStates: p.PPS.Status.PodStates}, Compute(p)); diff != "" {
		b.Fatalf("the pass is not a no-op (-want +got):\n%s", diff)
	}
	b.ReportAllocs()
	for b.Loop() {
		Compute(p)
	}
}

// BenchmarkGuard5000 measures the size guard writing 5,000 new records (the first pass after creation).
func BenchmarkGuard5000(b *testing.B) {
	p := scalePass()
	want := p.PPS.Status.PodStates
	p.PPS.Status.PodStates = nil
	b.ReportAllocs()
	for b.Loop() {
		Guard(p.PPS, want, DefaultSizeLimit)
	}
}
