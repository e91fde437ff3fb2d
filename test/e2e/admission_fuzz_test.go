package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/drover-dev/drover/internal/localcluster"
)

// fuzzConfig is the size and pace of one admission fuzz run.
type fuzzConfig struct {
	seed     uint64
	requests int
	// rate bounds every request of the fuzz (GETs and nudges too), per second.
	rate float32
	// validShare of the creates go unmutated; updateShare of the requests update an admitted object.
	validShare, updateShare float64
	// requestBudget bounds the request phase; settleLimit the wait for the controllers to go quiet;
	// observe is the length of each of the two rounds of the error-loop check.
	requestBudget, settleLimit, observe time.Duration
	// burstRounds is the number of rounds of the burst phase; burstStrict sends each round's six objects at once
	// and holds them to burstP99Limit (the full run), else they go one after another and only their answers
	// count (the short run of the e2e tier, which must pass on a loaded CI machine; see burstStrictFor).
	burstRounds int
	burstStrict bool
}

// fuzzConfigFromEnv reads DROVER_FUZZ_SEED (default: the time) and DROVER_FUZZ_REQUESTS (default 400, the
// size that runs in `make test`; `make fuzz-admission` asks for 4,000).
func fuzzConfigFromEnv() fuzzConfig {
	cfg := fuzzConfig{
		seed: uint64(time.Now().UnixNano()), requests: 400, rate: 40, validShare: 0.2, updateShare: 0.35,
		settleLimit: 30 * time.Second, observe: 10 * time.Second,
	}
	if v := os.Getenv("DROVER_FUZZ_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		Expect(err).NotTo(HaveOccurred(), "DROVER_FUZZ_SEED")
		cfg.seed = seed
	}
	if v := os.Getenv("DROVER_FUZZ_REQUESTS"); v != "" {
		n, err := strconv.Atoi(v)
		Expect(err).NotTo(HaveOccurred(), "DROVER_FUZZ_REQUESTS")
		Expect(n).To(BeNumerically(">", 0), "DROVER_FUZZ_REQUESTS")
		cfg.requests = n
	}
	// Three times the time the rate allows (the requests go one after another, and the GETs of the updates
	// count), and a minute for slow answers.
	cfg.requestBudget = time.Duration(float64(cfg.requests)/float64(cfg.rate)*3*float64(time.Second)) + time.Minute
	cfg.burstRounds, cfg.burstStrict = burstRounds(cfg.requests), burstStrictFor(cfg.requests)
	return cfg
}

// The admission fuzz sends random and mutated objects of every served kind (NodePool, YurtAppDaemon,
// UnitedDaemonSet, TApp, PersistentPodState, StagedBindingPolicy) and of StatefulSets carrying the
// PersistentPodState generator's annotations as CREATE and UPDATE requests through the local cluster's
// kube-apiserver, after sending the largest valid object of each of the six kinds at once, and checks:
//
//   - no answer is a 5xx, and every request is answered within the client's 15 s deadline;
//   - every denial by one of drover's webhooks is a 422 (StatusReasonInvalid) with at least one cause that
//     carries a field path (no drover webhook answers 400); an unmutated seed and a valid edit of an
//     admitted object are admitted, and an object a mutation made certainly invalid is not;
//   - the 99th percentile of the client-side latency of the requests is under 1 s;
//   - burst: before the requests, on the cluster as the suite left it once the controllers are quiet, the
//     largest valid object of each of the six kinds (every list at its bound, as far as etcd would store it:
//     admissionfuzz_largest_test.go) is sent as a server-side dry-run create, the six at once, for 2 rounds
//     (10 with 4,000 requests or more), after one small dry-run create of each kind. Each is admitted, and
//     each kind's client latency is under 3 s at the 99th percentile;
//   - the manager does not panic (its log since the start names no panic; its panic counters stay) and runs
//     as the same process throughout (no exit, no restart);
//   - the admitted objects do not put a controller into an error loop. Criterion: once the controllers are
//     quiet (no queued or running reconcile three seconds in a row, at most 30 s), two rounds run; each
//     nudges every admitted object (a change its controller's event filter lets through, which makes the
//     controller reconcile it whatever its retry backoff: for a StatefulSet, a change the generator's filter
//     lets through) and then watches for 10 s. A controller whose controller_runtime_reconcile_errors_total
//     grows in both rounds fails on some admitted object each time it looks at it: that is an error loop,
//     and the failure names the objects of the "Reconciler error" lines of the manager's log. An error in
//     one round only is reported, not failed. A controller that did not reconcile at all in a round whose
//     nudges of its kind were admitted fails the run too (the check would be blind to it);
//   - no object is one a controller fails on five times or more: the "Reconciler error" lines of the
//     manager's log over the whole spec, counted by object.
//
// The seed is printed; DROVER_FUZZ_SEED reproduces a run (the same requests, as long as the cluster gives
// the same answers, which decide the objects later requests update). The figures are printed and written
// to .local/fuzz/admission.json, with the Warning events the controllers recorded about the fuzz's objects.
var _ = Describe("Admission fuzz", func() {
	It("answers every mutated object with 2xx or a 4xx, drover's denials as 422 with field paths, the largest objects within 3 s, and admits nothing its controllers fail on", func() {
		cfg := fuzzConfigFromEnv()
		GinkgoWriter.Printf("admission fuzz: seed %d, %d requests (DROVER_FUZZ_SEED, DROVER_FUZZ_REQUESTS)\n", cfg.seed, cfg.requests)
		began := time.Now()
		run := newFuzzRun(cfg)
		watch := watchManager(run.namespaces[0])
		first := watch.sample()
		errorsBefore, panicsBefore := reconcileErrors(first), panics(first)

		By(fmt.Sprintf("sending the largest object of each kind, %d rounds (at once and timed: %v)", cfg.burstRounds, cfg.burstStrict))
		watch.waitQuiet(cfg.settleLimit)
		run.burst(watch, cfg.burstRounds, cfg.burstStrict)

		By(fmt.Sprintf("sending %d requests", cfg.requests))
		run.sendAll()

		By("waiting for the controllers to go quiet")
		rf := &run.figures.ReconcileErrors
		took, quiet := watch.waitQuiet(cfg.settleLimit)
		rf.SettledInS, rf.Settled = took.Round(time.Second).Seconds(), quiet
		rf.DuringRun = subtract(reconcileErrors(watch.sample()), errorsBefore)

		By("checking for error loops")
		run.errorLoopRounds(watch)
		run.wholeRunErrors(watch.logStart)
		run.figures.WarningEvents = warningEvents()
		run.figures.Panics = panics(watch.sample()) - panicsBefore

		run.figures.finish(began)
		report(run.figures)
		problems := append(watch.expectAlive(), run.problems(cfg)...)
		Expect(problems).To(BeEmpty(), "admission fuzz, seed %d (DROVER_FUZZ_SEED=%d reproduces it):\n  - %s\n\n%s",
			cfg.seed, cfg.seed, strings.Join(problems, "\n  - "), run.figures.summary())
	})
})

// report prints the figures (to standard output, so that `make test` shows them for a passing run too) and
// writes them to .local/fuzz/admission.json.
func report(f *fuzzFigures) {
	root, err := localcluster.FindRepoRoot("")
	Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(root, ".local", "fuzz", "admission.json")
	Expect(f.write(file)).To(Succeed())
	fmt.Fprintf(os.Stdout, "%s  figures: %s\n", f.summary(), file)
}

// problems lists what the figures show wrong: the failure classes, slow answers, panics, the burst's problems
// and the quiet phase's (error loops, objects failed on too often, nudges without effect).
func (r *fuzzRun) problems(cfg fuzzConfig) []string {
	f := r.figures
	var out []string
	for _, class := range sortedKeys(f.Failures) {
		out = append(out, fmt.Sprintf("%s: %d request(s)", class, f.Failures[class].Count))
	}
	if f.Requests < cfg.requests {
		out = append(out, fmt.Sprintf("only %d of %d requests within the budget of %s", f.Requests, cfg.requests, cfg.requestBudget))
	}
	if f.LatencyMS.P99 >= 1000 {
		out = append(out, fmt.Sprintf("latency p99 %.0f ms, not under 1 s", f.LatencyMS.P99))
	}
	if f.Panics > 0 {
		out = append(out, fmt.Sprintf("%v panic(s) recovered by the manager", f.Panics))
	}
	out = append(out, f.Burst.problems(cfg.burstStrict)...)
	return append(out, r.quietProblems()...)
}

func head[T any](s []T, n int) []T { return s[:min(n, len(s))] }
