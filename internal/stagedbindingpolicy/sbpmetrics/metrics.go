// Package sbpmetrics holds the metrics of StagedBindingPolicy.
//
// Unlike drover's other metrics, several carry the policy's name (label sbp): a StagedBindingPolicy is a
// rollout, cluster-scoped, and a cluster has few of them, and "which rollout is stuck at which stage" is the
// question these metrics answer. The series of a deleted policy are removed (Forget), so the label's values
// stay bounded by the live policies.
package sbpmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-dev/drover/internal/metricsreg"
)

// The phases, the values of the phase label of Phase (one-hot).
var Phases = []string{"Progressing", "Waiting", "Paused", "Halted", "Completed"}

// The collectors.
var (
	StageTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_sbp_stage_transitions_total",
		Help: "Stage transitions by policy, stage and result (Activated, Succeeded, Halted, Skipped, Superseded, Retried).",
	}, []string{"sbp", "stage", "result"})
	StageDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "drover_sbp_stage_duration_seconds",
		Help:    "How long a stage ran, from activation to its end (completedAt - startedAt), by policy, stage and result.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 18), // 1 s … about 36 h
	}, []string{"sbp", "stage", "result"})
	CELEvaluations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_sbp_cel_evaluations_total",
		Help: "CEL evaluations by kind (filter, condition, failureCondition) and outcome (true, false, error).",
	}, []string{"kind", "outcome"})
	CELEvaluationErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_sbp_cel_evaluation_errors_total",
		Help: "CEL evaluation errors by policy, stage, kind and reason.",
	}, []string{"sbp", "stage", "kind", "reason"})
	ActiveStageIndex = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "drover_sbp_active_stage_index",
		Help: "Index of the active stage of each policy.",
	}, []string{"sbp"})
	Phase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "drover_sbp_phase",
		Help: "Phase of each policy, one-hot: 1 for the current phase, 0 for the others.",
	}, []string{"sbp", "phase"})
	PromotionLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "drover_sbp_promotion_latency_seconds",
		Help:    "From the start of the pass that found every gate of a stage passed to the committed status write of its promotion.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1 ms … about 33 s
	})
	CompileCacheRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_sbp_cel_compile_cache_requests_total",
		Help: "Lookups of compiled CEL programs by result (hit, miss).",
	}, []string{"result"})
)

// Register registers the collectors with reg.
func Register(reg prometheus.Registerer) error {
	return metricsreg.Register(reg, StageTransitions, StageDuration, CELEvaluations, CELEvaluationErrors,
		ActiveStageIndex, Phase, PromotionLatency, CompileCacheRequests)
}

// CompileCacheRequest counts one lookup of a compiled program.
func CompileCacheRequest(hit bool) {
	result := "miss"
	if hit {
		result = "hit"
	}
	CompileCacheRequests.WithLabelValues(result).Inc()
}

// SetPhase sets the one-hot phase gauge and the active stage index of a policy.
func SetPhase(sbp, phase string, activeIndex int) {
	for _, p := range Phases {
		v := 0.0
		if p == phase {
			v = 1
		}
		Phase.WithLabelValues(sbp, p).Set(v)
	}
	ActiveStageIndex.WithLabelValues(sbp).Set(float64(activeIndex))
}

// Forget removes every series of a deleted policy.
func Forget(sbp string) {
	labels := prometheus.Labels{"sbp": sbp}
	StageTransitions.DeletePartialMatch(labels)
	StageDuration.DeletePartialMatch(labels)
	CELEvaluationErrors.DeletePartialMatch(labels)
	ActiveStageIndex.DeletePartialMatch(labels)
	Phase.DeletePartialMatch(labels)
}
