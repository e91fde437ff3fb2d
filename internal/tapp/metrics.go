package tapp

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/metricsreg"
)

// Values of the operation label of drover_tapp_pod_writes_total.
const (
	opCreate        = "create"
	opDelete        = "delete"
	opForceDelete   = "force_delete"
	opInPlaceUpdate = "inplace_update"
	opGate          = "gate"
)

// Values of the result label of drover_tapp_pod_writes_total.
const (
	resultSuccess = "success"
	// resultNoop: the write found its effect already there (AlreadyExists, NotFound).
	resultNoop     = "noop"
	resultConflict = "conflict"
	resultError    = "error"
)

// The TApp controller's metrics. No label names an object.
var (
	podWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_tapp_pod_writes_total",
		Help: "Pod writes of the TApp controller by operation (create, delete, force_delete, inplace_update, gate) and result.",
	}, []string{"operation", "result"})

	inPlaceUpdateDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "drover_tapp_inplace_update_duration_seconds",
		Help:    "Time from the in-place patch of a pod to the completion of its update (gate True again).",
		Buckets: []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600},
	})

	instances = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "drover_tapp_instances",
		Help: "Instances of all TApps by status (the status.statuses values, summed over TApps).",
	}, []string{"status"})
)

var allInstanceStatuses = []tkestackv1.InstanceStatus{
	tkestackv1.InstanceNotCreated, tkestackv1.InstancePending, tkestackv1.InstanceRunning, tkestackv1.InstanceUpdating,
	tkestackv1.InstancePodFailed, tkestackv1.InstancePodSucc, tkestackv1.InstanceKilling, tkestackv1.InstanceKilled,
	tkestackv1.InstanceFailed, tkestackv1.InstanceSucc, tkestackv1.InstanceUnknown,
}

// RegisterMetrics registers the package's metrics with reg (the manager's registry; registry.Setup calls it
// from main) and exports their zero series, so rates work from the first scrape.
func RegisterMetrics(reg prometheus.Registerer) error {
	if err := metricsreg.Register(reg, podWrites, inPlaceUpdateDuration, instances); err != nil {
		return err
	}
	// Export zeros, so rates and sums work from the first scrape.
	for _, op := range []string{opCreate, opDelete, opForceDelete, opInPlaceUpdate, opGate} {
		for _, res := range []string{resultSuccess, resultNoop, resultConflict, resultError} {
			podWrites.WithLabelValues(op, res)
		}
	}
	for _, st := range allInstanceStatuses {
		instances.WithLabelValues(string(st))
	}
	return nil
}

// countWrite counts one pod write.
func countWrite(op string, err error) {
	res := resultSuccess
	switch {
	case err == nil:
	case apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err):
		res = resultNoop
	case apierrors.IsConflict(err):
		res = resultConflict
	default:
		res = resultError
	}
	podWrites.WithLabelValues(op, res).Inc()
}

// instanceGauge keeps drover_tapp_instances the sum of every TApp's last computed statuses.
type instanceGauge struct {
	mu    sync.Mutex
	byApp map[types.NamespacedName]map[tkestackv1.InstanceStatus]int
}

func newInstanceGauge() *instanceGauge {
	return &instanceGauge{byApp: map[types.NamespacedName]map[tkestackv1.InstanceStatus]int{}}
}

// set replaces a TApp's contribution.
func (g *instanceGauge) set(key types.NamespacedName, statuses map[string]tkestackv1.InstanceStatus) {
	counts := map[tkestackv1.InstanceStatus]int{}
	for _, st := range statuses {
		counts[st]++
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.apply(g.byApp[key], -1)
	g.apply(counts, 1)
	g.byApp[key] = counts
}

// forget removes the contribution of a TApp that no longer exists.
func (g *instanceGauge) forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.apply(g.byApp[key], -1)
	delete(g.byApp, key)
}

func (g *instanceGauge) apply(counts map[tkestackv1.InstanceStatus]int, sign int) {
	for st, n := range counts {
		instances.WithLabelValues(string(st)).Add(float64(sign * n))
	}
}
