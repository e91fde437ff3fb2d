package bench

import (
	"testing"

	"github.com/drover-dev/drover/internal/measure"
)

func TestWriteCounts(t *testing.T) {
	got := writeCounts(map[string]float64{"PATCH nodepools": 0, "APPLY deployments": 2, "PUT deployments/status": 1})
	if want := "APPLY deployments=2, PUT deployments/status=1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := writeCounts(nil); got != "none" {
		t.Errorf("empty: %q", got)
	}
}

func TestManagerBreakdown(t *testing.T) {
	before := measure.Parse(`drover_yurtappdaemon_pool_provision_seconds_sum{kind="YurtAppDaemon"} 1
drover_yurtappdaemon_pool_provision_seconds_count{kind="YurtAppDaemon"} 10
controller_runtime_reconcile_time_seconds_sum{controller="yurtappdaemon"} 2
controller_runtime_reconcile_time_seconds_count{controller="yurtappdaemon"} 20
controller_runtime_reconcile_time_seconds_count{controller="nodepool"} 99
`)
	after := measure.Parse(`drover_yurtappdaemon_pool_provision_seconds_sum{kind="YurtAppDaemon"} 3
drover_yurtappdaemon_pool_provision_seconds_count{kind="YurtAppDaemon"} 20
controller_runtime_reconcile_time_seconds_sum{controller="yurtappdaemon"} 6
controller_runtime_reconcile_time_seconds_count{controller="yurtappdaemon"} 40
controller_runtime_reconcile_time_seconds_count{controller="nodepool"} 199
`)
	want := "pool event → child create 200 ms on average over 10 creates, 20 reconciles of 200 ms on average"
	if got := managerBreakdown(before, after); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := managerBreakdown(before, before); got != "no pool provision recorded" {
		t.Errorf("no change: %q", got)
	}
}
