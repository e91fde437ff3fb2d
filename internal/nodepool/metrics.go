package nodepool

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-dev/drover/internal/metricsreg"
)

// Results of a node patch, the values of the label result of drover_nodepool_node_patches_total.
const (
	patchSuccess  = "success"
	patchConflict = "conflict" // the node changed or vanished since it was read; the pool is requeued with backoff
	patchError    = "error"
)

// nodePatches counts the node patches of the NodePool controller, by result.
var nodePatches = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "drover_nodepool_node_patches_total",
	Help: "Node patches (membership and pool attributes) made by the NodePool controller, by result.",
}, []string{"result"})

// RegisterMetrics registers the package's metrics with reg (the manager's registry; registry.Setup calls it
// from main) and exports their zero series, so rates work from the first scrape.
func RegisterMetrics(reg prometheus.Registerer) error {
	if err := metricsreg.Register(reg, nodePatches); err != nil {
		return err
	}
	for _, r := range []string{patchSuccess, patchConflict, patchError} {
		nodePatches.WithLabelValues(r) // export zeros, so rates work from the first scrape
	}
	return nil
}
