package metricsreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "drover_test_total", Help: "test"})
	if err := Register(reg, c); err != nil {
		t.Fatalf("first registration: %v", err)
	}
	if err := Register(reg, c); err != nil {
		t.Errorf("registering the same collector again: %v", err)
	}
	clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: "drover_test_total", Help: "other help"})
	if err := Register(reg, clash); err == nil {
		t.Error("a different collector under a registered name was accepted")
	}
}
