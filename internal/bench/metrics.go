package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-dev/drover/internal/measure"
)

// Metric reading shared by the scenarios: the kube-apiserver's write counters and the manager's /metrics.

// mutatingVerbs are the verbs of apiserver_request_total that count as writes.
var mutatingVerbs = []string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}

// apiserverWriteCounts reads the kube-apiserver's /metrics and returns the writes on resources (dry runs
// excluded) by "VERB resource[/sub]".
func apiserverWriteCounts(ctx context.Context, cs kubernetes.Interface, resources []string) (map[string]float64, error) {
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the kube-apiserver's /metrics: %w", err)
	}
	counts := map[string]float64{}
	for _, s := range measure.Parse(string(raw)) {
		l := s.Labels
		if s.Name != "apiserver_request_total" || l["dry_run"] != "" ||
			!slices.Contains(mutatingVerbs, l["verb"]) || !slices.Contains(resources, l["resource"]) {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		counts[key] += s.Value
	}
	return counts, nil
}

// waitWritesAtRest polls read every 500 ms until its counts have not moved for quiet, at most for deadline,
// and returns how they moved meanwhile. A failed read is retried. progress, when set, gets the time since the
// start and the counts so far every 30 s.
func waitWritesAtRest(ctx context.Context, read func(context.Context) (map[string]float64, error), quiet, deadline time.Duration,
	progress func(since time.Duration, delta map[string]float64)) (map[string]float64, error) {
	start, lastLog := time.Now(), time.Now()
	var first, last map[string]float64
	lastChange := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, deadline, true, func(ctx context.Context) (bool, error) {
		cur, err := read(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		if first == nil {
			first = cur
		}
		if progress != nil && time.Since(lastLog) >= 30*time.Second {
			lastLog = time.Now()
			progress(time.Since(start), subtractCounts(cur, first))
		}
		if !equalCounts(cur, last) {
			last, lastChange = cur, time.Now()
			return false, nil
		}
		return time.Since(lastChange) >= quiet, nil
	})
	return subtractCounts(last, first), err
}

// subtractCounts returns a - b by key.
func subtractCounts(a, b map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range a {
		d[k] = v - b[k]
	}
	return d
}

func equalCounts(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// droverFieldManager is the field manager of the server-side applies with which the YurtAppDaemon controller
// writes its children.
const droverFieldManager = "drover-yurtappdaemon"
