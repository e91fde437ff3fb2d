package bench

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/measure"
)

func TestPPSPodCarriesTheStatefulSetIdentity(t *testing.T) {
	sts := ppsStatefulSet(5000)
	pod := ppsPod("uid-1", 42, "node-07")
	if pod.Name != "big-42" || pod.Namespace != ppsNamespace || pod.Spec.NodeName != "node-07" {
		t.Errorf("name %s/%s on %q", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("the StatefulSet's selector %v does not select the pod's labels %v (%v)", sts.Spec.Selector, pod.Labels, err)
	}
	if pod.Labels[appsv1.StatefulSetPodNameLabel] != "big-42" || pod.Labels[appsv1.PodIndexLabel] != "42" {
		t.Errorf("identity labels: %v", pod.Labels)
	}
	if pod.Spec.Hostname != "big-42" || pod.Spec.Subdomain != sts.Spec.ServiceName {
		t.Errorf("hostname %q, subdomain %q", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.APIVersion != "apps/v1" || ref.Kind != "StatefulSet" || ref.Name != sts.Name || ref.UID != "uid-1" {
		t.Errorf("controller reference: %+v", ref)
	}
	if pod.Spec.PriorityClassName != "" {
		t.Errorf("the bench's pods must not name the template's absent PriorityClass")
	}
}

func TestPPSGatedPodIsTheSamePodHeldBack(t *testing.T) {
	r := &ppsRun{uid: "uid-1"}
	pod, bound := r.gatedPod(42), ppsPod("uid-1", 42, "node-07")
	if pod.Spec.NodeName != "" {
		t.Errorf("a gated pod cannot be bound: nodeName %q", pod.Spec.NodeName)
	}
	if len(pod.Spec.SchedulingGates) != 1 || pod.Spec.SchedulingGates[0].Name != ppsGate {
		t.Errorf("scheduling gates %v, want %s", pod.Spec.SchedulingGates, ppsGate)
	}
	pod.Spec.SchedulingGates, pod.Spec.NodeName = nil, bound.Spec.NodeName
	if diff := cmp.Diff(bound, pod); diff != "" {
		t.Errorf("the gated pod differs from the bound one beyond gate and node (-bound +gated):\n%s", diff)
	}
}

func TestSteeringProblem(t *testing.T) {
	rec := kruisev1beta1.PodState{NodeName: "n1", NodeTopologyLabels: map[string]string{
		corev1.LabelHostname: "n1", corev1.LabelTopologyZone: "z1"}}
	steered := func(mods ...func(*corev1.Pod)) *corev1.Pod {
		p := ppsPod("u", 1, "")
		p.Annotations = map[string]string{kruisev1beta1.AnnotationInjectedPersistentPodState: "big"}
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "n1"}
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}}}}}
		for _, m := range mods {
			m(p)
		}
		return p
	}
	tests := map[string]struct {
		pod     *corev1.Pod
		enabled bool
		want    bool // a problem
	}{
		"steered as recorded":          {pod: steered(), enabled: true},
		"not steered, webhook off":     {pod: ppsPod("u", 1, "")},
		"steered with the webhook off": {pod: steered(), want: true},
		"not steered, webhook on":      {pod: ppsPod("u", 1, ""), enabled: true, want: true},
		"another node":                 {pod: steered(func(p *corev1.Pod) { p.Spec.NodeSelector[corev1.LabelHostname] = "n2" }), enabled: true, want: true},
		"no zone term":                 {pod: steered(func(p *corev1.Pod) { p.Spec.Affinity = nil }), enabled: true, want: true},
		"not marked":                   {pod: steered(func(p *corev1.Pod) { p.Annotations = nil }), enabled: true, want: true},
	}
	for name, tc := range tests {
		if got := steeringProblem(tc.pod, rec, "big", tc.enabled); (got != "") != tc.want {
			t.Errorf("%s: problem %q, want one: %v", name, got, tc.want)
		}
	}
}

func TestPPSStatefulSetCannotCreatePods(t *testing.T) {
	sts := ppsStatefulSet(10)
	if sts.Spec.Template.Spec.PriorityClassName != ppsAbsentPriorityClass {
		t.Errorf("the template must name the absent PriorityClass, got %q", sts.Spec.Template.Spec.PriorityClassName)
	}
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || *sts.Spec.Replicas != 10 {
		t.Errorf("strategy %q, replicas %d", sts.Spec.UpdateStrategy.Type, *sts.Spec.Replicas)
	}
	// OrderedReady stops at pod 0, which never becomes available: one refused create per sync at most.
	if sts.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || sts.Spec.MinReadySeconds < 3600 {
		t.Errorf("pod management %q, minReadySeconds %d", sts.Spec.PodManagementPolicy, sts.Spec.MinReadySeconds)
	}
	if sts.Annotations["kruise.io/required-persistent-topology"] != corev1.LabelHostname ||
		sts.Annotations["kruise.io/preferred-persistent-topology"] != corev1.LabelTopologyZone ||
		sts.Annotations["kruise.io/auto-generate-persistent-pod-state"] != "true" {
		t.Errorf("annotations: %v", sts.Annotations)
	}
}

func TestHistogramDelta(t *testing.T) {
	before := measure.Parse(`x_bucket{controller="a",le="0.01"} 5
x_bucket{controller="a",le="0.05"} 8
x_bucket{controller="a",le="0.1"} 10
x_bucket{controller="a",le="+Inf"} 10
x_bucket{controller="b",le="0.01"} 0
x_bucket{controller="b",le="+Inf"} 0
x_sum{controller="a"} 0.2
x_count{controller="a"} 10
`)
	after := measure.Parse(`x_bucket{controller="a",le="0.01"} 6
x_bucket{controller="a",le="0.05"} 11
x_bucket{controller="a",le="0.1"} 14
x_bucket{controller="a",le="+Inf"} 14
x_bucket{controller="b",le="0.01"} 100
x_bucket{controller="b",le="+Inf"} 100
x_sum{controller="a"} 0.32
x_count{controller="a"} 14
`)
	a := map[string]string{"controller": "a"}
	sum, count, bound := histogramDelta(before, after, "x", a, 1)
	if math.Abs(sum-0.12) > 1e-9 || count != 4 || bound != 0.1 {
		t.Errorf("got sum %v, count %v, bound %v; want 0.12, 4, 0.1", sum, count, bound)
	}
	if _, _, bound := histogramDelta(before, after, "x", a, 0.5); bound != 0.05 {
		t.Errorf("half of the 4 observations are within 0.05: bound %v", bound)
	}
	if _, count, bound := histogramDelta(before, before, "x", a, 1); count != 0 || bound != 0 {
		t.Errorf("nothing observed: count %v, bound %v", count, bound)
	}
	slow := measure.Parse(`x_bucket{controller="a",le="0.1"} 10
x_bucket{controller="a",le="+Inf"} 12
x_count{controller="a"} 12
`)
	if _, _, bound := histogramDelta(before, slow, "x", a, 1); !math.IsInf(bound, 1) {
		t.Errorf("only +Inf holds the slowest: bound %v", bound)
	}
}

func TestPacedCallsEveryIndexOnceAndReportsFailures(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	err := paced(context.Background(), 50, 1000, 4, func(_ context.Context, i int) error {
		mu.Lock()
		defer mu.Unlock()
		seen[i]++
		if i%10 == 3 {
			return errors.New("boom")
		}
		return nil
	})
	if len(seen) != 50 {
		t.Errorf("%d indices called, want 50", len(seen))
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("index %d called %d times", i, n)
		}
	}
	if err == nil || err.Error() != "5 of 50 requests failed, first: boom" {
		t.Errorf("error: %v", err)
	}
}
