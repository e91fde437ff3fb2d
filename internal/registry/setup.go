// Package controller holds drover's registry of controllers and starts them in a controller-runtime
// manager.
//
// Each controller package describes itself once, as a kit.Controller (name, kinds, flags, indexes, metrics,
// setup, webhooks); the registry is the list of those descriptions. At start-up a controller whose kinds
// are not served by the API server is skipped with one log line; the others still run.
package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/nodepool"
	"github.com/drover-dev/drover/internal/persistentpodstate"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy"
	"github.com/drover-dev/drover/internal/tapp"
	"github.com/drover-dev/drover/internal/webhook"
	"github.com/drover-dev/drover/internal/yurtappdaemon"
)

// Registry returns a fresh description of every controller, in start-up order. Adding a controller is one
// line here.
func Registry() []*kit.Controller {
	return slices.Concat(
		[]*kit.Controller{nodepool.Controller()},
		yurtappdaemon.Controllers(), // YurtAppDaemon and its earlier name, UnitedDaemonSet
		[]*kit.Controller{tapp.Controller()},
		[]*kit.Controller{persistentpodstate.Controller()},
		[]*kit.Controller{stagedbindingpolicy.Controller()},
	)
}

// ParseControllers turns the value of --controllers into a set of the registry's names. "*" or "" mean
// all of them; an unknown name is an error.
func ParseControllers(value string, registry []*kit.Controller) (sets.Set[string], error) {
	names := kit.Names(registry)
	value = strings.TrimSpace(value)
	if value == "" || value == "*" {
		return sets.New(names...), nil
	}
	enabled := sets.New[string]()
	var unknown []string
	for name := range strings.SplitSeq(value, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(names, name) {
			unknown = append(unknown, name)
			continue
		}
		enabled.Insert(name)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown controller name(s) %s; valid names are %s",
			strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	return enabled, nil
}

// Setup starts the enabled controllers of the registry whose APIs are served, with their metrics in the
// registry the manager serves and, with webhooks, their admission webhooks and the conversion webhook of the
// CRDs the registry's controllers declare, enabled or not (kit.ConvertedCRDs). It returns the names of those it started.
func Setup(ctx context.Context, mgr manager.Manager, registry []*kit.Controller, enabled sets.Set[string], webhooks bool) ([]string, error) {
	started, err := kit.Start(ctx, mgr, registry, enabled, metrics.Registry, webhooks)
	if err != nil {
		return started, err
	}
	if webhooks && len(kit.ConvertedCRDs(registry)) > 0 {
		webhook.ServeConversion(mgr)
	}
	return started, nil
}

// SetNamespace gives every controller of the registry the manager's namespace (--namespace), before the cache
// options are merged and the controllers set up: the one place a controller learns where the manager runs.
func SetNamespace(registry []*kit.Controller, namespace string) {
	for _, c := range registry {
		c.Namespace = namespace
	}
}
