package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	for _, s := range parseMetrics(string(raw)) {
		l := s.labels
		if s.name != "apiserver_request_total" || l["dry_run"] != "" ||
			!slices.Contains(mutatingVerbs, l["verb"]) || !slices.Contains(resources, l["resource"]) {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		counts[key] += s.value
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

// metricsScraper reads the manager's /metrics (HTTPS, bearer token).
type metricsScraper struct {
	url, token string
	hc         *http.Client
}

func (m *metricsScraper) scrape(ctx context.Context) ([]metricSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	resp, err := m.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the manager's metrics: %s", resp.Status)
	}
	return parseMetrics(string(body)), nil
}

// newManagerScraper returns a scraper of the manager's metrics at addr, authenticated as a ServiceAccount of
// ns bound to a ClusterRole (name) that may get /metrics, and the cleanup of that role and binding (the
// ServiceAccount goes with ns). It waits up to 30 s for a first successful scrape.
func newManagerScraper(ctx context.Context, c client.Client, cs kubernetes.Interface, addr, ns, name string) (*metricsScraper, func(), error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bench-metrics", Namespace: ns}}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}
	cleanup := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Delete(ctx, binding)
		_ = c.Delete(ctx, role)
	}
	for _, o := range []client.Object{sa, role, binding} {
		if err := c.Create(ctx, o); err != nil {
			return nil, cleanup, fmt.Errorf("creating %s: %w", o.GetName(), err)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, cleanup, fmt.Errorf("token: %w", err)
	}
	m := &metricsScraper{
		url:   "https://" + addr + "/metrics",
		token: tr.Status.Token,
		hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			// The manager listens on 127.0.0.1 with a self-signed serving certificate it generated itself.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // local endpoint, self-signed certificate
		}},
	}
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, lastErr = m.scrape(ctx)
		return lastErr == nil, nil
	})
	if err != nil {
		return nil, cleanup, lastErr
	}
	return m, cleanup, nil
}

// metricSample is one line of the Prometheus text format.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseMetrics parses the Prometheus text exposition format; lines it cannot read are skipped.
func parseMetrics(text string) []metricSample {
	var out []metricSample
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		s, ok := parseSample(line)
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func parseSample(line string) (metricSample, bool) {
	s := metricSample{labels: map[string]string{}}
	var rest string
	if i := strings.IndexAny(line, "{ "); i < 0 {
		return s, false
	} else if line[i] == '{' {
		s.name = line[:i]
		var ok bool
		if rest, ok = parseLabels(line[i+1:], s.labels); !ok {
			return s, false
		}
	} else {
		s.name, rest = line[:i], line[i:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, false
	}
	s.value = v
	return s, true
}

// parseLabels reads `k="v",k2="v2"}` into labels and returns what follows the closing brace.
func parseLabels(in string, labels map[string]string) (string, bool) {
	for {
		in = strings.TrimLeft(in, " ,")
		if in == "" {
			return "", false
		}
		if in[0] == '}' {
			return in[1:], true
		}
		eq := strings.IndexByte(in, '=')
		if eq < 0 || len(in) < eq+2 || in[eq+1] != '"' {
			return "", false
		}
		key := strings.TrimSpace(in[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(in) && in[i] != '"'; i++ {
			if in[i] == '\\' && i+1 < len(in) {
				i++
				switch in[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(in[i])
				}
				continue
			}
			val.WriteByte(in[i])
		}
		if i >= len(in) {
			return "", false
		}
		labels[key] = val.String()
		in = in[i+1:]
	}
}

// sumSamples adds the values of the samples called name whose labels include match.
func sumSamples(samples []metricSample, name string, match map[string]string) float64 {
	var sum float64
	for _, s := range samples {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			sum += s.value
		}
	}
	return sum
}

// droverFieldManager is the field manager of the server-side applies with which the YurtAppDaemon controller
// writes its children.
const droverFieldManager = "drover-yurtappdaemon"
