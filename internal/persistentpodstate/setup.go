// Package persistentpodstate runs PersistentPodState (apps.kruise.io): the controller that records where
// each pod of a StatefulSet-like workload ran, the generator that makes PPS from workload annotations, the
// custom-workload whitelist and the watches it adds while the manager runs, and the two webhooks (the pod
// webhook that steers a recreated pod back, and the PPS validating webhook). They start and stop together:
// the controller's name in --controllers switches all of them. All of them work on v1beta1, the storage
// version and the hub; v1alpha1 is served through the conversion webhook. The user guide is
// docs/persistentpodstate.md; the rules are in docs/design/persistentpodstate.md.
package persistentpodstate

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/persistentpodstate/core"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsmetrics"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
)

// Names of the controllers (--controllers, logs, metrics, event source).
const (
	ControllerName = "persistentpodstate"
	GeneratorName  = "persistentpodstate-generator"
)

// DefaultManagerNamespace is the namespace of the whitelist ConfigMap when the manager's namespace is not set
// (kit.Controller.Namespace, from the manager's --namespace).
const DefaultManagerNamespace = "drover-system"

// RBAC: drover only reads workloads. Custom kinds get read access through ClusterRoles labelled
// drover.dev/aggregate-to-manager=true (config/rbac/aggregated_role.yaml).
//
// +kubebuilder:rbac:groups=apps.kruise.io,resources=persistentpodstates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=persistentpodstates/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.tkestack.io,resources=tapps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",namespace=drover-system,resources=configmaps,verbs=get;list;watch

// Options are the controller's flags.
type Options struct {
	Workers         int
	ConfigMap       string
	RetryInterval   time.Duration
	SyncTimeout     time.Duration
	SizeLimit       int
	SkipMissingNode bool
	IdentityKeys    string
}

// Controller describes PersistentPodState to the manager: the controller, the generator, the whitelist
// store, the watcher and both webhooks.
func Controller() *kit.Controller {
	gvk := kruisev1beta1.GroupVersion.WithKind("PersistentPodState")
	opts := &Options{}
	fs := kit.NewFlagSet(ControllerName)
	fs.IntVar(&opts.Workers, "persistentpodstate-workers", 3, "Concurrent PersistentPodState reconciles (and as many of its generator).")
	fs.StringVar(&opts.ConfigMap, "pps-whitelist-configmap", whitelist.DefaultConfigMapName,
		"ConfigMap in the manager's namespace (--namespace) whose key "+whitelist.DataKey+" lists custom StatefulSet-like kinds for PersistentPodState.")
	fs.DurationVar(&opts.RetryInterval, "pps-kind-retry-interval", 30*time.Second,
		"How often a whitelisted kind whose CRD is not served yet is looked up again, and an unavailable target retried.")
	fs.DurationVar(&opts.SyncTimeout, "pps-informer-sync-timeout", 10*time.Second,
		"Longest wait for a custom kind's informer to sync before its PersistentPodStates are marked TargetNotReadable (usually missing RBAC).")
	fs.IntVar(&opts.SizeLimit, "pps-status-size-limit", core.DefaultSizeLimit,
		"Estimated stored size (bytes) a PersistentPodState may reach; past it new pods are not recorded (etcd refuses objects over about 1.5 MiB).")
	fs.BoolVar(&opts.SkipMissingNode, "pps-skip-missing-node", true,
		"Do not pin a recreated pod to its recorded node when that node was deleted (only the node identity keys are dropped).")
	fs.StringVar(&opts.IdentityKeys, "pps-node-identity-keys", corev1.LabelHostname,
		"Comma-separated node label keys that name a single node, dropped by --pps-skip-missing-node.")
	s := &setup{opts: opts}
	s.desc = &kit.Controller{
		Name:            ControllerName,
		Kinds:           []schema.GroupVersionKind{gvk},
		Flags:           fs,
		Indexes:         ppsindex.Indexes(),
		RegisterMetrics: ppsmetrics.Register,
		Setup:           s.run,
		Webhooks: []kit.Webhook{
			ppsWebhook(gvk),
			podWebhook(),
		},
		ServeWebhooks: s.webhooks,
		CRDs:          []string{"apps.kruise.io_persistentpodstates.yaml"},
		// v1alpha1 and v1beta1 are served, v1beta1 stored: the manager converts between them, so both versions
		// are in the scheme.
		ConversionCRDs: []string{"persistentpodstates.apps.kruise.io"},
		Objects:        []client.Object{&kruisev1beta1.PersistentPodState{}, &kruisev1alpha1.PersistentPodState{}, &tkestackv1.TApp{}},
		Cache:          s.cache,
	}
	return s.desc
}

// setup carries what the controller's Setup builds to its Webhooks (called after it).
type setup struct {
	opts  *Options
	desc  *kit.Controller // the description, whose Namespace the manager sets after parsing its flags
	store *whitelist.Store
}

// namespace is the manager's namespace, where the whitelist ConfigMap is read.
func (s *setup) namespace() string {
	if s.desc.Namespace != "" {
		return s.desc.Namespace
	}
	return DefaultManagerNamespace
}

// cache declares what PersistentPodState caches of the types others restrict: every StatefulSet (any may be
// a target, not only YurtAppDaemon's children) and, of ConfigMaps, the whitelist alone.
func (s *setup) cache() []kit.CacheNeed {
	return []kit.CacheNeed{
		{Object: &appsv1.StatefulSet{}},
		{Object: &corev1.ConfigMap{}, Only: whitelist.CacheByObject(s.namespace(), s.opts.ConfigMap)},
	}
}

func (s *setup) run(ctx context.Context, mgr manager.Manager) error {
	log := ctrl.LoggerFrom(ctx).WithName(ControllerName)
	rec := mgr.GetEventRecorder("drover-" + ControllerName)
	s.store = whitelist.NewStore(whitelist.StoreOptions{Namespace: s.namespace(), Name: s.opts.ConfigMap,
		Recorder: rec, ParseErrors: ppsmetrics.WhitelistParseErrors, Log: log.WithName("whitelist")})
	if err := mgr.Add(s.store.Runnable(mgr.GetCache())); err != nil {
		return fmt.Errorf("adding the whitelist store: %w", err)
	}
	// Nodes are read by the controller and by the pod webhook on every replica: start that informer now
	// rather than on the first admission. They are cached typed, the one Node informer NodePool and TApp
	// share, rather than a second, metadata-only one.
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.Node{}, cache.BlockUntilSynced(false)); err != nil {
		return fmt.Errorf("watching nodes: %w", err)
	}
	wl := s.store.Load
	watcher := &Watcher{Cache: mgr.GetCache(), Mapper: mgr.GetRESTMapper(), Whitelist: wl,
		RetryInterval: s.opts.RetryInterval, Log: log.WithName("watcher")}
	finder := &Finder{Reader: mgr.GetClient(), Whitelist: wl, Watcher: watcher, SyncTimeout: s.opts.SyncTimeout}
	tappServed := kit.Served(mgr.GetRESTMapper(), []schema.GroupVersionKind{tkestackv1.GroupVersion.WithKind("TApp")}) == nil

	ppsCtrl, kinds, err := s.buildController(mgr, finder, watcher, wl, rec, tappServed)
	if err != nil {
		return err
	}
	genCtrl, err := s.buildGenerator(mgr, finder, wl, rec, tappServed)
	if err != nil {
		return err
	}
	m := mapper{reader: mgr.GetClient(), whitelist: wl}
	watcher.Sinks = []WatchSink{
		func(u *unstructured.Unstructured) error {
			return ppsCtrl.Watch(source.Kind[client.Object](mgr.GetCache(), u, workloadHandler{mapper: m}))
		},
		func(u *unstructured.Unstructured) error {
			return genCtrl.Watch(source.TypedKind[client.Object, WorkloadKey](mgr.GetCache(), u, generatorWorkloadHandler{whitelist: wl}))
		},
	}
	watcher.KindsChanged = func(ctx context.Context, changed sets.Set[schema.GroupKind]) {
		enqueueKinds(ctx, mgr.GetClient(), kinds, changed)
	}
	s.store.Subscribe(watcher.WhitelistChanged)
	if err := mgr.Add(watcher); err != nil {
		return fmt.Errorf("adding the workload watcher: %w", err)
	}
	return nil
}

// buildController builds the PPS controller. It returns the channel through which PPS are enqueued when
// the whitelist or the watches change.
func (s *setup) buildController(mgr manager.Manager, finder *Finder, watcher *Watcher, wl func() *whitelist.Snapshot,
	rec events.EventRecorder, tappServed bool) (controller.Controller, chan event.GenericEvent, error) {
	r := NewReconciler(Config{Client: mgr.GetClient(), Finder: finder, Whitelist: wl, Recorder: rec,
		SizeLimit: s.opts.SizeLimit, RetryInterval: s.opts.RetryInterval})
	m := mapper{reader: mgr.GetClient(), whitelist: wl}
	kinds := make(chan event.GenericEvent, 1024)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kruisev1beta1.PersistentPodState{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, podHandler{mapper: m, watcher: watcher, inLife: r.inLife}).
		Watches(&appsv1.StatefulSet{}, workloadHandler{mapper: m, gk: statefulSetGK}).
		WatchesRawSource(source.Channel(kinds, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(s.opts.Workers, 1)})
	if tappServed {
		b = b.Watches(&tkestackv1.TApp{}, workloadHandler{mapper: m, gk: tappGK})
	}
	c, err := b.Build(r)
	if err != nil {
		return nil, nil, fmt.Errorf("building the %s controller: %w", ControllerName, err)
	}
	return c, kinds, nil
}

func (s *setup) buildGenerator(mgr manager.Manager, finder *Finder, wl func() *whitelist.Snapshot, rec events.EventRecorder,
	tappServed bool) (controller.TypedController[WorkloadKey], error) {
	g := NewGenerator(GeneratorConfig{Client: mgr.GetClient(), Finder: finder, Whitelist: wl, Recorder: rec})
	c, err := controller.NewTyped[WorkloadKey](GeneratorName, mgr, controller.TypedOptions[WorkloadKey]{
		Reconciler: g, MaxConcurrentReconciles: max(s.opts.Workers, 1)})
	if err != nil {
		return nil, fmt.Errorf("building the %s controller: %w", GeneratorName, err)
	}
	watches := []source.TypedSource[WorkloadKey]{
		source.TypedKind[client.Object, WorkloadKey](mgr.GetCache(), &appsv1.StatefulSet{}, generatorWorkloadHandler{gk: statefulSetGK, whitelist: wl}),
		source.TypedKind[client.Object, WorkloadKey](mgr.GetCache(), &kruisev1beta1.PersistentPodState{}, generatorPPSHandler{}),
	}
	if tappServed {
		watches = append(watches, source.TypedKind[client.Object, WorkloadKey](mgr.GetCache(), &tkestackv1.TApp{},
			generatorWorkloadHandler{gk: tappGK, whitelist: wl}))
	}
	for _, w := range watches {
		if err := c.Watch(w); err != nil {
			return nil, fmt.Errorf("watching for the %s controller: %w", GeneratorName, err)
		}
	}
	return c, nil
}

// enqueueKinds reconciles every PPS whose target kind is in changed. A rare event (the whitelist changed
// or a kind's watch started), so a list of all PPS is acceptable.
func enqueueKinds(ctx context.Context, r client.Reader, out chan<- event.GenericEvent, changed sets.Set[schema.GroupKind]) {
	var list kruisev1beta1.PersistentPodStateList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing PersistentPodStates after a whitelist change failed")
		return
	}
	for i := range list.Items {
		p := &list.Items[i]
		if gk, err := kruisev1beta1.TargetGroupKind(p.Spec.TargetRef); err == nil && changed.Has(gk) {
			select {
			case out <- event.GenericEvent{Object: p}:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (s *setup) webhooks(mgr manager.Manager) error {
	return SetupPersistentPodStateWebhooks(mgr, WebhookOptions{
		Allowed:          func(gk schema.GroupKind) bool { return s.store.Load().Allowed(gk) },
		Reader:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Recorder:         mgr.GetEventRecorder("drover-" + ControllerName),
		IdentityKeys:     kruisev1beta1.ParseCommaList(s.opts.IdentityKeys),
		SkipMissingNode:  s.opts.SkipMissingNode,
		NodeCheckTimeout: time.Second,
	})
}
