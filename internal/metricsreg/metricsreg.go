// Package metricsreg registers drover's metrics with the manager's registry. The controllers' packages
// define their collectors; the manager registers them through registry.Setup, not at package init, so a
// binary or test that only imports a package registers nothing.
package metricsreg

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers every collector with reg. A collector already registered (Setup called again in one
// process, as tests do) is not an error.
func Register(reg prometheus.Registerer, collectors ...prometheus.Collector) error {
	for _, c := range collectors {
		var already prometheus.AlreadyRegisteredError
		if err := reg.Register(c); err != nil && !errors.As(err, &already) {
			return fmt.Errorf("registering a metric: %w", err)
		}
	}
	return nil
}
