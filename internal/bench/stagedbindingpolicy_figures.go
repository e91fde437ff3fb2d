package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/drover-dev/drover/internal/measure"
)

// reportFigures turns the promotion samples and the anchors into figures, with the manager's own timing of
// its promoting passes since the scrape before.
func (r *sbpRun) reportFigures(ctx context.Context, before []measure.Sample) {
	if len(r.samples) == 0 {
		r.logf("no promotion was measured")
		return
	}
	defer r.passFigures(ctx, before)
	totals := sbpDurations(r.samples, func(s sbpSample) time.Duration { return s.total })
	p50, p95, highest := sbpStats(totals)
	n := fmt.Sprintf("%d promotions (s1→s2 and s2→s3 of %d runs)", len(totals), len(totals)/2)
	r.figure("promotion_p50", ms(p50), "ms", "t0 (watch event of the satisfying CombinedStatus) → t1 (later of the activeStage and the BindingPolicy-created events), "+n)
	r.figure("promotion_p95", ms(p95), "ms", fmt.Sprintf("target ≤ %d ms; %d of %d over it", sbpTargetMs, sbpCountOver(totals, sbpTargetMs*time.Millisecond), len(totals)))
	r.figure("promotion_max", ms(highest), "ms", n)
	for st := range len(sbpStages) - 1 {
		from, to := sbpStages[st], sbpStages[st+1]
		var ds []time.Duration
		for _, s := range r.samples {
			if s.from == from {
				ds = append(ds, s.total)
			}
		}
		sp50, sp95, _ := sbpStats(ds)
		r.figure(fmt.Sprintf("promotion_%s_%s_p95", from, to), ms(sp95), "ms",
			fmt.Sprintf("%d samples, p50 %s; %d destinations before, %d after", len(ds), sbpMs(sp50), r.tiers.size(st), r.tiers.size(st+1)))
	}
	active, _, _ := sbpStats(sbpDurations(r.samples, func(s sbpSample) time.Duration { return s.active }))
	created, _, _ := sbpStats(sbpDurations(r.samples, func(s sbpSample) time.Duration { return s.created }))
	r.figure("promotion_status_p50", ms(active), "ms", "t0 → the watch event of status.activeStage on the next stage (the committed transition)")
	r.figure("promotion_create_p50", ms(created), "ms", "t0 → the watch event creating the next stage's BindingPolicy (written after the commit)")
	a50, a95, _ := sbpStats(r.anchors)
	an := fmt.Sprintf("raw client: update of a %d-byte ConfigMap → its watch event, %d samples, one before each promotion", len(r.payload), len(r.anchors))
	r.figure("anchor_p50", ms(a50), "ms", an)
	r.figure("anchor_p95", ms(a95), "ms", an)
	r.figure("ratio_p50", sbpRatio(p50, a50), "x", "promotion p50 / anchor p50 (a promotion is at least two writes: status, then BindingPolicy)")
	r.figure("ratio_p95", sbpRatio(p95, a95), "x", "promotion p95 / anchor p95")
}

// passFigures reports drover_sbp_promotion_latency_seconds: from the start of a promoting pass to its
// committed status write, as the manager times it.
func (r *sbpRun) passFigures(ctx context.Context, before []measure.Sample) {
	after, err := r.mm.Scrape(ctx)
	if err != nil {
		r.logf("reading the manager's metrics: %v", err)
		return
	}
	sum, count, p95 := histogramDelta(before, after, "drover_sbp_promotion_latency_seconds", nil, 0.95)
	if count <= 0 {
		return
	}
	note := fmt.Sprintf("drover_sbp_promotion_latency_seconds (start of the promoting pass → status committed), %.0f promotions", count)
	r.figure("promoting_pass_mean", 1000*sum/count, "ms", note)
	r.figure("promoting_pass_p95", sbpBucketMs(p95), "ms", "bound of the smallest bucket of that histogram holding 95 % of them")
}

// cpuFigures reports the CPU window.
func (r *sbpRun) cpuFigures(c sbpCPU) {
	what := fmt.Sprintf("%d CombinedStatuses changed (s3 waiting, %d destinations), %.0f passes in %s", c.changed,
		r.tiers.size(len(sbpStages)-1), c.passes, c.window.Round(time.Millisecond))
	r.logf("CPU window: %s, manager CPU %.0f ms, reconcile time sum %.0f ms, errors %.0f, status writes %d, BindingPolicy writes %d",
		what, 1000*c.cpu, 1000*c.timeSum, c.errs, c.statusWrites, c.bpWrites)
	if c.passes <= 0 {
		r.problem("the controller ran no pass while %d CombinedStatuses changed", c.changed)
		return
	}
	r.figure("cpu_per_pass", 1000*c.cpu/c.passes, "ms", fmt.Sprintf(
		"manager process_cpu_seconds_total / passes, target < %d ms; includes decoding the updates and the other controllers (idle); %s", sbpTargetCPUMs, what))
	r.figure("passes_per_change_burst", c.passes, "passes", fmt.Sprintf("controller_runtime_reconcile_total for %d CombinedStatus updates (they coalesce in the workqueue)", c.changed))
	r.figure("reconcile_mean", 1000*c.timeSum/c.passes, "ms", "controller_runtime_reconcile_time_seconds: sum / count over the window")
	r.figure("reconcile_p95", sbpBucketMs(c.p95), "ms", "bound of the smallest histogram bucket holding 95 % of the window's passes")
	r.figure("writes_during_burst", float64(c.statusWrites+c.bpWrites), "writes",
		"policy and BindingPolicy updates seen by the watch while the values changed (the gate outcome did not): want 0")
}

// quietFigures reports the zero-writes window.
func (r *sbpRun) quietFigures(q sbpQuiet) {
	w := fmt.Sprintf("%s with s3 waiting on AwaitingStatus and nothing changing", q.window.Round(time.Millisecond))
	r.logf("quiet window: %s: policy resourceVersion unchanged %v, BindingPolicy resourceVersions unchanged %v, %d status and %d BindingPolicy update events, %.0f passes",
		w, q.sbpRV, q.bpRVs, q.statusWrites, q.bpWrites, q.passes)
	r.figure("waiting_policy_writes", float64(q.statusWrites)+sbpBool(!q.sbpRV && q.statusWrites == 0), "writes", "target 0: "+w)
	r.figure("waiting_bindingpolicy_writes", float64(q.bpWrites)+sbpBool(!q.bpRVs && q.bpWrites == 0), "writes", "target 0: resourceVersions compared before and after, and update events")
	r.figure("waiting_passes", q.passes, "passes", "target 0: controller_runtime_reconcile_total{controller=\"stagedbindingpolicy\"} (no periodic requeue)")
}

func sbpDurations(samples []sbpSample, pick func(sbpSample) time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		out = append(out, pick(s))
	}
	return out
}

// sbpStats are the nearest-rank p50 and p95 and the maximum of ds (zeros when empty).
func sbpStats(ds []time.Duration) (p50, p95, highest time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return measure.Percentile(sorted, 50), measure.Percentile(sorted, 95), sorted[len(sorted)-1]
}

// sbpCountOver counts the durations above limit.
func sbpCountOver(ds []time.Duration, limit time.Duration) int {
	n := 0
	for _, d := range ds {
		if d > limit {
			n++
		}
	}
	return n
}

// sbpRatio is a/b, 0 when b is not positive.
func sbpRatio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// sbpBucketMs is a histogram bucket bound in ms; the open last bucket reads as -1.
func sbpBucketMs(seconds float64) float64 {
	if math.IsInf(seconds, 1) {
		return -1
	}
	return 1000 * seconds
}

func sbpBool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sbpMs(d time.Duration) string { return fmt.Sprintf("%.1f ms", ms(d)) }
