// Package controller wires drover's controllers into a controller-runtime manager.
//
// Each controller has a name (the values accepted by the manager's --controllers flag) and the API kinds it
// needs. At start-up a controller whose kinds are not served by the API server is skipped with one error log
// line; the others still run.
package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/controller/nodepool"
	"github.com/drover-dev/drover/internal/controller/tapp"
	"github.com/drover-dev/drover/internal/controller/yurtappdaemon"
)

// Controller names accepted by --controllers.
const (
	NodePool            = "nodepool"
	YurtAppDaemon       = "yurtappdaemon"
	UnitedDaemonSet     = "uniteddaemonset"
	TApp                = "tapp"
	PersistentPodState  = "persistentpodstate"
	StagedBindingPolicy = "stagedbindingpolicy"
)

// Names lists every controller name, in start-up order.
var Names = []string{NodePool, YurtAppDaemon, UnitedDaemonSet, TApp, PersistentPodState, StagedBindingPolicy}

// Options configures the controllers started by Setup.
type Options struct {
	// Enabled holds the names of the controllers to start.
	Enabled sets.Set[string]
	// ManageNodePools starts the NodePool controller (and webhooks). False leaves NodePools to OpenYurt.
	ManageNodePools bool
	// NodePool configures the NodePool controller.
	NodePool nodepool.Options
	// YurtAppDaemon configures the YurtAppDaemon and UnitedDaemonSet controllers.
	YurtAppDaemon yurtappdaemon.Options
	// TApp configures the TApp controller.
	TApp tapp.Options
}

// ParseControllers turns the value of --controllers into a set of names. "*" or "" mean all of them; an
// unknown name is an error.
func ParseControllers(value string) (sets.Set[string], error) {
	value = strings.TrimSpace(value)
	if value == "" || value == "*" {
		return sets.New(Names...), nil
	}
	enabled := sets.New[string]()
	var unknown []string
	for name := range strings.SplitSeq(value, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(Names, name) {
			unknown = append(unknown, name)
			continue
		}
		enabled.Insert(name)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown controller name(s) %s; valid names are %s",
			strings.Join(unknown, ", "), strings.Join(Names, ", "))
	}
	return enabled, nil
}

// entry describes how to start one controller.
type entry struct {
	// kinds the controller needs served.
	kinds []schema.GroupVersionKind
	// off, when set and returning a reason, keeps the controller (and its webhooks) from starting.
	off func(Options) string
	// shared registers what several controllers share (field indexes); it runs once per manager however
	// many of those controllers start.
	shared func(ctx context.Context, indexer client.FieldIndexer) error
	// setup registers the controller's own indexes and the controller; nil means the controller is not part
	// of this build yet.
	setup func(ctx context.Context, mgr manager.Manager, opts Options) error
}

var nodePoolGVK = openyurtv1beta1.GroupVersion.WithKind("NodePool")

func registry() map[string]entry {
	return map[string]entry{
		NodePool: {
			kinds: []schema.GroupVersionKind{nodePoolGVK},
			off: func(opts Options) string {
				if !opts.ManageNodePools {
					return "NodePools are managed elsewhere (--manage-nodepools=false)"
				}
				return ""
			},
			setup: func(ctx context.Context, mgr manager.Manager, opts Options) error {
				return nodepool.Setup(ctx, mgr, opts.NodePool)
			},
		},
		YurtAppDaemon: {
			kinds:  []schema.GroupVersionKind{openyurtv1alpha1.GroupVersion.WithKind("YurtAppDaemon"), nodePoolGVK},
			shared: yurtappdaemon.SetupIndexes,
			setup: func(ctx context.Context, mgr manager.Manager, opts Options) error {
				return yurtappdaemon.SetupYurtAppDaemon(ctx, mgr, opts.YurtAppDaemon)
			},
		},
		UnitedDaemonSet: {
			kinds:  []schema.GroupVersionKind{openyurtv1alpha1.GroupVersion.WithKind("UnitedDaemonSet"), nodePoolGVK},
			shared: yurtappdaemon.SetupIndexes,
			setup: func(ctx context.Context, mgr manager.Manager, opts Options) error {
				return yurtappdaemon.SetupUnitedDaemonSet(ctx, mgr, opts.YurtAppDaemon)
			},
		},
		TApp: {
			kinds: []schema.GroupVersionKind{tkestackv1.GroupVersion.WithKind("TApp")},
			setup: func(ctx context.Context, mgr manager.Manager, opts Options) error {
				return tapp.Setup(ctx, mgr, opts.TApp)
			},
		},
		PersistentPodState:  {},
		StagedBindingPolicy: {},
	}
}

// Setup starts the enabled controllers whose APIs are served and returns the names of those it started.
func Setup(ctx context.Context, mgr manager.Manager, opts Options) ([]string, error) {
	log := ctrl.LoggerFrom(ctx)
	// The controllers' metrics go to the registry the manager serves; main registers them through here.
	for _, register := range []func(prometheus.Registerer) error{
		nodepool.RegisterMetrics, yurtappdaemon.RegisterMetrics, tapp.RegisterMetrics,
	} {
		if err := register(metrics.Registry); err != nil {
			return nil, err
		}
	}
	reg := registry()
	sharedDone := sets.New[string]()
	var started []string
	for _, name := range Names {
		if !opts.Enabled.Has(name) {
			continue
		}
		e := reg[name]
		if e.setup == nil {
			log.Info("Controller is not implemented in this build, skipping", "controller", name)
			continue
		}
		if e.off != nil {
			if reason := e.off(opts); reason != "" {
				log.Info("Controller disabled", "controller", name, "reason", reason)
				continue
			}
		}
		if err := served(mgr.GetRESTMapper(), e.kinds); err != nil {
			log.Error(err, "Controller skipped: its API is not served", "controller", name)
			continue
		}
		if e.shared != nil {
			key := fmt.Sprintf("%p", e.shared)
			if !sharedDone.Has(key) {
				if err := e.shared(ctx, mgr.GetFieldIndexer()); err != nil {
					return started, fmt.Errorf("setting up indexes of controller %s: %w", name, err)
				}
				sharedDone.Insert(key)
			}
		}
		if err := e.setup(ctx, mgr, opts); err != nil {
			return started, fmt.Errorf("setting up controller %s: %w", name, err)
		}
		started = append(started, name)
	}
	return started, nil
}

// served returns an error naming the first kind the API server does not serve.
func served(mapper meta.RESTMapper, kinds []schema.GroupVersionKind) error {
	for _, gvk := range kinds {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) || errors.Is(err, &meta.NoKindMatchError{}) {
				return fmt.Errorf("kind %s is not served: %w", gvk, err)
			}
			return fmt.Errorf("looking up kind %s: %w", gvk, err)
		}
	}
	return nil
}
