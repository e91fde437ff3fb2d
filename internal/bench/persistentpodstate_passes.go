package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/measure"
	"github.com/drover-dev/drover/internal/persistentpodstate/core"
)

// The PersistentPodState scenario's steps on a recorded StatefulSet: no-op passes, the rolling update by
// hand and the stored size.

const (
	ppsPassesMetric  = "controller_runtime_reconcile_total"
	ppsTimeMetric    = "controller_runtime_reconcile_time_seconds"
	ppsWritesMetric  = "drover_persistentpodstate_status_writes_total"
	ppsAdmitMetric   = "drover_persistentpodstate_pod_admissions_total"
	ppsListSamples   = 5
	ppsQuiet         = 3 * time.Second
	etcdObjectLimit  = 1_572_864
	ppsNoopTargetMs  = 100
	ppsCountedPPSRes = "persistentpodstates"
)

var ppsCtrl = map[string]string{"controller": ppsControllerName}

// noop measures passes that have nothing to do. Each nudge sets one pod's Ready condition False; kwok sets
// it back to True at once (as a kubelet would for a pod whose containers are ready), and a pod becoming
// Ready makes the controller run a full pass over every pod of the StatefulSet. The pod stays on its node,
// so the pass must change and write nothing. One nudge at a time: the next starts once its pass is over.
func (r *ppsRun) noop(ctx context.Context) error {
	if err := r.settle(ctx); err != nil {
		return err
	}
	lists, err := r.listAnchor(ctx)
	if err != nil {
		return err
	}
	before, err := r.mm.Scrape(ctx)
	if err != nil {
		return err
	}
	pps0, err := r.getPPS(ctx)
	if err != nil {
		return err
	}
	writes0, err := apiserverWriteCounts(ctx, r.cs, []string{ppsCountedPPSRes})
	if err != nil {
		return err
	}
	for k := range ppsNudges {
		if err := r.nudge(ctx, ppsPodName(k*r.n/ppsNudges)); err != nil {
			return err
		}
	}
	after, err := r.mm.Scrape(ctx)
	if err != nil {
		return err
	}
	pps1, err := r.getPPS(ctx)
	if err != nil {
		return err
	}
	writes1, err := apiserverWriteCounts(ctx, r.cs, []string{ppsCountedPPSRes})
	if err != nil {
		return err
	}
	r.noopFigures(before, after, lists, [2]string{pps0.ResourceVersion, pps1.ResourceVersion}, subtractCounts(writes1, writes0))
	return nil
}

// nudge sets pod name's Ready condition False and waits until kwok has set it back, the pass it caused is
// over and the controller is idle.
func (r *ppsRun) nudge(ctx context.Context, name string) error {
	before, err := r.mm.Scrape(ctx)
	if err != nil {
		return err
	}
	body := fmt.Appendf(nil, `{"status":{"conditions":[{"type":%q,"status":"False"}]}}`, corev1.PodReady)
	if _, err := r.cs.CoreV1().Pods(ppsNamespace).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("setting pod %s not Ready: %w", name, err)
	}
	return r.waitPasses(ctx, before, 1, func() bool { _, ok := podState(r.tr, name); return ok })
}

// waitPasses waits until the controller has run at least want passes since before, is idle (no request
// queued, no worker busy) and ready holds.
func (r *ppsRun) waitPasses(ctx context.Context, before []measure.Sample, want float64, ready func() bool) error {
	var passes float64
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err := r.mm.Scrape(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		passes = sampleDelta(before, m, ppsPassesMetric, ppsCtrl)
		return passes >= want && ppsIdle(m) && ready(), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %.0f passes of the PPS controller (%.0f seen): %w", want, passes, err)
	}
	return nil
}

// ppsIdle reports whether the PPS controller has nothing queued and no worker busy.
func ppsIdle(m []measure.Sample) bool {
	return measure.Sum(m, "controller_runtime_active_workers", ppsCtrl)+
		measure.Sum(m, "workqueue_depth", map[string]string{"name": ppsControllerName}) == 0
}

// settle waits until the PPS controller is idle and its passes and status writes have not moved for
// ppsQuiet.
func (r *ppsRun) settle(ctx context.Context) error {
	start := time.Now()
	var last [2]float64
	var since time.Time
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err := r.mm.Scrape(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		cur := [2]float64{measure.Sum(m, ppsPassesMetric, ppsCtrl), measure.Sum(m, ppsWritesMetric, nil)}
		if cur != last || !ppsIdle(m) || since.IsZero() {
			last, since = cur, time.Now()
			return false, nil
		}
		return time.Since(since) >= ppsQuiet, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the PPS controller to come to rest: %w", err)
	}
	r.logf("PPS controller at rest after %s", time.Since(start).Round(time.Millisecond))
	return nil
}

// listAnchor times LISTs of the namespace's pods from the API server (what a pass reads from the cache)
// and returns them sorted.
func (r *ppsRun) listAnchor(ctx context.Context) ([]time.Duration, error) {
	var lists []time.Duration
	for range ppsListSamples {
		start := time.Now()
		list, err := r.cs.CoreV1().Pods(ppsNamespace).List(ctx, metav1.ListOptions{})
		took := time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("listing the pods: %w", err)
		}
		if len(list.Items) != r.n {
			return nil, fmt.Errorf("listing the pods: %d, want %d", len(list.Items), r.n)
		}
		lists = append(lists, took)
	}
	slices.Sort(lists)
	return lists, nil
}

func (r *ppsRun) noopFigures(before, after []measure.Sample, lists []time.Duration, rv [2]string, apiWrites map[string]float64) {
	sum, count, bound := histogramDelta(before, after, ppsTimeMetric, ppsCtrl, 1)
	passes := sampleDelta(before, after, ppsPassesMetric, ppsCtrl)
	writes := sampleDelta(before, after, ppsWritesMetric, nil)
	mean := 0.0
	if count > 0 {
		mean = 1000 * sum / count
	}
	verdict := "met"
	if mean >= ppsNoopTargetMs || count == 0 {
		verdict = "MISSED"
		r.logf("TARGET MISSED: a no-op pass takes %.2f ms on average (target < %d ms)", mean, ppsNoopTargetMs)
	}
	r.figure("noop_reconcile_ms", mean, "ms", fmt.Sprintf(
		"mean of %s over %.0f passes over %d pods, each caused by one pod turning Ready again (target < %d ms: %s)",
		ppsTimeMetric, count, r.n, ppsNoopTargetMs, verdict))
	within := sampleDelta(before, after, ppsTimeMetric+"_bucket", map[string]string{"controller": ppsControllerName, "le": "0.1"})
	r.figure("noop_reconcile_max_ms", 1000*bound, "ms", fmt.Sprintf(
		"bound of the smallest histogram bucket that holds every one of those passes; %.0f of the %.0f took at most %d ms", within, count, ppsNoopTargetMs))
	r.figure("noop_passes", passes, "passes", fmt.Sprintf("%s{controller=%q} over %d nudges (want %d)", ppsPassesMetric, ppsControllerName, ppsNudges, ppsNudges))
	listMs := ms(lists[len(lists)/2])
	r.figure("pod_list_ms", listMs, "ms", fmt.Sprintf(
		"anchor: LIST of the namespace's %d pods from the API server by the raw clientset, median of %d (fastest %.2f ms, slowest %.2f ms); a pass reads the same pods from the manager's cache",
		r.n, len(lists), ms(lists[0]), ms(lists[len(lists)-1])))
	if listMs > 0 {
		r.figure("noop_reconcile_ratio", mean/listMs, "×", "no-op pass / LIST of the pods")
	}
	r.figure("noop_writes", writes, "writes", fmt.Sprintf(
		"%s over the no-op passes (target 0); PPS resourceVersion %s → %s; kube-apiserver writes on %s: %s",
		ppsWritesMetric, rv[0], rv[1], ppsCountedPPSRes, writeCounts(apiWrites)))
	if writes != 0 || rv[0] != rv[1] || passes < ppsNudges {
		r.problem("no-op passes: %.0f status writes, resourceVersion %s → %s, %.0f passes for %d nudges (want 0 writes, no change, %d passes)",
			writes, rv[0], rv[1], passes, ppsNudges, ppsNudges)
	}
}

// rolling replaces the highest ppsRolling pods one at a time, as a StatefulSet rolling update does: delete
// the pod, wait until it is gone, create it again on its recorded node, wait until it is Ready. The records
// do not change, so the passes this causes should write nothing.
func (r *ppsRun) rolling(ctx context.Context) error {
	pps, err := r.getPPS(ctx)
	if err != nil {
		return err
	}
	if err := r.settle(ctx); err != nil {
		return err
	}
	before, err := r.mm.Scrape(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	for k := range ppsRolling {
		i := r.n - 1 - k
		node := pps.Status.PodStates[ppsPodName(i)].NodeName
		if node == "" {
			return fmt.Errorf("pod %s has no recorded node", ppsPodName(i))
		}
		if err := r.replacePod(ctx, i, node); err != nil {
			return err
		}
	}
	took := time.Since(start)
	if err := r.settle(ctx); err != nil {
		return err
	}
	after, err := r.mm.Scrape(ctx)
	if err != nil {
		return err
	}
	passes := sampleDelta(before, after, ppsPassesMetric, ppsCtrl)
	writes := sampleDelta(before, after, ppsWritesMetric, nil)
	steered := sampleDelta(before, after, ppsAdmitMetric, map[string]string{"result": "injected"})
	perPass := 0.0
	if passes > 0 {
		perPass = writes / passes
	}
	r.figure("rolling_writes_per_pass", perPass, "writes", fmt.Sprintf(
		"%d pods replaced one at a time on their recorded node in %.1f s: %.0f status writes over %.0f passes; %.0f creates steered (want %d)",
		ppsRolling, took.Seconds(), writes, passes, steered, ppsRolling))
	if steered != ppsRolling {
		r.problem("rolling update: %.0f of %d recreated pods were steered", steered, ppsRolling)
	}
	return nil
}

// replacePod deletes pod i, waits until it is gone, creates it again on node and waits until it is Ready.
func (r *ppsRun) replacePod(ctx context.Context, i int, node string) error {
	name := ppsPodName(i)
	if err := r.deletePod(ctx, name); err != nil {
		return fmt.Errorf("deleting pod %s: %w", name, err)
	}
	if _, err := r.tr.waitFor(ctx, r.logf, name+" gone", time.Minute, func(t *podTracker) (bool, string) {
		present, _ := podState(t, name)
		return !present, "present"
	}); err != nil {
		return err
	}
	if _, err := r.cs.CoreV1().Pods(ppsNamespace).Create(ctx, ppsPod(r.uid, i, node), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pod %s: %w", name, err)
	}
	_, err := r.tr.waitFor(ctx, r.logf, name+" Ready", time.Minute, func(t *podTracker) (bool, string) {
		_, ready := podState(t, name)
		return ready, "not Ready"
	})
	return err
}

// size compares the PPS's stored size with the controller's estimate and etcd's limit. The stored size is
// the length of the object's JSON as the API server returns it, metadata.managedFields included: a custom
// resource is stored as that JSON.
func (r *ppsRun) size(ctx context.Context) error {
	path := fmt.Sprintf("/apis/%s/namespaces/%s/persistentpodstates/%s", kruisev1beta1.GroupVersion, ppsNamespace, ppsName)
	body, err := r.cs.Discovery().RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("reading PersistentPodState %s: %w", ppsName, err)
	}
	var pps kruisev1beta1.PersistentPodState
	if err := json.Unmarshal(body, &pps); err != nil {
		return fmt.Errorf("decoding PersistentPodState %s: %w", ppsName, err)
	}
	stored, estimate := len(body), core.Estimate(&pps, pps.Status.PodStates)
	what := fmt.Sprintf("%d records, %d managedFields entries", len(pps.Status.PodStates), len(pps.ManagedFields))
	r.figure("stored_bytes", float64(stored), "bytes", "JSON of the PPS from the API server, managedFields included: "+what)
	r.figure("estimate_bytes", float64(estimate), "bytes", fmt.Sprintf("core.Estimate of the same object (the size guard's limit: %d)", core.DefaultSizeLimit))
	r.figure("estimate_minus_stored", float64(estimate-stored), "bytes", "must be ≥ 0: the estimate may not be below the stored size")
	r.figure("etcd_margin_bytes", float64(etcdObjectLimit-stored), "bytes", fmt.Sprintf("etcd's default object limit (%d) − stored", etcdObjectLimit))
	if estimate < stored {
		r.problem("THE SIZE ESTIMATE IS TOO LOW: %d bytes estimated, %d stored (%s)", estimate, stored, what)
	}
	return nil
}

// ---- helpers ----

// paced calls do(ctx, 0..n-1), starting at most rate calls a second with at most inflight of them running.
// It returns the number of failures with the first error.
func paced(ctx context.Context, n, rate, inflight int, do func(ctx context.Context, i int) error) error {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	sem := make(chan struct{}, inflight)
	var failures atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case <-ctx.Done():
			continue
		case <-tick.C:
		}
		select {
		case <-ctx.Done():
			continue
		case sem <- struct{}{}:
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := do(ctx, i); err != nil {
				failures.Add(1)
				once.Do(func() { firstErr = err })
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if failures.Load() > 0 {
		return fmt.Errorf("%d of %d requests failed, first: %w", failures.Load(), n, firstErr)
	}
	return nil
}

// sampleDelta is how much the samples name with labels match grew between two scrapes.
func sampleDelta(before, after []measure.Sample, name string, match map[string]string) float64 {
	return measure.Sum(after, name, match) - measure.Sum(before, name, match)
}

// histogramDelta returns what the histogram name (series name_sum, name_count and name_bucket, with labels
// match) observed between two scrapes: the sum, the count, and the smallest bucket bound that holds the
// fraction q of the observations (q 1: every one; +Inf when only the last bucket does, 0 when nothing was
// observed).
func histogramDelta(before, after []measure.Sample, name string, match map[string]string, q float64) (sum, count, bound float64) {
	sum = sampleDelta(before, after, name+"_sum", match)
	count = sampleDelta(before, after, name+"_count", match)
	if count <= 0 {
		return sum, count, 0
	}
	bound = math.Inf(1)
	withLE := make(map[string]string, len(match)+1)
	for k, v := range match {
		withLE[k] = v
	}
	for _, s := range after {
		le, err := strconv.ParseFloat(s.Labels["le"], 64)
		if s.Name != name+"_bucket" || err != nil || le >= bound {
			continue
		}
		withLE["le"] = s.Labels["le"]
		if sampleDelta(before, after, name+"_bucket", withLE) >= q*count {
			bound = le
		}
	}
	return sum, count, bound
}

// podsPresent is the number of pods the tracker sees, terminating ones included.
func podsPresent(t *podTracker) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pods)
}

// podState reports whether the tracker sees pod name and whether it is available (Running and Ready).
func podState(t *podTracker, name string) (present, available bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, present = t.pods[name]
	return present, t.avail[name]
}
