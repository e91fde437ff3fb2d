package kubestellarsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/scheme"
)

// ManagedClusterGVK is the OCM inventory kind whose name and labels the cluster selectors are matched
// against.
var ManagedClusterGVK = schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1", Kind: "ManagedCluster"}

// watchedResource is one resolved workload resource.
type watchedResource struct {
	gvr        schema.GroupVersionResource // as watched
	gvk        schema.GroupVersionKind     // as watched
	preferred  string                      // preferred version, recorded in Bindings
	namespaced bool
}

// statusKey is one unit of CombinedStatus work: one object of one Binding, or (zero obj) a sweep of every
// CombinedStatus of the Binding.
type statusKey struct {
	binding string
	obj     ObjectRef
}

// Sim is the KubeStellar stand-in. Create it with New, run it with Start; script returned statuses at any
// time, before or after Start.
type Sim struct {
	cfg        Config
	log        logr.Logger
	scripts    *scriptStore
	auto       *autoMemo
	collectors *collectorCache
	started    atomic.Bool
	ready      chan struct{}

	// Set by Start, before ready is closed.
	cache     cache.Cache
	client    client.Client // reads from the cache
	apiReader client.Reader // reads from the API server
	resources []watchedResource
	byGR      map[schema.GroupResource]watchedResource
	bindingQ  workqueue.TypedRateLimitingInterface[string]
	statusQ   workqueue.TypedRateLimitingInterface[statusKey]
}

// New returns a simulator configured by cfg; it does nothing until Start.
func New(cfg Config) *Sim {
	cfg = cfg.withDefaults()
	return &Sim{
		cfg:        cfg,
		log:        cfg.Logger,
		scripts:    newScriptStore(),
		auto:       newAutoMemo(),
		collectors: newCollectorCache(),
		ready:      make(chan struct{}),
	}
}

// Ready is closed once Start has synced its caches and the simulator is working.
func (s *Sim) Ready() <-chan struct{} { return s.ready }

// Start runs the simulator against the API server of restConfig until ctx is done. It returns an error if
// it cannot start (for example when the KubeStellar or ManagedCluster CRDs are not installed), and nil after
// a clean stop. A Sim starts once.
func (s *Sim) Start(ctx context.Context, restConfig *rest.Config) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("the simulator was already started")
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: stop every goroutine, then wait for them

	defer s.shutDownQueues()
	if err := s.setUp(ctx, restConfig); err != nil {
		return err
	}
	cacheErr := make(chan error, 1)
	wg.Go(func() { cacheErr <- s.cache.Start(ctx) })
	if !s.cache.WaitForCacheSync(ctx) {
		cancel()
		if err := <-cacheErr; err != nil {
			return fmt.Errorf("starting the simulator's cache: %w", err)
		}
		return errors.New("the simulator's cache did not sync")
	}
	if err := s.ensureReportNamespace(ctx); err != nil {
		return err
	}
	if s.cfg.ScriptConfigMaps {
		if err := s.startScriptConfigMaps(ctx, restConfig, &wg); err != nil {
			return err
		}
	}
	// Scripting calls enqueue work once ready is closed; what they stored before is seen by every worker,
	// since workers start after.
	close(s.ready)
	s.startWorkers(ctx, &wg)
	s.log.Info("KubeStellar simulator started", "resources", len(s.resources))
	<-ctx.Done()
	return nil
}

// shutDownQueues stops the work queues (and so the workers), if setUp got as far as creating them.
func (s *Sim) shutDownQueues() {
	if s.bindingQ != nil {
		s.bindingQ.ShutDown()
	}
	if s.statusQ != nil {
		s.statusQ.ShutDown()
	}
}

// Runnable adapts the simulator to a controller-runtime manager; it runs on every replica, not only on the
// leader.
func (s *Sim) Runnable(restConfig *rest.Config) manager.Runnable {
	return runnable{sim: s, restConfig: restConfig}
}

type runnable struct {
	sim        *Sim
	restConfig *rest.Config
}

func (r runnable) Start(ctx context.Context) error { return r.sim.Start(ctx, r.restConfig) }
func (r runnable) NeedLeaderElection() bool        { return false }

// setUp builds the clients, resolves the watched resources, creates the cache with its informers, indexes and
// event handlers, and the work queues.
func (s *Sim) setUp(ctx context.Context, restConfig *rest.Config) error {
	rc := rest.CopyConfig(restConfig)
	rc.QPS, rc.Burst = s.cfg.QPS, s.cfg.Burst
	httpClient, err := rest.HTTPClientFor(rc)
	if err != nil {
		return fmt.Errorf("building the simulator's HTTP client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(rc, httpClient)
	if err != nil {
		return fmt.Errorf("building the simulator's REST mapper: %w", err)
	}
	if err := s.resolveResources(mapper); err != nil {
		return err
	}
	sch := scheme.New()
	s.cache, err = cache.New(rc, cache.Options{
		HTTPClient: httpClient, Scheme: sch, Mapper: mapper, DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("building the simulator's cache: %w", err)
	}
	s.client, err = client.New(rc, client.Options{
		HTTPClient: httpClient, Scheme: sch, Mapper: mapper,
		Cache: &client.CacheOptions{Reader: s.cache, Unstructured: true},
	})
	if err != nil {
		return fmt.Errorf("building the simulator's client: %w", err)
	}
	s.apiReader, err = client.New(rc, client.Options{HTTPClient: httpClient, Scheme: sch, Mapper: mapper})
	if err != nil {
		return fmt.Errorf("building the simulator's API reader: %w", err)
	}
	s.bindingQ = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	s.statusQ = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[statusKey]())
	if err := s.addIndexes(ctx); err != nil {
		return err
	}
	return s.addEventHandlers(ctx)
}

// resolveResources maps every configured resource to its kind, scope and preferred version, dropping those
// KubeStellar never selects.
func (s *Sim) resolveResources(mapper meta.RESTMapper) error {
	s.byGR = map[schema.GroupResource]watchedResource{}
	for _, gvr := range s.cfg.Resources {
		if Excluded(gvr.Group, gvr.Resource) {
			s.log.Info("Not watching a resource KubeStellar never selects", "group", gvr.Group, "resource", gvr.Resource)
			continue
		}
		gvk, err := mapper.KindFor(gvr)
		if err != nil {
			return fmt.Errorf("resolving the kind of %s: %w", gvr, err)
		}
		preferred, err := mapper.RESTMapping(gvk.GroupKind())
		if err != nil {
			return fmt.Errorf("resolving the preferred version of %s: %w", gvk.GroupKind(), err)
		}
		if gvr.Version == "" {
			gvr.Version = gvk.Version
		}
		w := watchedResource{
			gvr: gvr, gvk: gvk, preferred: preferred.GroupVersionKind.Version,
			namespaced: preferred.Scope.Name() == meta.RESTScopeNameNamespace,
		}
		if _, dup := s.byGR[gvr.GroupResource()]; dup {
			continue
		}
		s.byGR[gvr.GroupResource()] = w
		s.resources = append(s.resources, w)
	}
	return nil
}

// ensureReportNamespace creates the namespace of the CombinedStatuses of cluster-scoped objects, as
// KubeStellar's status controller does when it starts.
func (s *Sim) ensureReportNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlv1alpha1.ReportNamespace}}
	if err := s.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", controlv1alpha1.ReportNamespace, err)
	}
	return nil
}

// SetReturnedStatus scripts the status cluster (or AllClusters) returns for an object. A nil status means
// the cluster has not reported, even if an AutoStatus function would give one. The status is copied.
func (s *Sim) SetReturnedStatus(cluster string, obj ObjectRef, status map[string]any) error {
	return s.SetReturnedStatuses([]ScriptEntry{{
		Cluster: cluster, Group: obj.Group, Resource: obj.Resource, Namespace: obj.Namespace, Name: obj.Name,
		Status: status,
	}})
}

// SetReturnedStatuses applies many script entries at once, in order (a later entry wins).
func (s *Sim) SetReturnedStatuses(entries []ScriptEntry) error {
	normalized, err := normalizeEntries(entries)
	if err != nil {
		return err
	}
	now := s.cfg.Now()
	changed := map[ObjectRef]bool{}
	for i := range normalized {
		s.scripts.set(normalized[i].Cluster, normalized[i].Ref(), normalized[i].Status, now)
		changed[normalized[i].Ref()] = true
	}
	s.enqueueObjects(changed)
	return nil
}

// ClearReturnedStatus removes what was scripted for an object in cluster (or AllClusters); the cluster then
// reports what AutoStatus gives, if anything.
func (s *Sim) ClearReturnedStatus(cluster string, obj ObjectRef) {
	s.scripts.clear(cluster, obj)
	s.enqueueObjects(map[ObjectRef]bool{obj: true})
}

// ReplaceScript replaces everything scripted so far with entries (a later entry wins).
func (s *Sim) ReplaceScript(entries []ScriptEntry) error {
	normalized, err := normalizeEntries(entries)
	if err != nil {
		return err
	}
	s.enqueueObjects(s.scripts.replace(normalized, s.cfg.Now()))
	return nil
}

func normalizeEntries(entries []ScriptEntry) ([]ScriptEntry, error) {
	out := make([]ScriptEntry, len(entries))
	for i := range entries {
		out[i] = entries[i]
		st, err := normalizeStatus(entries[i].Status)
		if err != nil {
			return nil, fmt.Errorf("script entry %d (%s in %s): %w", i, entries[i].Ref(), entries[i].Cluster, err)
		}
		out[i].Status = st
	}
	return out, nil
}
