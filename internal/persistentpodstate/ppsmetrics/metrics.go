// Package ppsmetrics holds the metrics of PersistentPodState: the controller, the generator, the whitelist
// store and the pod webhook count into the same collectors. No label names an object.
package ppsmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-dev/drover/internal/metricsreg"
)

// Values of the result label of PodAdmissions.
const (
	AdmissionInjected      = "injected"       // the pod was steered (a patch was returned)
	AdmissionNoState       = "no_state"       // a PPS targets the pod's workload, but nothing is recorded for the pod
	AdmissionNotApplicable = "not_applicable" // no supported controller, no name, or no PPS for the workload
	AdmissionError         = "error"          // an internal error: the pod was admitted unchanged
)

// Values of the result label of StatusWrites.
const (
	WriteOK       = "ok"
	WriteConflict = "conflict"
	WriteTooLarge = "too_large"
	WriteError    = "error"
)

// The collectors.
var (
	PodAdmissions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_persistentpodstate_pod_admissions_total",
		Help: "Pod creations seen by the PersistentPodState pod webhook, by result (injected, no_state, not_applicable, error).",
	}, []string{"result"})
	NodeSelectorConflicts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "drover_persistentpodstate_nodeselector_conflicts_total",
		Help: "Recorded required keys not injected because the pod already had another value for the key in its nodeSelector.",
	})
	MissingNodeSkips = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "drover_persistentpodstate_missing_node_skips_total",
		Help: "Node identity keys (such as kubernetes.io/hostname) not injected because the recorded node no longer exists.",
	})
	StatusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_persistentpodstate_status_writes_total",
		Help: "Status writes of the PersistentPodState controller by result (ok, conflict, too_large, error).",
	}, []string{"result"})
	WhitelistParseErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "drover_persistentpodstate_whitelist_parse_errors_total",
		Help: "Values of the custom-workload whitelist that could not be parsed (the last good whitelist stayed in force).",
	})
	StatusSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "drover_persistentpodstate_status_size_bytes",
		Help:    "Estimated stored size of a PersistentPodState at each status write.",
		Buckets: prometheus.ExponentialBuckets(1024, 4, 8), // 1 KiB … 16 MiB
	})
	SizeLimited = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "drover_persistentpodstate_size_limited",
		Help: "PersistentPodStates whose status is held back by the size guard (condition StatusSizeLimitReached).",
	})
	WatchedCustomKinds = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "drover_persistentpodstate_watched_custom_kinds",
		Help: "Whitelisted custom workload kinds being watched.",
	})
	PendingCustomKinds = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "drover_persistentpodstate_pending_custom_kinds",
		Help: "Whitelisted custom workload kinds not served yet (their CRD is missing); retried periodically.",
	})
)

// Register registers the collectors with reg and exports the zero series of every label value, so rates
// work from the first scrape.
func Register(reg prometheus.Registerer) error {
	if err := metricsreg.Register(reg, PodAdmissions, NodeSelectorConflicts, MissingNodeSkips, StatusWrites,
		WhitelistParseErrors, StatusSize, SizeLimited, WatchedCustomKinds, PendingCustomKinds); err != nil {
		return err
	}
	for _, r := range []string{AdmissionInjected, AdmissionNoState, AdmissionNotApplicable, AdmissionError} {
		PodAdmissions.WithLabelValues(r)
	}
	for _, r := range []string{WriteOK, WriteConflict, WriteTooLarge, WriteError} {
		StatusWrites.WithLabelValues(r)
	}
	return nil
}
