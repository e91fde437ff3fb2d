package bench

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

func TestBudgetOfRoundsTheTAppsTenPercentUp(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{1000, 100}, {100, 10}, {15, 2}, {1, 1}, {0, 0}, {999, 100},
	} {
		if got := budgetOf(tc.n); got != tc.want {
			t.Errorf("budgetOf(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestUnavailableReason(t *testing.T) {
	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "img:2"}}},
			Status: corev1.PodStatus{
				Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{
					{Type: corev1.PodReady, Status: corev1.ConditionTrue},
					{Type: tkestackv1.InPlaceUpdateReady, Status: corev1.ConditionTrue},
				},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "img:2"}},
			},
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"available":             {pod(nil), ""},
		"no gate at all":        {pod(func(p *corev1.Pod) { p.Status.Conditions = p.Status.Conditions[:1] }), ""},
		"terminating":           {pod(func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }), reasonTerminating},
		"pending":               {pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), reasonNotRunning},
		"not ready":             {pod(func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }), reasonNotReady},
		"no ready condition":    {pod(func(p *corev1.Pod) { p.Status.Conditions = p.Status.Conditions[1:] }), reasonNotReady},
		"gate false, ready":     {pod(func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionFalse }), reasonGateFalse},
		"old image reported":    {pod(func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Image = "img:1" }), reasonImageReported},
		"no container statuses": {pod(func(p *corev1.Pod) { p.Status.ContainerStatuses = nil }), reasonImageReported},
	} {
		if got := unavailableReason(tc.pod); got != tc.want {
			t.Errorf("%s: got %q, want %q", name, got, tc.want)
		}
		// The informer's transform keeps what the function reads.
		slim, err := slimPod(tc.pod)
		if err != nil {
			t.Fatal(err)
		}
		if got := unavailableReason(slim.(*corev1.Pod)); got != tc.want {
			t.Errorf("%s (slim): got %q, want %q", name, got, tc.want)
		}
	}
}

func TestDroverWrites(t *testing.T) {
	delta := map[string]float64{
		"POST pods":          100,
		"POST pods/binding":  100,
		"PATCH pods/status":  350,
		"PATCH pods":         3,
		"PATCH tapps/status": 7,
		"PATCH tapps":        1,
		"POST tapps":         1,
		"POST events":        200,
	}
	own := map[string]float64{"POST tapps": 1, "PATCH tapps": 1}

	w := droverWrites(delta, own, ptr.To(100.0))
	want := tappWrites{pods: 103, gates: 100, podStatus: 350, tappStatus: 7, events: 200, exact: true}
	if w != want {
		t.Errorf("with drover's gate count: got %+v, want %+v", w, want)
	}
	if got := w.total(); got != 210 {
		t.Errorf("total = %v, want 210", got)
	}

	w = droverWrites(delta, own, nil)
	if w.exact || w.gates != 350 || w.total() != 460 {
		t.Errorf("without drover's gate count every pods/status write is drover's: got %+v (total %v)", w, w.total())
	}
}
