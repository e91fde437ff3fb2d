package whitelist

import (
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	"github.com/drover-dev/drover/internal/kit"
)

// The Warning event recorded on the ConfigMap when its whitelist does not parse.
const (
	reasonInvalidWhitelist = "InvalidWhitelist"
	actionParseWhitelist   = "ParseWhitelist"
)

// StoreOptions configures a Store.
type StoreOptions struct {
	// Namespace and Name locate the whitelist ConfigMap; an empty Name means DefaultConfigMapName.
	Namespace, Name string
	// Recorder records the Warning event of an invalid whitelist on the ConfigMap; nil records none.
	Recorder events.EventRecorder
	// ParseErrors counts the whitelist values that failed to parse; nil counts nothing.
	ParseErrors prometheus.Counter
	Log         logr.Logger
}

// Store publishes the current whitelist snapshot through an atomic pointer: its readers (the controller,
// the generator, the workload finder and the webhooks) never do I/O or parsing. Every replica runs one,
// because the webhooks are served by every replica, not only the leader.
//
// A value is parsed once per change. When it fails to parse, the previous snapshot stays in force (the empty
// whitelist when nothing parsed before), so a bad edit never takes kinds away and the webhooks never fail
// because of the whitelist.
type Store struct {
	opts    StoreOptions
	current atomic.Pointer[Snapshot]

	mu      sync.Mutex // serializes Apply, so that subscribers see changes in order
	lastRaw string     // the last value parsed, successfully or not
	subs    []func(prev, next *Snapshot)
}

// NewStore returns a store that publishes the empty snapshot until a whitelist is applied.
func NewStore(opts StoreOptions) *Store {
	if opts.Name == "" {
		opts.Name = DefaultConfigMapName
	}
	s := &Store{opts: opts}
	s.current.Store(Empty())
	return s
}

// Load returns the published snapshot, never nil. It takes no lock.
func (s *Store) Load() *Snapshot { return s.current.Load() }

// Subscribe registers fn. After every change of the published snapshot, fn is called with the previous and
// the new snapshot, synchronously, from the goroutine that applied the change; a value that parses to an
// equal snapshot, or fails to parse, calls nothing. Subscribers are called in registration order while the
// store serializes changes, so fn must be quick and must not call Apply. Register before Start.
func (s *Store) Subscribe(fn func(prev, next *Snapshot)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs = append(s.subs, fn)
}

// Apply parses the whitelist of cm (nil: the ConfigMap was deleted, which leaves the whitelist empty) and
// publishes the result. A value equal to the last value parsed, whether that parse succeeded or not, is not
// parsed again and Apply returns nil: informer resyncs and unrelated edits of the ConfigMap cost nothing and
// repeat no event.
//
// On a parse error the published snapshot stays as it is; the error is logged, counted, recorded as a
// Warning event on cm, and returned.
func (s *Store) Apply(cm *corev1.ConfigMap) error {
	raw := rawValue(cm)
	s.mu.Lock()
	defer s.mu.Unlock()
	if raw == s.lastRaw {
		return nil
	}
	s.lastRaw = raw
	next, dropped, err := parse(raw)
	if err != nil {
		s.reportParseError(cm, err)
		return err
	}
	if len(dropped) > 0 {
		s.opts.Log.Info("Ignoring whitelist entries", "configMap", s.key(), "entries", dropped)
	}
	prev := s.current.Load()
	if prev.equal(next) {
		return nil
	}
	s.current.Store(next)
	added, removed, changed := Diff(prev, next)
	s.opts.Log.Info("Whitelist changed", "configMap", s.key(), "kinds", kinds(next.list()),
		"added", kinds(added), "removed", kinds(removed), "changed", kinds(changed))
	for _, fn := range s.subs {
		fn(prev, next)
	}
	return nil
}

// reportParseError logs, counts and records a value that failed to parse.
func (s *Store) reportParseError(cm *corev1.ConfigMap, err error) {
	inForce := len(s.current.Load().list())
	s.opts.Log.Error(err, "Invalid whitelist, keeping the previous one", "configMap", s.key(), "key", DataKey,
		"kindsInForce", inForce)
	if s.opts.ParseErrors != nil {
		s.opts.ParseErrors.Inc()
	}
	if s.opts.Recorder != nil && cm != nil {
		note := kit.Truncate(err.Error(), kit.MaxMessageBytes-100)
		s.opts.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, reasonInvalidWhitelist, actionParseWhitelist,
			"Key %s: %s; the previous whitelist stays in force (custom kinds: %d)", DataKey, note, inForce)
	}
}

// key renders the ConfigMap's namespace/name for logs.
func (s *Store) key() string { return s.opts.Namespace + "/" + s.opts.Name }

// kinds renders entries as kind.group for logs.
func kinds(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.GroupKind().String()
	}
	return out
}
