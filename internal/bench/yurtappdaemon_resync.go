package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/measure"
)

// The no-op resync step.
//
// Trigger: one label is added to one selected NodePool. Every owner selects the pool before and after, so the
// NodePool handler enqueues all O owners (label changes of a pool reach the owners whose selector matches
// its old or new labels) and each runs a full pass over every pool and child that must find nothing to do. The
// owners themselves are not touched: a metadata-only change of an owner does not enqueue it, so that
// would measure nothing.
//
// Count: the kube-apiserver's apiserver_request_total, read from its /metrics before and after, for the
// mutating verbs on the resources drover writes or whose writes it would cause (deployments, statefulsets,
// controllerrevisions, yurtappdaemons, uniteddaemonsets, nodepools, with their subresources), dry runs
// excluded. The trigger's own PATCH of the NodePool is subtracted, and so are deployments/status and
// statefulsets/status, which only kube-controller-manager writes (drover never does); the note shows every
// write seen. Before the count starts, the step waits until those counters have been still for a few seconds, so
// that kube-controller-manager's work on the fan-out is over (children whose status still changes would rightly
// make the owners write their status).
//
// End of the window: with the manager's metrics (WithManagerMetrics), when controller_runtime_reconcile_total
// of the yurtappdaemon controller has grown by at least O and its queue is empty and no worker is busy;
// without them, after a fixed 15 s.

var (
	countedResource = []string{"deployments", "statefulsets", "controllerrevisions", "yurtappdaemons", "uniteddaemonsets", "nodepools"}
	// notDroverWrites are counted but written only by kube-controller-manager.
	notDroverWrites = []string{"PUT deployments/status", "PUT statefulsets/status", "PATCH deployments/status", "PATCH statefulsets/status"}
)

const (
	quietPeriod    = 4 * time.Second
	fixedNoopWait  = 15 * time.Second
	ownTouchWrite  = "PATCH nodepools"
	resyncDeadline = 2 * time.Minute
)

// settle waits until kube-controller-manager and the owners have finished with the children created so far,
// then reports the writes each child creation cost.
func (r *yadRun) settle(ctx context.Context) error {
	// kube-controller-manager writes the status of every child about three times, limited by its client (20
	// requests per second by default; drover-bench raises it, the deadline allows for the default).
	deadline := 5*time.Minute + time.Duration(r.children())*200*time.Millisecond
	if err := r.quiesce(ctx, quietPeriod, deadline, true); err != nil {
		r.logf("the counted API writes did not come to rest (%v); measuring anyway", err)
	}
	now, err := r.apiserverWrites(ctx)
	if err != nil {
		return err
	}
	return r.creationWrites(ctx, now)
}

func (r *yadRun) noopResync(ctx context.Context) error {
	mm := r.mm
	if err := r.quiesce(ctx, quietPeriod, 2*time.Minute, false); err != nil {
		r.logf("the counted API writes did not come to rest (%v); measuring anyway", err)
	}
	before, err := r.apiserverWrites(ctx)
	if err != nil {
		return err
	}
	var reconcilesBefore, droverWritesBefore float64
	if mm != nil {
		m, err := mm.Scrape(ctx)
		if err != nil {
			return err
		}
		reconcilesBefore = measure.Sum(m, "controller_runtime_reconcile_total", map[string]string{"controller": yadControllerName})
		droverWritesBefore = measure.Sum(m, "drover_yurtappdaemon_workload_writes_total", nil)
	}

	start := time.Now()
	touch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, yadTouchLabel, r.id)
	pool := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: r.pools[0]}}
	if err := r.c.Patch(ctx, pool, client.RawPatch(types.MergePatchType, touch)); err != nil {
		return fmt.Errorf("touching NodePool %s: %w", pool.Name, err)
	}
	window := ""
	if mm != nil {
		window = r.waitReconciles(ctx, mm, reconcilesBefore, droverWritesBefore, start)
	} else {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(fixedNoopWait):
		}
		window = fmt.Sprintf("fixed %s window (no manager metrics, so the reconciles were not confirmed)", fixedNoopWait)
	}

	after, err := r.apiserverWrites(ctx)
	if err != nil {
		return err
	}
	delta := subtractCounts(after, before)
	delta[ownTouchWrite]--
	var writes float64
	for k, v := range delta {
		if !slices.Contains(notDroverWrites, k) {
			writes += v
		}
	}
	r.figure("noop-resync-writes", writes, "writes", fmt.Sprintf(
		"one label added to a selected NodePool → all %d owners reconcile %d pools and children (target 0); %s; apiserver writes seen, own touch removed: %s",
		r.cfg.owners, len(r.pools), window, writeCounts(delta)))
	return nil
}

// waitReconciles waits until every owner has reconciled since the trigger and the controller is idle. It
// returns a description of the window for the figure's note and records the resync duration.
func (r *yadRun) waitReconciles(ctx context.Context, mm *measure.Scraper, before, droverWritesBefore float64, start time.Time) string {
	var reconciles, droverWrites float64
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, resyncDeadline, true, func(ctx context.Context) (bool, error) {
		m, err := mm.Scrape(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		ctrlLabel := map[string]string{"controller": yadControllerName}
		reconciles = measure.Sum(m, "controller_runtime_reconcile_total", ctrlLabel) - before
		droverWrites = measure.Sum(m, "drover_yurtappdaemon_workload_writes_total", nil) - droverWritesBefore
		busy := measure.Sum(m, "controller_runtime_active_workers", ctrlLabel) +
			measure.Sum(m, "workqueue_depth", map[string]string{"name": yadControllerName})
		return reconciles >= float64(r.cfg.owners) && busy == 0, nil
	})
	took := time.Since(start)
	if err != nil {
		r.logf("only %.0f of %d owner reconciles seen within %s", reconciles, r.cfg.owners, resyncDeadline)
		return fmt.Sprintf("only %.0f of %d reconciles seen within %s", reconciles, r.cfg.owners, resyncDeadline)
	}
	r.figure("noop-resync-seconds", took.Seconds(), "s",
		fmt.Sprintf("trigger → %d owner passes over %d pools done, controller idle", r.cfg.owners, len(r.pools)))
	return fmt.Sprintf("%.0f reconciles seen, drover_yurtappdaemon_workload_writes_total +%.0f", reconciles, droverWrites)
}

// quiesce waits until the counted writes (kube-controller-manager's included) have not moved for quiet. With
// verbose, it prints its progress.
func (r *yadRun) quiesce(ctx context.Context, quiet, deadline time.Duration, verbose bool) error {
	start := time.Now()
	var progress func(time.Duration, map[string]float64)
	if verbose {
		progress = func(since time.Duration, delta map[string]float64) {
			r.logf("waiting for the API writes to come to rest: since %s ago: %s", since.Round(time.Second), writeCounts(delta))
		}
	}
	delta, err := waitWritesAtRest(ctx, r.apiserverWrites, quiet, deadline, progress)
	if verbose {
		r.logf("API writes at rest after %s: %s", time.Since(start).Round(time.Second), writeCounts(delta))
	}
	return err
}

// apiserverWrites returns the kube-apiserver's counted writes of this scenario (countedResource).
func (r *yadRun) apiserverWrites(ctx context.Context) (map[string]float64, error) {
	return apiserverWriteCounts(ctx, r.cs, countedResource)
}

// managerScraper returns a scraper of the manager's metrics and a cleanup. It returns nil (and logs why) when
// the endpoint is not configured or cannot be read; the no-op step then uses a fixed window.
func (r *yadRun) managerScraper(ctx context.Context) (*measure.Scraper, func()) {
	if r.cfg.managerMetrics == "" {
		return nil, func() {}
	}
	m, cleanup, err := measure.NewManagerScraper(ctx, r.c, r.cs, r.cfg.managerMetrics, r.ns, "drover-bench-metrics-"+r.id)
	if err != nil {
		r.logf("cannot read the manager's metrics (%v); using a fixed window", err)
	}
	return m, cleanup
}

// creationWrites reports the writes to child Deployments per child created so far (fan-out and new pools;
// kube-controller-manager's status writes excluded) and how many children still have fields under the
// create's Update entry of drover's field manager: those fields cannot be removed by a later apply that omits
// them, so the count should be 0.
func (r *yadRun) creationWrites(ctx context.Context, now map[string]float64) error {
	var childWrites float64
	for k, v := range subtractCounts(now, r.writesBefore) {
		if verb, res, _ := strings.Cut(k, " "); res == "deployments" && !strings.HasPrefix(verb, "DELETE") {
			childWrites += v
		}
	}
	created := r.children()
	r.figure("writes-per-created-child", childWrites/float64(created), "writes",
		fmt.Sprintf("%.0f creates and patches of %d child Deployments during fan-out and new pools (status excluded); all writes counted: %s",
			childWrites, created, writeCounts(subtractCounts(now, r.writesBefore))))

	var unconverted, listed int
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := r.cs.AppsV1().Deployments(r.ns).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("listing the children: %w", err)
		}
		for _, d := range list.Items {
			listed++
			if slices.ContainsFunc(d.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
				return e.Manager == droverFieldManager && e.Operation == metav1.ManagedFieldsOperationUpdate
			}) {
				unconverted++
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	r.figure("children-with-create-fields", float64(unconverted), "children",
		fmt.Sprintf("of %d children, those whose create-time fields were not handed to %s's apply entry (target 0)", listed, droverFieldManager))
	return nil
}
