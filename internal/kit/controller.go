package kit

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/drover-dev/drover/internal/index"
)

// Controller describes one controller to the manager, in one place: everything the manager needs to know
// about it. A controller package exports a function returning a fresh Controller whose Flags are bound to
// that Controller's own options (with their defaults already set), so two managers in one process, as tests
// start, do not share settings.
type Controller struct {
	// Name is the controller's name: the value of --controllers, the controller-runtime controller name,
	// the logger name and the event source ("drover-" + Name).
	Name string
	// Kinds are the kinds the controller needs served; when one is not, the controller and its webhooks are
	// skipped with one log line (its CRD is not installed).
	Kinds []schema.GroupVersionKind
	// Flags holds the controller's flags, bound to its options; nil for none. AddFlags adds them to the
	// manager's command line, and tests set them with Flags.Set.
	Flags *flag.FlagSet
	// Disabled, when set, returns why the controller must not start with the flags given ("" to start).
	Disabled func() string
	// Indexes are the cache field indexes the controller and its webhooks read through. An index that
	// several controllers list (same object type and field) is registered once.
	Indexes []index.Index
	// RegisterMetrics registers the controller's own collectors with the manager's registry when it
	// starts; nil for none.
	RegisterMetrics func(prometheus.Registerer) error
	// Setup builds the controller on mgr; the indexes are registered before it runs.
	Setup func(ctx context.Context, mgr manager.Manager) error
	// Webhooks registers the controller's admission webhooks with mgr's webhook server; nil for none.
	Webhooks func(mgr manager.Manager) error
	// Cache adjusts the manager's cache options for this controller before the manager is built (after the
	// flags are parsed): what a type caches, or a type restricted to one object. nil for none.
	Cache func(*cache.Options)
}

// CacheOptions applies the Cache adjustments of the enabled controllers, in order, to opts.
func CacheOptions(opts cache.Options, controllers []*Controller, enabled sets.Set[string]) cache.Options {
	for _, c := range controllers {
		if c.Cache != nil && enabled.Has(c.Name) {
			c.Cache(&opts)
		}
	}
	return opts
}

// Names lists the names of controllers in order.
func Names(controllers []*Controller) []string {
	out := make([]string, len(controllers))
	for i, c := range controllers {
		out[i] = c.Name
	}
	return out
}

// AddFlags adds the flags of every controller to fs.
func AddFlags(fs *flag.FlagSet, controllers []*Controller) {
	for _, c := range controllers {
		if c.Flags != nil {
			c.Flags.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
		}
	}
}

// NewFlagSet returns an empty flag set for a Controller's Flags.
func NewFlagSet(name string) *flag.FlagSet {
	return flag.NewFlagSet(name, flag.ContinueOnError)
}

// Start sets up, in order, the enabled controllers whose kinds are served: their indexes (each once per
// manager), metrics (in reg) and the controller itself, and, with webhooks, their admission webhooks. A
// controller disabled by its flags or whose kinds are not served is skipped with one log line. It returns
// the names of the controllers it started.
func Start(ctx context.Context, mgr manager.Manager, controllers []*Controller, enabled sets.Set[string],
	reg prometheus.Registerer, webhooks bool) ([]string, error) {
	log := ctrl.LoggerFrom(ctx)
	indexed := sets.New[string]()
	var started []string
	for _, c := range controllers {
		if !enabled.Has(c.Name) {
			continue
		}
		if c.Disabled != nil {
			if reason := c.Disabled(); reason != "" {
				log.Info("Controller disabled", "controller", c.Name, "reason", reason)
				continue
			}
		}
		if err := Served(mgr.GetRESTMapper(), c.Kinds); err != nil {
			log.Error(err, "Controller skipped: its API is not served", "controller", c.Name)
			continue
		}
		if err := c.start(ctx, mgr, indexed, reg, webhooks); err != nil {
			return started, fmt.Errorf("setting up controller %s: %w", c.Name, err)
		}
		started = append(started, c.Name)
	}
	return started, nil
}

func (c *Controller) start(ctx context.Context, mgr manager.Manager, indexed sets.Set[string],
	reg prometheus.Registerer, webhooks bool) error {
	for _, ix := range c.Indexes {
		key := fmt.Sprintf("%T/%s", ix.Object, ix.Field)
		if indexed.Has(key) {
			continue
		}
		if err := index.Register(ctx, mgr.GetFieldIndexer(), []index.Index{ix}); err != nil {
			return err
		}
		indexed.Insert(key)
	}
	if c.RegisterMetrics != nil {
		if err := c.RegisterMetrics(reg); err != nil {
			return err
		}
	}
	if err := c.Setup(ctx, mgr); err != nil {
		return err
	}
	if webhooks && c.Webhooks != nil {
		if err := c.Webhooks(mgr); err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
	}
	return nil
}

// Served returns an error naming the first kind the API server does not serve.
func Served(mapper meta.RESTMapper, kinds []schema.GroupVersionKind) error {
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

// SetFlag sets the flag name of whichever controller in controllers has it (tests use it to change a
// default).
func SetFlag(controllers []*Controller, name, value string) error {
	for _, c := range controllers {
		if c.Flags != nil && c.Flags.Lookup(name) != nil {
			return c.Flags.Set(name, value)
		}
	}
	return fmt.Errorf("no controller has the flag --%s", name)
}
