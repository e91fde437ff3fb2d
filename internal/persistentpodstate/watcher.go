package persistentpodstate

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/drover-dev/drover/internal/persistentpodstate/ppsmetrics"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
)

type kindState int

const (
	kindUnknown kindState = iota // never asked for, or not supported
	kindPending                  // supported but not served (no CRD yet): retried periodically
	kindWatched                  // an informer runs and the controllers receive its events
)

// WatchSink adds a watch of the kind of obj (an empty unstructured object with its GroupVersionKind set) to
// a running controller.
type WatchSink func(obj *unstructured.Unstructured) error

type kindInfo struct {
	state  kindState
	gvk    schema.GroupVersionKind
	synced func() bool
}

// Watcher adds watches of unstructured workload kinds (the Kruise Advanced StatefulSet and whitelisted
// custom kinds) to the running PersistentPodState controller and generator, while the manager runs: no
// restart is needed when the whitelist gains a kind or a kind's CRD is installed later.
//
// At most one informer runs per group and kind, whatever versions are named; the first version seen wins
// and a version change needs a restart. A kind is asked for eagerly (each whitelisted kind after every
// whitelist change, the Advanced StatefulSet at start), lazily (a pod whose controller is a whitelisted kind
// not watched yet) and periodically while its CRD is missing. All requests are handled by one goroutine, so
// each kind is set up once (single flight) and discovery is never hammered.
//
// The watcher runs on the leader only, like the controllers whose watches it adds; requests made before it
// starts (or on a replica that is not the leader) wait for it.
type Watcher struct {
	Cache     cache.Cache
	Mapper    meta.RESTMapper
	Whitelist func() *whitelist.Snapshot
	Sinks     []WatchSink
	// KindsChanged is called with kinds that became watched, or that the whitelist added, changed or
	// removed: the PersistentPodStates targeting them are reconciled again.
	KindsChanged  func(ctx context.Context, kinds sets.Set[schema.GroupKind])
	RetryInterval time.Duration
	Log           logr.Logger

	mu      sync.Mutex
	kinds   map[schema.GroupKind]*kindInfo
	wanted  map[schema.GroupKind]string // kinds to set up, with a version hint ("" for the preferred one)
	changed sets.Set[schema.GroupKind]
	signal  chan struct{}
}

func (w *Watcher) init() {
	if w.kinds == nil {
		w.kinds, w.wanted, w.changed = map[schema.GroupKind]*kindInfo{}, map[schema.GroupKind]string{}, sets.New[schema.GroupKind]()
		w.signal = make(chan struct{}, 1)
	}
}

// NeedLeaderElection: the watches feed controllers that run on the leader only.
func (w *Watcher) NeedLeaderElection() bool { return true }

// Informer returns the watched version of gk, whether its informer has synced, and its state.
func (w *Watcher) Informer(gk schema.GroupKind) (schema.GroupVersionKind, func() bool, kindState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.init()
	k := w.kinds[gk]
	if k == nil {
		return schema.GroupVersionKind{}, nil, kindUnknown
	}
	return k.gvk, k.synced, k.state
}

// Request asks for a watch of gk (version: a hint, "" for the whitelist's or the preferred one). It never
// blocks; a kind already watched is ignored.
func (w *Watcher) Request(gk schema.GroupKind, version string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.init()
	if k := w.kinds[gk]; k != nil && k.state == kindWatched {
		return
	}
	if _, ok := w.wanted[gk]; !ok || version != "" {
		w.wanted[gk] = version
	}
	w.poke()
}

// WhitelistChanged is the whitelist store's subscriber: every kind the whitelist added or changed is asked
// for, and the PersistentPodStates of every added, changed or removed kind are reconciled again.
func (w *Watcher) WhitelistChanged(prev, next *whitelist.Snapshot) {
	added, removed, changed := whitelist.Diff(prev, next)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.init()
	for _, list := range [][]whitelist.Entry{added, removed, changed} {
		for _, e := range list {
			w.changed.Insert(e.GroupKind())
		}
	}
	for _, e := range append(added, changed...) {
		if k := w.kinds[e.GroupKind()]; k == nil || k.state != kindWatched {
			w.wanted[e.GroupKind()] = e.Version
		}
	}
	w.poke()
}

func (w *Watcher) poke() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// Start sets up the Advanced StatefulSet and every whitelisted kind, then serves requests and retries
// pending kinds every RetryInterval until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	w.Request(kruiseStatefulSetGK, "")
	for _, e := range w.Whitelist().Entries() {
		w.Request(e.GroupKind(), e.Version)
	}
	tick := time.NewTicker(w.RetryInterval)
	defer tick.Stop()
	for {
		w.process(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-w.signal:
		case <-tick.C:
			w.retryPending()
		}
	}
}

// retryPending asks again for every kind whose CRD was missing.
func (w *Watcher) retryPending() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for gk, k := range w.kinds {
		if k.state == kindPending {
			if _, ok := w.wanted[gk]; !ok {
				w.wanted[gk] = k.gvk.Version
			}
		}
	}
}

func (w *Watcher) process(ctx context.Context) {
	w.mu.Lock()
	wanted, changed := w.wanted, w.changed
	w.wanted, w.changed = map[schema.GroupKind]string{}, sets.New[schema.GroupKind]()
	w.mu.Unlock()
	for gk, version := range wanted {
		if w.ensure(ctx, gk, version) {
			changed.Insert(gk)
		}
	}
	w.updateGauges()
	if changed.Len() > 0 && w.KindsChanged != nil {
		w.KindsChanged(ctx, changed)
	}
}

// ensure sets up a watch of gk unless it is watched or no longer supported; it reports whether gk became
// watched.
func (w *Watcher) ensure(ctx context.Context, gk schema.GroupKind, version string) bool {
	if gk != kruiseStatefulSetGK {
		entry, ok := w.Whitelist().Lookup(gk)
		if !ok {
			// A lazy request for a kind that is not whitelisted, or a kind removed since: a pending one is
			// no longer retried (a watched one keeps its informer until restart; its events are ignored).
			w.mu.Lock()
			if k := w.kinds[gk]; k != nil && k.state != kindWatched {
				delete(w.kinds, gk)
			}
			w.mu.Unlock()
			return false
		}
		if entry.Version != "" {
			version = entry.Version
		}
	}
	w.mu.Lock()
	k := w.kinds[gk]
	if k == nil {
		k = &kindInfo{}
		w.kinds[gk] = k
	}
	state := k.state
	w.mu.Unlock()
	if state == kindWatched {
		return false
	}
	log := w.Log.WithValues("kind", gk.String())
	var mapping *meta.RESTMapping
	var err error
	if version != "" {
		mapping, err = w.Mapper.RESTMapping(gk, version)
	} else {
		mapping, err = w.Mapper.RESTMapping(gk)
	}
	if err != nil {
		w.setPending(gk, schema.GroupVersionKind{Group: gk.Group, Version: version, Kind: gk.Kind})
		if !meta.IsNoMatchError(err) {
			log.Error(err, "Looking up a workload kind failed; retried periodically")
		} else if state != kindPending {
			log.Info("Workload kind not served yet; retried periodically", "retryInterval", w.RetryInterval)
		}
		return false
	}
	return w.watch(ctx, gk, mapping.GroupVersionKind, log)
}

func (w *Watcher) watch(ctx context.Context, gk schema.GroupKind, gvk schema.GroupVersionKind, log logr.Logger) bool {
	var errs []error
	for _, sink := range w.Sinks {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		errs = append(errs, sink(u))
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	informer, err := w.Cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if err := errors.Join(append(errs, err)...); err != nil {
		log.Error(err, "Watching a workload kind failed; retried periodically")
		w.setPending(gk, gvk)
		return false
	}
	w.mu.Lock()
	w.kinds[gk] = &kindInfo{state: kindWatched, gvk: gvk, synced: informer.HasSynced}
	w.mu.Unlock()
	log.Info("Watching workload kind", "version", gvk.Version)
	return true
}

func (w *Watcher) setPending(gk schema.GroupKind, gvk schema.GroupVersionKind) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kinds[gk] = &kindInfo{state: kindPending, gvk: gvk}
}

// updateGauges exports how many custom kinds are watched and how many wait for their CRD (the Advanced
// StatefulSet is not a custom kind).
func (w *Watcher) updateGauges() {
	w.mu.Lock()
	defer w.mu.Unlock()
	var watched, pending int
	for gk, k := range w.kinds {
		if gk == kruiseStatefulSetGK {
			continue
		}
		switch k.state {
		case kindWatched:
			watched++
		case kindPending:
			pending++
		}
	}
	ppsmetrics.WatchedCustomKinds.Set(float64(watched))
	ppsmetrics.PendingCustomKinds.Set(float64(pending))
}
