// Package measure reads the measurements that the benchmarks and the end-to-end tests share: the manager's
// Prometheus metrics and nearest-rank percentiles of durations.
package measure

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
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

// Scraper reads the manager's /metrics (HTTPS, bearer token).
type Scraper struct {
	url, token string
	hc         *http.Client
}

// Scrape reads and parses the manager's metrics once.
func (m *Scraper) Scrape(ctx context.Context) ([]Sample, error) {
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
	return Parse(string(body)), nil
}

// NewManagerScraper returns a scraper of the manager's metrics at addr, authenticated as a ServiceAccount of
// ns bound to a ClusterRole (name) that may get /metrics, and the cleanup of that role and binding (the
// ServiceAccount goes with ns). It waits up to 30 s for a first successful scrape.
func NewManagerScraper(ctx context.Context, c client.Client, cs kubernetes.Interface, addr, ns, name string) (*Scraper, func(), error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader", Namespace: ns}}
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
	m := &Scraper{
		url:   "https://" + addr + "/metrics",
		token: tr.Status.Token,
		hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			// The manager listens on 127.0.0.1 with a self-signed serving certificate it generated itself.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // local endpoint, self-signed certificate
		}},
	}
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, lastErr = m.Scrape(ctx)
		return lastErr == nil, nil
	})
	if err != nil {
		return nil, cleanup, lastErr
	}
	return m, cleanup, nil
}

// Sample is one line of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Parse parses the Prometheus text exposition format; lines it cannot read are skipped.
func Parse(text string) []Sample {
	var out []Sample
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

func parseSample(line string) (Sample, bool) {
	s := Sample{Labels: map[string]string{}}
	var rest string
	if i := strings.IndexAny(line, "{ "); i < 0 {
		return s, false
	} else if line[i] == '{' {
		s.Name = line[:i]
		var ok bool
		if rest, ok = parseLabels(line[i+1:], s.Labels); !ok {
			return s, false
		}
	} else {
		s.Name, rest = line[:i], line[i:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, false
	}
	s.Value = v
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

// Sum adds the values of the samples called name whose labels include match.
func Sum(samples []Sample, name string, match map[string]string) float64 {
	var sum float64
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			sum += s.Value
		}
	}
	return sum
}
