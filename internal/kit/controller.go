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
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	// Webhooks declares the controller's admission webhooks (their configurations are generated from this
	// list); ServeWebhooks registers their handlers on mgr's webhook server, at the declared paths. Start
	// fails when a declared path is left without a handler.
	Webhooks      []Webhook
	ServeWebhooks func(mgr manager.Manager) error
	// CRDs are the files of the CustomResourceDefinitions the controller installs (its own kinds only, not
	// those it reads), by the names controller-gen gives them. hack/registrygen puts them into the
	// controller's kustomize component.
	CRDs []string
	// Objects are one object of each API package the controller serves or reads (&tkestackv1.TApp{}, ...);
	// hack/registrygen adds those packages to the scheme (internal/scheme).
	Objects []client.Object
	// Cache declares what the controller needs cached of the types it restricts (MergeCacheNeeds merges the
	// enabled controllers' needs before the manager is built, after the flags are parsed). It is a function because a
	// need may depend on the flags. A type the controller reads whole needs no declaration; nil for none.
	Cache func() []CacheNeed
	// ConversionCRDs are the names (<plural>.<group>) of the CustomResourceDefinitions, among CRDs, whose
	// versions the manager converts for this controller (docs/design/conversion.md). It is the one source of
	// their conversion: hack/registrygen writes each one's spec.conversion stanza (a webhook at the manager's
	// Service, path /convert), the manager serves /convert whenever any controller of its registry declares
	// some, enabled or not (ConvertedCRDs), and with --cert-mode=self it injects its CA into their
	// clientConfig (those of a controller --controllers leaves out only when installed). The kind's
	// types implement conversion.Hub (one version) and conversion.Convertible (the others).
	ConversionCRDs []string
	// Namespace is the manager's namespace (--namespace), set by the manager after parsing its flags and before
	// Cache and Setup are called (registry.SetNamespace); empty when nobody set it. A controller that reads
	// objects of the manager's own namespace takes it from here.
	Namespace string
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

// DeprecatedAliasUsage starts the usage of a flag kept only as an old name of another; the README's flag
// table leaves such flags out.
const DeprecatedAliasUsage = "Deprecated alias of --"

// Alias registers old as another name of fs's flag name, so that command lines written for an earlier
// release keep working; every controller's flags are named --<controller>-<what>, and an old name that
// did not follow the rule stays as an alias. It panics when name is not in fs (a programming error).
func Alias(fs *flag.FlagSet, old, name string) {
	f := fs.Lookup(name)
	if f == nil {
		panic("kit.Alias: no flag --" + name)
	}
	fs.Var(f.Value, old, DeprecatedAliasUsage+name+".")
}

// NewFlagSet returns an empty flag set for a Controller's Flags.
func NewFlagSet(name string) *flag.FlagSet {
	return flag.NewFlagSet(name, flag.ContinueOnError)
}

// Start sets up, in order, the enabled controllers whose kinds are served: their indexes (each once per
// manager), metrics (in reg) and the controller itself, and, with webhooks, their admission webhooks. A
// controller that is not enabled, disabled by its flags or whose kinds are not served is off: one log line
// says so and why, and with webhooks its declared webhooks admit every request unchanged, so its kinds stay
// writable whatever webhook configurations are installed (docs/design/controller-kit.md, "A controller
// that is off"). It returns the names of the controllers it started.
func Start(ctx context.Context, mgr manager.Manager, controllers []*Controller, enabled sets.Set[string],
	reg prometheus.Registerer, webhooks bool) ([]string, error) {
	log := ctrl.LoggerFrom(ctx)
	indexed := sets.New[string]()
	var started []string
	for _, c := range controllers {
		reason := c.offReason(mgr, enabled)
		if reason != "" {
			log.Info("Controller off: its webhooks admit its kinds unchanged", "controller", c.Name, "reason", reason)
			if webhooks {
				serveAllowAll(mgr.GetWebhookServer(), c.Name, reason, c.Webhooks)
			}
			continue
		}
		if err := c.start(ctx, mgr, indexed, reg, webhooks); err != nil {
			return started, fmt.Errorf("setting up controller %s: %w", c.Name, err)
		}
		started = append(started, c.Name)
	}
	return started, nil
}

// offReason returns why c does not run, or "" when it starts.
func (c *Controller) offReason(mgr manager.Manager, enabled sets.Set[string]) string {
	if !enabled.Has(c.Name) {
		return "not in --controllers"
	}
	if c.Disabled != nil {
		if reason := c.Disabled(); reason != "" {
			return reason
		}
	}
	if err := Served(mgr.GetRESTMapper(), c.Kinds); err != nil {
		return "its API is not served: " + err.Error()
	}
	return ""
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
	if webhooks && c.ServeWebhooks != nil {
		if err := c.ServeWebhooks(mgr); err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
	}
	if webhooks {
		if err := checkServed(mgr.GetWebhookServer(), c.Webhooks); err != nil {
			return err
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

// ConvertedCRDs lists the CRDs whose conversion webhook the manager serves: those every controller of the
// registry declares in ConversionCRDs, enabled or not, and runs or not. Conversion is a pure function of the
// kind's types (every kind is in the manager's scheme), and a CRD installed with its conversion webhook at the
// manager cannot be read in any version but its storage version without it: a controller left out by
// --controllers (its CRD still installed, as make deploy installs every CRD, or kept by a chart upgrade) or off
// for another reason still has its CRD's objects converted. The manager serves /convert when the list is not
// empty, and keeps its CA in each listed CRD that calls its Service (certs).
func ConvertedCRDs(controllers []*Controller) []string {
	var out []string
	for _, c := range controllers {
		out = append(out, c.ConversionCRDs...)
	}
	return out
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
