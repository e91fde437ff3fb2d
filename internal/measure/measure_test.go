package measure

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseMetrics(t *testing.T) {
	text := `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 12
apiserver_request_total{code="201",component="apiserver",dry_run="All",group="apps",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="status",verb="PUT",version="v1"} 1.5e+01
workqueue_depth{controller="yurtappdaemon",name="yurtappdaemon"} 0
process_open_fds 17
weird{msg="a \"quoted\", value\\n"} 1
broken{x="1" 2
`
	got := Parse(text)
	if len(got) != 6 {
		t.Fatalf("want 6 samples, got %d: %+v", len(got), got)
	}
	if d := cmp.Diff(map[string]string{"msg": `a "quoted", value\n`}, got[5].Labels); d != "" {
		t.Errorf("escaped label (-want +got):\n%s", d)
	}
	if v := Sum(got, "apiserver_request_total", map[string]string{"resource": "deployments", "dry_run": ""}); v != 27 {
		t.Errorf("sum of non-dry-run deployment requests = %v, want 27", v)
	}
	if v := Sum(got, "process_open_fds", nil); v != 17 {
		t.Errorf("unlabelled sample = %v, want 17", v)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 20; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[int]time.Duration{50: 10 * time.Millisecond, 99: 20 * time.Millisecond, 95: 19 * time.Millisecond, 0: time.Millisecond} {
		if got := Percentile(d, p); got != want {
			t.Errorf("p%d = %s, want %s", p, got, want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("empty: %s", got)
	}
}
