package bench

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/measure"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
)

// sbpSample is one measured promotion: from the satisfying CombinedStatus event (t0) to the status event
// (active) and the BindingPolicy creation event (created); total is the later of the two.
type sbpSample struct {
	run                    int
	from, to               string
	total, active, created time.Duration
}

// runOnce is one run: a new policy, promoted s1→s2 and s2→s3, then deleted. The first run also measures
// the CPU per pass and the writes while waiting, with s3 waiting.
func (r *sbpRun) runOnce(ctx context.Context, run int) (err error) {
	name := fmt.Sprintf("bench-sbp-%02d", run+1)
	r.value = 1
	if err := r.sim.ReplaceScript(sbpScript(r.cfg.objects, r.value, r.holding(0))); err != nil {
		return fmt.Errorf("scripting kssim: %w", err)
	}
	start := time.Now()
	if err := r.c.Create(ctx, sbpPolicy(name, sbpNamespace)); err != nil {
		return fmt.Errorf("creating StagedBindingPolicy %s: %w", name, err)
	}
	defer func() {
		if derr := r.deletePolicy(ctx, name); derr != nil && err == nil {
			err = derr
		}
	}()
	if err := r.waitWaiting(ctx, name, 0); err != nil {
		return err
	}
	r.logf("run %d: %s waits at s1 (%d objects, %d destinations) after %s", run+1, name, r.cfg.objects,
		r.tiers.size(0), time.Since(start).Round(time.Millisecond))
	for st := range len(sbpStages) - 1 {
		if err := r.anchor(ctx, stager.BindingPolicyName(name, sbpStages[st])); err != nil {
			return err
		}
		s, err := r.promote(ctx, name, st)
		if err != nil {
			return err
		}
		s.run = run + 1
		r.samples = append(r.samples, s)
		r.logf("run %d: %s→%s in %s (status %s, BindingPolicy %s after t0); anchor %s", run+1, s.from, s.to,
			sbpMs(s.total), sbpMs(s.active), sbpMs(s.created), sbpMs(r.anchors[len(r.anchors)-1]))
		start = time.Now()
		if err := r.waitWaiting(ctx, name, st+1); err != nil {
			return err
		}
		r.logf("run %d: waits at %s (%d destinations) %s after the promotion", run+1, sbpStages[st+1],
			r.tiers.size(st+1), time.Since(start).Round(time.Millisecond))
	}
	if run > 0 {
		return nil
	}
	if err := r.cpuWindow(ctx, name, len(sbpStages)-1); err != nil {
		return err
	}
	return r.quietWindow(ctx, name)
}

// waitWaiting waits until the policy waits at stage st with everything in place and quiet.
func (r *sbpRun) waitWaiting(ctx context.Context, name string, st int) error {
	bp := stager.BindingPolicyName(name, sbpStages[st])
	var why string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, sbpWait, true, func(context.Context) (bool, error) {
		why = r.w.waiting(name, sbpStages[st], bp, r.cfg.objects, sbpSettle)
		return why == "", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to wait at %s: %s: %w", name, sbpStages[st], why, err)
	}
	return nil
}

// promote scripts the held cluster of stage st to report the held object, and measures the promotion to
// the next stage from the watch events.
func (r *sbpRun) promote(ctx context.Context, name string, st int) (sbpSample, error) {
	s := sbpSample{from: sbpStages[st], to: sbpStages[st+1]}
	from, to := stager.BindingPolicyName(name, s.from), stager.BindingPolicyName(name, s.to)
	trigger := time.Now()
	if err := r.sim.ReplaceScript(sbpScript(r.cfg.objects, r.value, r.holding(st+1))); err != nil {
		return s, fmt.Errorf("scripting kssim: %w", err)
	}
	var t0, active, created time.Time
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, sbpPromoteWait, true, func(context.Context) (bool, error) {
		var ok bool
		t0, ok = r.w.satisfiedAt(from, r.tiers.size(st))
		active, created = r.w.promotedAt(name, s.to, to)
		return ok && !active.IsZero() && !created.IsZero(), nil
	})
	if err != nil {
		return s, fmt.Errorf("waiting for the promotion %s→%s of %s (t0 seen: %v, status seen: %v, %s seen: %v): %w",
			s.from, s.to, name, !t0.IsZero(), !active.IsZero(), to, !created.IsZero(), err)
	}
	s.active, s.created = active.Sub(t0), created.Sub(t0)
	s.total = max(s.active, s.created)
	if t0.Before(trigger) || s.active < 0 || s.created < 0 {
		r.problem("%s %s→%s: events out of order: t0 %s after the script call, status %s and BindingPolicy %s after t0",
			name, s.from, s.to, t0.Sub(trigger), s.active, s.created)
	}
	return s, nil
}

// deletePolicy deletes the policy and its BindingPolicies (not waiting for the garbage collector) and waits
// until the watch sees none of them nor any of their CombinedStatuses.
func (r *sbpRun) deletePolicy(ctx context.Context, name string) error {
	ctx = context.WithoutCancel(ctx)
	sbp := &communityv1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.c.Delete(ctx, sbp, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting StagedBindingPolicy %s: %w", name, err)
	}
	err := r.c.DeleteAllOf(ctx, &controlv1alpha1.BindingPolicy{}, client.MatchingLabels{communityv1alpha1.LabelStagedBindingPolicy: name})
	if err != nil {
		return fmt.Errorf("deleting the BindingPolicies of %s: %w", name, err)
	}
	var why string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		why = r.w.gone(name)
		return why == "", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s and its objects to go: %s is still there: %w", name, why, err)
	}
	return nil
}

// ---- anchor ----

// createAnchor creates the anchor ConfigMap, its filler as large as a CombinedStatus of the scenario (one
// row of two numbers, the labels and the owner reference: about 1 KiB).
func (r *sbpRun) createAnchor(ctx context.Context) error {
	r.payload = strings.Repeat("x", 1024)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: sbpAnchorName, Namespace: sbpNamespace, Labels: map[string]string{sbpAnchorLabel: "true"}},
		Data:       map[string]string{"seq": "0", "payload": r.payload},
	}
	if err := r.c.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating the anchor ConfigMap: %w", err)
	}
	return nil
}

// anchor measures one raw write-to-watch-event latency: an update of the anchor ConfigMap, from the call
// to this process's watch event of it. The filler is resized to the largest CombinedStatus of bp.
func (r *sbpRun) anchor(ctx context.Context, bp string) error {
	r.anchorSeq++
	seq := strconv.Itoa(r.anchorSeq)
	if n := r.w.csBytes(bp); n > 0 {
		r.payload = strings.Repeat("x", n)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: sbpAnchorName, Namespace: sbpNamespace, Labels: map[string]string{sbpAnchorLabel: "true"}},
		Data:       map[string]string{"seq": seq, "payload": r.payload},
	}
	start := time.Now()
	if err := r.c.Update(ctx, cm); err != nil {
		return fmt.Errorf("updating the anchor ConfigMap: %w", err)
	}
	var seen time.Time
	err := wait.PollUntilContextTimeout(ctx, time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var ok bool
		seen, ok = r.w.anchorSeen(seq)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the anchor's watch event: %w", err)
	}
	r.anchors = append(r.anchors, seen.Sub(start))
	return nil
}

// ---- CPU per pass and writes while waiting ----

// sbpCPU is what the CPU window measured.
type sbpCPU struct {
	changed                         int // CombinedStatuses that changed
	passes, errs, cpu, timeSum, p95 float64
	statusWrites, bpWrites          int
	window                          time.Duration
}

// cpuWindow scripts every object with a new value that keeps stage st's condition false, waits until all
// its CombinedStatuses show it and the controller is at rest, and reads the manager's CPU and passes.
func (r *sbpRun) cpuWindow(ctx context.Context, name string, st int) error {
	bp := stager.BindingPolicyName(name, sbpStages[st])
	before, err := r.mm.Scrape(ctx)
	if err != nil {
		return err
	}
	sbpW, bpW := r.w.writes(name)
	start := time.Now()
	r.value++
	if err := r.sim.ReplaceScript(sbpScript(r.cfg.objects, r.value, r.holding(st))); err != nil {
		return fmt.Errorf("scripting kssim: %w", err)
	}
	v := float64(r.value)
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, sbpWait, true, func(context.Context) (bool, error) {
		return r.w.countCSWith(bp, func(cs sbpCSSeen) bool { return cs.ok && cs.available == v*cs.count }) == r.cfg.objects, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the %d CombinedStatuses of %s to change: %w", r.cfg.objects, bp, err)
	}
	after, err := r.settledMetrics(ctx)
	if err != nil {
		return err
	}
	c := sbpCPU{changed: r.cfg.objects, window: time.Since(start)}
	match := map[string]string{"controller": sbpController}
	c.passes = sampleDelta(before, after, "controller_runtime_reconcile_total", match)
	c.errs = sampleDelta(before, after, "controller_runtime_reconcile_errors_total", match)
	c.cpu = sampleDelta(before, after, "process_cpu_seconds_total", nil)
	c.timeSum, _, c.p95 = histogramDelta(before, after, "controller_runtime_reconcile_time_seconds", match, 0.95)
	sbpW2, bpW2 := r.w.writes(name)
	c.statusWrites, c.bpWrites = sbpW2-sbpW, bpW2-bpW
	r.cpuFigures(c)
	return nil
}

// settledMetrics scrapes the manager until the controller's reconcile count has not moved for 2 s (at
// most 2 minutes) and returns the last scrape.
func (r *sbpRun) settledMetrics(ctx context.Context) ([]measure.Sample, error) {
	var last []measure.Sample
	var lastCount float64 = -1
	changed := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err := r.mm.Scrape(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		last = m
		n := measure.Sum(m, "controller_runtime_reconcile_total", map[string]string{"controller": sbpController})
		if n != lastCount {
			lastCount, changed = n, time.Now()
			return false, nil
		}
		return time.Since(changed) >= 2*time.Second, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the controller to come to rest: %w", err)
	}
	return last, nil
}

// sbpQuiet is what the zero-writes window measured.
type sbpQuiet struct {
	window                 time.Duration
	sbpRV, bpRVs           bool // unchanged
	statusWrites, bpWrites int  // update events seen
	passes                 float64
}

// quietWindow watches a waiting policy for sbpQuietWindow with nothing changing: no write of it or of its
// BindingPolicies, no pass.
func (r *sbpRun) quietWindow(ctx context.Context, name string) error {
	snapshot := func() (string, map[string]string, float64, error) {
		sbp := &communityv1alpha1.StagedBindingPolicy{}
		if err := r.c.Get(ctx, client.ObjectKey{Name: name}, sbp); err != nil {
			return "", nil, 0, fmt.Errorf("reading %s: %w", name, err)
		}
		var bps controlv1alpha1.BindingPolicyList
		if err := r.c.List(ctx, &bps, client.MatchingLabels{communityv1alpha1.LabelStagedBindingPolicy: name}); err != nil {
			return "", nil, 0, fmt.Errorf("listing the BindingPolicies of %s: %w", name, err)
		}
		rvs := map[string]string{}
		for _, bp := range bps.Items {
			rvs[bp.Name] = bp.ResourceVersion
		}
		m, err := r.mm.Scrape(ctx)
		if err != nil {
			return "", nil, 0, err
		}
		return sbp.ResourceVersion, rvs, measure.Sum(m, "controller_runtime_reconcile_total", map[string]string{"controller": sbpController}), nil
	}
	rv0, bps0, n0, err := snapshot()
	if err != nil {
		return err
	}
	sbpW, bpW := r.w.writes(name)
	start := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(sbpQuietWindow):
	}
	rv1, bps1, n1, err := snapshot()
	if err != nil {
		return err
	}
	sbpW2, bpW2 := r.w.writes(name)
	q := sbpQuiet{window: time.Since(start), sbpRV: rv0 == rv1, bpRVs: maps.Equal(bps0, bps1),
		statusWrites: sbpW2 - sbpW, bpWrites: bpW2 - bpW, passes: n1 - n0}
	r.quietFigures(q)
	return nil
}
