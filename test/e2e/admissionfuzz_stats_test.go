package e2e

// The admission fuzz's figures and failure classes.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-dev/drover/internal/measure"
)

// maxExamples is how many requests a failure class shows.
const maxExamples = 5

// failureClass is one kind of failure with a few of the requests that showed it.
type failureClass struct {
	Count    int      `json:"count"`
	Examples []string `json:"examples"`
	// shown holds kind + first mutation of the examples, so that they differ.
	shown map[string]bool
}

// kindFigures counts the fuzz requests of one kind.
type kindFigures struct {
	Requests int `json:"requests"`
	Accepted int `json:"accepted"`
	Denied   int `json:"denied"`
}

// fuzzFigures are what one run measured; they are printed and written to .local/fuzz/admission.json.
type fuzzFigures struct {
	Seed     uint64 `json:"seed"`
	Requests int    `json:"requests"` // CREATE and UPDATE requests (the fuzz's own)
	Creates  int    `json:"creates"`
	Updates  int    `json:"updates"`
	Nudges   int    `json:"nudges"` // merge patches of admitted objects in the error-loop check
	Gets     int    `json:"gets"`
	Accepted int    `json:"accepted2xx"`
	// ByCode counts the fuzz requests by HTTP status code ("0" when no answer came).
	ByCode map[string]int `json:"byCode"`
	// Invalid422 splits the 422 answers: denials by drover's webhooks, and the API server's own checks.
	Invalid422 struct {
		DroverWebhooks int `json:"droverWebhooks"`
		APIServer      int `json:"apiServer"`
	} `json:"invalid422"`
	// DroverDenialsByCode counts every denial by one of drover's webhooks by code (all should be 422).
	DroverDenialsByCode map[string]int           `json:"droverDenialsByCode"`
	ServerErrors        int                      `json:"serverErrors5xx"`
	NoAnswer            int                      `json:"noAnswer"`
	LatencyMS           latencyFigures           `json:"latencyMs"`
	PerKind             map[string]*kindFigures  `json:"perKind"`
	Failures            map[string]*failureClass `json:"failures"`
	// Burst is the burst phase: the largest valid object of each kind, sent six at once.
	Burst           burstFigures     `json:"burst"`
	ReconcileErrors reconcileFigures `json:"reconcileErrors"`
	// WarningEvents counts the Warning events about the fuzz's objects by kind and reason: how the
	// controllers reported what they refused (PersistentPodStateRefused, GateError, ...).
	WarningEvents map[string]int `json:"warningEvents"`
	Panics        float64        `json:"panics"`
	DurationS     float64        `json:"durationSeconds"`

	latencies []time.Duration
}

// latencyFigures are percentiles of client-side latencies, in milliseconds.
type latencyFigures struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// latencyOf computes the figures of ds, which it sorts.
func latencyOf(ds []time.Duration) latencyFigures {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var l latencyFigures
	if n := len(ds); n > 0 {
		l.P50, l.P99, l.Max = ms(measure.Percentile(ds, 50)), ms(measure.Percentile(ds, 99)), ms(ds[n-1])
	}
	return l
}

// reconcileFigures are the controllers' reconcile errors: during the requests and the settling, and in each
// round of the error-loop check.
type reconcileFigures struct {
	DuringRun  map[string]float64   `json:"duringRun"`
	SettledInS float64              `json:"settledInSeconds"`
	Settled    bool                 `json:"settled"`
	Rounds     []map[string]float64 `json:"rounds"`
	// Reconciles counts each controller's reconciles in each round: the nudges reached it.
	Reconciles []map[string]float64 `json:"reconcilesInRounds"`
	// Objects are the objects of the "Reconciler error" lines of the manager's log during the rounds, with
	// the requests that made them what they are.
	Objects []string `json:"objects,omitempty"`
	// WholeRun are the objects of the "Reconciler error" lines over the whole spec, most frequent first; one
	// with maxObjectErrors or more fails the run.
	WholeRun []string `json:"wholeRun,omitempty"`
	// Unreached names the controllers that did not reconcile in a round whose nudges of their kind were
	// admitted.
	Unreached []string `json:"unreached,omitempty"`

	erroring, persistent []erroringObject
}

func newFuzzFigures(seed uint64) *fuzzFigures {
	return &fuzzFigures{
		Seed: seed, ByCode: map[string]int{}, DroverDenialsByCode: map[string]int{},
		PerKind: map[string]*kindFigures{}, Failures: map[string]*failureClass{},
		Burst: burstFigures{PerKind: map[string]*burstKind{}},
	}
}

// fail counts q under the failure class.
func (f *fuzzFigures) fail(class string, q *fuzzRequest) {
	fc := f.Failures[class]
	if fc == nil {
		fc = &failureClass{shown: map[string]bool{}}
		f.Failures[class] = fc
	}
	fc.Count++
	key := q.Kind
	if len(q.Changes) > 0 {
		key += "/" + q.Changes[0].Mutation
	}
	if len(fc.Examples) < maxExamples && !fc.shown[key] {
		fc.shown[key] = true
		fc.Examples = append(fc.Examples, q.String())
	}
}

// add counts one CREATE or UPDATE of the fuzz and classifies its answer.
func (f *fuzzFigures) add(q *fuzzRequest, r response) {
	f.Requests++
	if q.Op == "CREATE" {
		f.Creates++
	} else {
		f.Updates++
	}
	kf := f.PerKind[q.Kind]
	if kf == nil {
		kf = &kindFigures{}
		f.PerKind[q.Kind] = kf
	}
	kf.Requests++
	f.ByCode[strconv.Itoa(r.code)]++
	f.latencies = append(f.latencies, r.latency)
	if r.code >= 200 && r.code < 300 {
		kf.Accepted++
		f.Accepted++
		if q.invalid() {
			f.fail("an invalid "+q.Kind+" was admitted", q)
		}
		return
	}
	kf.Denied++
	f.classifyDenial(q, r)
}

// classifyDenial counts an answer that is not 2xx and records the failure classes it shows.
func (f *fuzzFigures) classifyDenial(q *fuzzRequest, r response) {
	switch {
	case r.err != nil:
		f.NoAnswer++
		f.fail("no answer within the client deadline, or a transport error", q)
		return
	case r.code >= 500:
		f.ServerErrors++
		f.fail(fmt.Sprintf("%d answer (server error)", r.code), q)
		return
	}
	if q.Webhook != "" {
		f.DroverDenialsByCode[strconv.Itoa(r.code)]++
		switch {
		case r.code != http.StatusUnprocessableEntity || r.status.Reason != metav1.StatusReasonInvalid:
			f.fail(fmt.Sprintf("%s denied with %d %s instead of 422 Invalid", q.Webhook, r.code, r.status.Reason), q)
		case !hasFieldCause(r):
			f.fail(q.Webhook+" denied with 422 without a cause carrying a field path", q)
		}
	}
	if r.code == http.StatusUnprocessableEntity {
		if q.Webhook != "" {
			f.Invalid422.DroverWebhooks++
		} else {
			f.Invalid422.APIServer++
		}
	}
	denied := r.code == http.StatusUnprocessableEntity || r.code == http.StatusBadRequest
	switch {
	case denied && q.Op == "CREATE" && len(q.Changes) == 0:
		f.fail("an unmutated seed "+q.Kind+" was denied", q)
	case denied && q.Op == "UPDATE" && !q.invalidOrMutated():
		f.fail("a valid edit of an admitted "+q.Kind+" was denied", q)
	}
}

// invalidOrMutated says whether an UPDATE carried anything but valid edits.
func (q *fuzzRequest) invalidOrMutated() bool {
	return slices.ContainsFunc(q.Changes, func(c change) bool { return !strings.HasPrefix(c.Mutation, "edit-") })
}

// addNudge counts a nudge: it must be admitted like any edit of an admitted object (a conflict with a
// controller's write or a gone object aside).
func (f *fuzzFigures) addNudge(q *fuzzRequest, r response) {
	f.Nudges++
	switch {
	case r.err != nil:
		f.NoAnswer++
		f.fail("no answer within the client deadline, or a transport error", q)
	case r.code >= 500:
		f.ServerErrors++
		f.fail(fmt.Sprintf("%d answer (server error)", r.code), q)
	case r.code >= 300 && r.code != http.StatusConflict && r.code != http.StatusNotFound:
		f.fail("the nudge of an admitted "+q.Kind+" was denied", q)
	}
}

// finish computes the latency figures.
func (f *fuzzFigures) finish(began time.Time) {
	f.LatencyMS = latencyOf(f.latencies)
	for _, b := range f.Burst.PerKind {
		b.LatencyMS, b.WebhookMS = latencyOf(b.latencies), latencyOf(b.webhook)
	}
	f.DurationS = time.Since(began).Round(100 * time.Millisecond).Seconds()
}

// summary is the human-readable report of the figures.
func (f *fuzzFigures) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "admission fuzz: seed %d (DROVER_FUZZ_SEED=%d reproduces it), %.1f s\n", f.Seed, f.Seed, f.DurationS)
	fmt.Fprintf(&b, "  requests %d (%d CREATE, %d UPDATE), plus %d GET and %d nudges\n", f.Requests, f.Creates, f.Updates, f.Gets, f.Nudges)
	fmt.Fprintf(&b, "  2xx %d; by code %s\n", f.Accepted, sortedCounts(f.ByCode))
	fmt.Fprintf(&b, "  422: %d from drover's webhooks, %d from the API server's own checks; drover denials by code %s\n",
		f.Invalid422.DroverWebhooks, f.Invalid422.APIServer, sortedCounts(f.DroverDenialsByCode))
	fmt.Fprintf(&b, "  5xx %d, no answer %d; latency p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		f.ServerErrors, f.NoAnswer, f.LatencyMS.P50, f.LatencyMS.P99, f.LatencyMS.Max)
	for _, k := range sortedKeys(f.PerKind) {
		kf := f.PerKind[k]
		fmt.Fprintf(&b, "  %-16s %4d requests, %4d admitted, %4d denied\n", k, kf.Requests, kf.Accepted, kf.Denied)
	}
	f.Burst.summarize(&b)
	rf := f.ReconcileErrors
	fmt.Fprintf(&b, "  reconcile errors during the run: %s; quiet after %.0f s: %v\n", sortedFloats(rf.DuringRun), rf.SettledInS, rf.Settled)
	for i, r := range rf.Rounds {
		fmt.Fprintf(&b, "  reconcile errors in error-loop round %d: %s\n", i+1, sortedFloats(r))
		if i < len(rf.Reconciles) {
			fmt.Fprintf(&b, "    reconciles: %s\n", sortedFloats(rf.Reconciles[i]))
		}
	}
	for _, o := range head(rf.Objects, 5) {
		fmt.Fprintf(&b, "    - %s\n", o)
	}
	fmt.Fprintf(&b, "  objects with reconcile errors over the whole run: %d\n", len(rf.WholeRun))
	for _, o := range head(rf.WholeRun, 5) {
		fmt.Fprintf(&b, "    - %s\n", o)
	}
	fmt.Fprintf(&b, "  warning events: %s\n", sortedCounts(f.WarningEvents))
	fmt.Fprintf(&b, "  panics %v\n", f.Panics)
	for _, class := range sortedKeys(f.Failures) {
		fc := f.Failures[class]
		fmt.Fprintf(&b, "  FAILURE %s: %d request(s), e.g.\n", class, fc.Count)
		for _, e := range fc.Examples {
			fmt.Fprintf(&b, "    - %s\n", e)
		}
	}
	return b.String()
}

func sortedCounts(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func sortedFloats(m map[string]float64) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%g", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// write writes the figures as JSON to file.
func (f *fuzzFigures) write(file string) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o750); err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o600)
}
