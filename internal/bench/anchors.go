package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
)

// rawWorkers is the number of parallel clients of the raw-write anchor.
const rawWorkers = 32

// Anchors are the scenarios every drover figure is compared with, measured in the same run.
func Anchors() []Scenario {
	return []Scenario{
		{Name: "raw-pod-writes", Description: "create N pods with parallel clients and no client-side limit", Run: rawPodWrites},
		{Name: "statefulset-pods", Description: "the stock StatefulSet controller creates N pods", Run: statefulSetPods},
	}
}

// unlimited returns a clientset without client-side rate limiting.
func unlimited(cfg *rest.Config) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(cfg)
	c.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return cs, nil
}

// benchNamespace creates a fresh namespace and returns its name and a cleanup that deletes it.
func benchNamespace(ctx context.Context, cs kubernetes.Interface, prefix string) (string, func(), error) {
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("creating namespace: %w", err)
	}
	cleanup := func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	}
	return ns.Name, cleanup, nil
}

// rawPodWrites measures the API server's write rate: N pod creates from parallel clients. The pods name a
// scheduler that does not exist, so nothing but the API server and etcd does any work for them.
func rawPodWrites(ctx context.Context, env Env) ([]Figure, error) {
	cs, err := unlimited(env.Config)
	if err != nil {
		return nil, err
	}
	ns, cleanup, err := benchNamespace(ctx, cs, "bench-raw")
	if err != nil {
		return nil, err
	}
	defer cleanup()

	var next, failures atomic.Int64
	var firstErr error
	var once sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	for range rawWorkers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(env.N) || ctx.Err() != nil {
					return
				}
				pod := benchPod(fmt.Sprintf("raw-%05d", i))
				pod.Spec.SchedulerName = "drover-bench-unscheduled"
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					failures.Add(1)
					once.Do(func() { firstErr = err })
				}
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	figs := []Figure{
		{Scenario: "raw-pod-writes", Metric: "seconds", Value: round(secs), Unit: "s", Note: fmt.Sprintf("%d pods, %d clients", env.N, rawWorkers)},
		{Scenario: "raw-pod-writes", Metric: "rate", Value: round(float64(env.N) / secs), Unit: "ops/s", Note: "creates per second"},
	}
	if failures.Load() > 0 {
		return figs, fmt.Errorf("%d creates failed, first: %w", failures.Load(), firstErr)
	}
	return figs, nil
}

// statefulSetPods measures the stock StatefulSet controller (Parallel pod management) creating N pods on the
// fake nodes: the time until all exist and until all are Running and Ready.
func statefulSetPods(ctx context.Context, env Env) ([]Figure, error) {
	cs, err := unlimited(env.Config)
	if err != nil {
		return nil, err
	}
	ns, cleanup, err := benchNamespace(ctx, cs, "bench-sts")
	if err != nil {
		return nil, err
	}
	defer cleanup()

	labels := map[string]string{"app": "bench-sts"}
	tmpl := benchPod("")
	tmpl.Labels = labels
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(int32(env.N)),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template:            corev1.PodTemplateSpec{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec},
		},
	}
	start := time.Now()
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating StatefulSet: %w", err)
	}
	var created time.Duration
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cs.AppsV1().StatefulSets(ns).Get(ctx, sts.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // transient read errors are retried until the timeout
		}
		if created == 0 && got.Status.Replicas >= int32(env.N) {
			created = time.Since(start)
			fmt.Fprintf(env.Log, "   %d pods created after %s\n", env.N, created.Round(time.Millisecond))
		}
		return got.Status.ReadyReplicas >= int32(env.N), nil
	})
	ready := time.Since(start)
	figs := []Figure{
		{Scenario: "statefulset-pods", Metric: "created", Value: round(created.Seconds()), Unit: "s", Note: fmt.Sprintf("%d pods exist", env.N)},
		{Scenario: "statefulset-pods", Metric: "ready", Value: round(ready.Seconds()), Unit: "s", Note: "all pods Running and Ready"},
	}
	if err != nil {
		return figs, fmt.Errorf("waiting for %d ready pods: %w", env.N, err)
	}
	return figs, nil
}

// benchPod is a minimal pod for the fake nodes.
func benchPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "app", Image: "registry.example/bench:1"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
}

func round(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
