package yurtappdaemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-dev/drover/internal/metricsreg"
)

// Values of the operation label of drover_yurtappdaemon_workload_writes_total.
const (
	opCreate = "create"
	opUpdate = "update"
	opDelete = "delete"
	opAdopt  = "adopt"
)

// Values of the result label of drover_yurtappdaemon_workload_writes_total.
const (
	resultSuccess = "success"
	resultError   = "error"
)

// The owner controllers' metrics. The kind label is the owner kind; no label names an object or a pool.
var (
	workloadWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_yurtappdaemon_workload_writes_total",
		Help: "Writes of per-pool workloads (Deployments, StatefulSets) by the YurtAppDaemon and UnitedDaemonSet controllers.",
	}, []string{"kind", "operation", "result"})

	renderErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_yurtappdaemon_render_errors_total",
		Help: "Per-pool renders that failed (a failing tweak patch).",
	}, []string{"kind"})

	normalizationMismatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_yurtappdaemon_normalization_mismatches_total",
		Help: "Applies whose result still differed from the applied body (the API server normalized a field); the loop guard holds such children.",
	}, []string{"kind"})

	poolProvisionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "drover_yurtappdaemon_pool_provision_seconds",
		Help:    "Time from the controller seeing a NodePool's create event to the successful create of an owner's workload for it.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"kind"})
)

// RegisterMetrics registers the package's metrics with reg (the manager's registry; registry.Setup calls it
// from main) and exports their zero series, so rates work from the first scrape.
func RegisterMetrics(reg prometheus.Registerer) error {
	if err := metricsreg.Register(reg, workloadWrites, renderErrors, normalizationMismatches, poolProvisionSeconds); err != nil {
		return err
	}
	for _, kind := range []string{yurtAppDaemonKind, unitedDaemonSetKind} {
		// Export zeros, so rates work from the first scrape.
		for _, op := range []string{opCreate, opUpdate, opDelete, opAdopt} {
			for _, res := range []string{resultSuccess, resultError} {
				workloadWrites.WithLabelValues(kind, op, res)
			}
		}
		renderErrors.WithLabelValues(kind)
		normalizationMismatches.WithLabelValues(kind)
	}
	return nil
}

// countWrite counts one workload write.
func countWrite(kind, op string, err error) {
	res := resultSuccess
	if err != nil {
		res = resultError
	}
	workloadWrites.WithLabelValues(kind, op, res).Inc()
}
