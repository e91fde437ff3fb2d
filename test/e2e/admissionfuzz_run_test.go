package e2e

// The admission fuzz's requests: raw bodies sent with a REST client, each response classified and counted.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// fuzzRequestTimeout is the client-side deadline of one request: beyond the webhooks' 10 s, so that a
// webhook that hangs shows as the API server's answer, and a request without an answer as a timeout.
const fuzzRequestTimeout = 15 * time.Second

// fuzzClient sends raw JSON bodies, at most rate requests per second (every request counts: GETs, the
// fuzz's writes and the nudges). Without a limiter it sends at once; with dryRun every request is a
// server-side dry run.
type fuzzClient struct {
	rc      *rest.RESTClient
	limiter flowcontrol.RateLimiter
	dryRun  bool
}

func newFuzzClient(cfg *rest.Config, rate float32) (*fuzzClient, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/json"
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter() // the fuzz's limiter waits outside the timing
	cfg.WarningHandler = rest.NoWarnings{}
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &fuzzClient{rc: rc, limiter: flowcontrol.NewTokenBucketRateLimiter(rate, 1)}, nil
}

// response is the answer to one request.
type response struct {
	code    int
	body    []byte
	err     error          // transport error or deadline: no answer
	status  *metav1.Status // the Status of an error answer
	latency time.Duration
}

// do sends one request: verb POST, PUT, PATCH (merge patch), GET or DELETE.
func (c *fuzzClient) do(ctx context.Context, verb, path string, body []byte) response {
	if c.limiter != nil {
		c.limiter.Accept()
	}
	ctx, cancel := context.WithTimeout(ctx, fuzzRequestTimeout)
	defer cancel()
	req := c.rc.Verb(verb).AbsPath(path)
	if verb == http.MethodPatch {
		req = c.rc.Patch(types.MergePatchType).AbsPath(path)
	}
	if c.dryRun {
		req = req.Param("dryRun", metav1.DryRunAll)
	}
	if body != nil {
		req = req.Body(body)
	}
	began := time.Now()
	res := req.Do(ctx)
	r := response{latency: time.Since(began)}
	res.StatusCode(&r.code)
	r.body, _ = res.Raw()
	err := res.Error()
	var st apierrors.APIStatus
	switch {
	case err == nil:
	case errors.As(err, &st) && r.code != 0:
		s := st.Status()
		r.status = &s
	case r.code == 0:
		r.err = err
	}
	return r
}

// droverDenial matches the API server's message for a denial by one of drover's webhooks.
var droverDenial = regexp.MustCompile(`^admission webhook "([a-z0-9.-]+\.drover\.dev)" denied the request`)

// fuzzRequest is one request of the fuzz and what came of it.
type fuzzRequest struct {
	Op      string // CREATE, UPDATE or NUDGE
	Kind    string
	Name    string
	Changes []change
	Seed    int // index of the kind's seed object a CREATE started from
	Code    int
	Message string
	Webhook string // the drover webhook that denied it
	Causes  []string
}

// invalid says whether a change made the object certainly invalid and no later change touched that node
// (a later one may have removed or replaced what made it invalid).
func (q *fuzzRequest) invalid() bool {
	for i, c := range q.Changes {
		if c.Invalid && !slices.ContainsFunc(q.Changes[i+1:], func(l change) bool { return overlaps(c.Path, l.Path) }) {
			return true
		}
	}
	return false
}

// String is one line for a failure message: what was sent and what came back.
func (q *fuzzRequest) String() string {
	parts := make([]string, len(q.Changes))
	for i, c := range q.Changes {
		parts[i] = c.String()
	}
	what := "unmutated"
	if len(parts) > 0 {
		what = strings.Join(parts, "; ")
	}
	msg := q.Message
	if len(msg) > 400 {
		msg = msg[:400] + "…"
	}
	from := ""
	if q.Op == "CREATE" {
		from = fmt.Sprintf(" from seed #%d", q.Seed)
	}
	s := fmt.Sprintf("%s %s %s%s [%s] → %d %s", q.Op, q.Kind, q.Name, from, what, q.Code, msg)
	if len(q.Causes) > 0 {
		s += fmt.Sprintf(" causes=%q", q.Causes)
	}
	return s
}

// record fills q from the response.
func (q *fuzzRequest) record(r response) {
	q.Code = r.code
	switch {
	case r.err != nil:
		q.Message = r.err.Error()
	case r.status != nil:
		q.Message = r.status.Message
		if m := droverDenial.FindStringSubmatch(q.Message); m != nil {
			q.Webhook = m[1]
		}
		if d := r.status.Details; d != nil {
			for _, c := range d.Causes {
				q.Causes = append(q.Causes, fmt.Sprintf("%s: %s", c.Field, c.Type))
			}
		}
	}
}

// hasFieldCause says whether the error answer carries a cause with a field path.
func hasFieldCause(r response) bool {
	return r.status != nil && r.status.Details != nil &&
		slices.ContainsFunc(r.status.Details.Causes, func(c metav1.StatusCause) bool { return c.Field != "" })
}

// encodeBody encodes an object for a request.
func encodeBody(o jsonObj) []byte {
	data, err := json.Marshal(o)
	if err != nil {
		panic(fmt.Sprintf("admission fuzz: encoding a body: %v", err))
	}
	return data
}
