package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// podTracker follows the pods of one namespace through an informer and counts the available ones, keeping
// the largest number of unavailable instances seen since resetMax.
type podTracker struct {
	want    int
	changed chan struct{}

	mu    sync.Mutex
	pods  map[string]*corev1.Pod
	avail map[string]bool
	// nAvail is the number of true values in avail.
	nAvail int
	// full is when the available count last reached want (zero while it is below).
	full time.Time
	// maxU is the largest want - available seen since resetMax, maxReasons the breakdown then.
	maxU       int
	maxReasons string
	over       overBudget
	budget     int
}

// overBudget records the states with more unavailable instances than the budget.
type overBudget struct {
	count int
	first string
}

func startPodTracker(ctx context.Context, cs kubernetes.Interface, ns string, want int) (*podTracker, func(), error) {
	t := &podTracker{
		want: want, budget: budgetOf(want), changed: make(chan struct{}, 1),
		pods: map[string]*corev1.Pod{}, avail: map[string]bool{},
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	stop, err := runInformer(ctx, factory, factory.Core().V1().Pods().Informer(), slimPod, t.set, t.remove)
	if err != nil {
		return nil, nil, fmt.Errorf("pods: %w", err)
	}
	return t, stop, nil
}

// slimPod keeps what unavailableReason reads.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp,
	}}
	for _, c := range p.Spec.Containers {
		slim.Spec.Containers = append(slim.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image})
	}
	slim.Status.Phase = p.Status.Phase
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady || c.Type == tkestackv1.InPlaceUpdateReady {
			slim.Status.Conditions = append(slim.Status.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status})
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		slim.Status.ContainerStatuses = append(slim.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: c.Ready})
	}
	return slim, nil
}

// Reasons of unavailableReason.
const (
	reasonTerminating   = "terminating"
	reasonNotRunning    = "not-running"
	reasonNotReady      = "not-ready"
	reasonGateFalse     = "gate-false"
	reasonImageReported = "old-image-reported"
	reasonMissing       = "missing"
)

// unavailableReason says why a pod is not available, or "" when it is: it must not be terminating, be
// Running and Ready, have no False tkestack.io/InPlaceUpdate condition, and report the pod spec's image for every
// container.
func unavailableReason(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return reasonTerminating
	}
	if p.Status.Phase != corev1.PodRunning {
		return reasonNotRunning
	}
	ready := false
	for _, c := range p.Status.Conditions {
		switch c.Type {
		case tkestackv1.InPlaceUpdateReady:
			if c.Status == corev1.ConditionFalse {
				return reasonGateFalse
			}
		case corev1.PodReady:
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return reasonNotReady
	}
	for _, c := range p.Spec.Containers {
		i := slices.IndexFunc(p.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == c.Name })
		if i < 0 || p.Status.ContainerStatuses[i].Image != c.Image {
			return reasonImageReported
		}
	}
	return ""
}

func (t *podTracker) set(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	t.mu.Lock()
	t.pods[p.Name] = p
	t.setAvailable(p.Name, unavailableReason(p) == "")
	t.observe()
	t.mu.Unlock()
	t.notify()
}

func (t *podTracker) remove(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	t.mu.Lock()
	delete(t.pods, p.Name)
	t.setAvailable(p.Name, false)
	delete(t.avail, p.Name)
	t.observe()
	t.mu.Unlock()
	t.notify()
}

func (t *podTracker) notify() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// observe updates full and the maximum after a change; t.mu is held.
func (t *podTracker) observe() {
	a := t.countAvailable()
	switch {
	case a >= t.want && t.full.IsZero():
		t.full = time.Now()
	case a < t.want:
		t.full = time.Time{}
	}
	u := t.want - a
	if u > t.maxU {
		t.maxU, t.maxReasons = u, t.reasons()
	}
	if u > t.budget {
		t.over.count++
		if t.over.first == "" {
			t.over.first = fmt.Sprintf("%d unavailable at %s: %s; e.g. %s", u, time.Now().Format(time.RFC3339Nano), t.reasons(), t.examples(10))
		}
	}
}

// setAvailable records whether a pod is available; t.mu is held.
func (t *podTracker) setAvailable(name string, ok bool) {
	if t.avail[name] != ok {
		if ok {
			t.nAvail++
		} else {
			t.nAvail--
		}
	}
	t.avail[name] = ok
}

func (t *podTracker) countAvailable() int { return t.nAvail }

// reasons counts the unavailable instances by reason; t.mu is held.
func (t *podTracker) reasons() string {
	counts := map[string]float64{}
	for _, p := range t.pods {
		if r := unavailableReason(p); r != "" {
			counts[r]++
		}
	}
	if missing := t.want - len(t.pods); missing > 0 {
		counts[reasonMissing] = float64(missing)
	}
	return writeCounts(counts)
}

// examples lists up to max unavailable pods with their reason, sorted by name; t.mu is held.
func (t *podTracker) examples(limit int) string {
	var out []string
	for name, p := range t.pods {
		if r := unavailableReason(p); r != "" {
			out = append(out, name+"="+r)
		}
	}
	sort.Strings(out)
	if len(out) > limit {
		out = append(out[:limit], "…")
	}
	return strings.Join(out, " ")
}

func (t *podTracker) available() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.countAvailable()
}

func (t *podTracker) fullSince() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.full
}

// availableWithImage counts the pods instanceName(lo..hi-1) that are available with image.
func (t *podTracker) availableWithImage(lo, hi int, image string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for i := lo; i < hi; i++ {
		p := t.pods[instanceName(i)]
		if p != nil && t.avail[p.Name] && len(p.Spec.Containers) > 0 && p.Spec.Containers[0].Image == image {
			n++
		}
	}
	return n
}

// reportingImage counts the pods instanceName(lo..hi-1) whose status reports image for their first
// container.
func (t *podTracker) reportingImage(lo, hi int, image string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for i := lo; i < hi; i++ {
		p := t.pods[instanceName(i)]
		if p != nil && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].Image == image {
			n++
		}
	}
	return n
}

// resetMax starts a new observation window for maxUnavailable.
func (t *podTracker) resetMax() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.maxU, t.maxReasons, t.over = 0, "none", overBudget{}
	t.observe()
}

// maxUnavailable returns the largest number of unavailable instances since resetMax, the breakdown by
// reason at that moment and the states over the budget.
func (t *podTracker) maxUnavailable() (int, string, overBudget) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.maxU, t.maxReasons, t.over
}

// waitFor waits until done holds, checking after every pod change, and returns when it first held; it
// prints progress every 5 seconds.
func (t *podTracker) waitFor(ctx context.Context, logf func(string, ...any), what string, timeout time.Duration,
	done func(*podTracker) (bool, string)) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		ok, progress := done(t)
		if ok {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("waiting for %s: %s after %s: %w", what, progress, time.Since(start).Round(time.Second), ctx.Err())
		case <-tick.C:
			logf("%s: %s after %s", what, progress, time.Since(start).Round(time.Second))
		case <-t.changed:
		}
	}
}
