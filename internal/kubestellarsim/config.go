package kubestellarsim

import (
	"math/rand/v2"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Client-side rate limits of the simulator's own client. 1,000 clusters and 300 objects with a collector each
// mean a few hundred CombinedStatus writes in a burst; 500 QPS with a burst of 1,000 lets such a burst through
// in about a second while still stopping a runaway loop.
const (
	DefaultQPS   = 500
	DefaultBurst = 1000
	// DefaultWorkers is how many Bindings and how many CombinedStatuses are worked on at once.
	DefaultWorkers = 4
)

// DefaultResources are the workload resources watched when Config.Resources is empty. KubeStellar watches
// every resource the API server serves, so a downsync clause selects every kind that matches it: a clause
// on a Deployment's label also selects its ReplicaSets and Pods, which carry the label from the template.
// The list holds those kinds and the other common workload kinds.
var DefaultResources = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "namespaces"},
}

// AutoStatusFunc computes the status a destination cluster returns for a workload object when no script
// entry exists for that cluster and object. It returns nil when the cluster has not reported. It is called
// often and from several goroutines, must not modify obj and must be fast.
type AutoStatusFunc func(cluster string, obj *unstructured.Unstructured) map[string]any

// Config configures a Sim. The zero value is usable.
type Config struct {
	// Resources are the workload resources BindingPolicies can select; DefaultResources when empty. An empty
	// Version means the API server's preferred version. Bindings always record the preferred version.
	// Resources KubeStellar never selects (events, nodes, leases, ...) are dropped with a log line.
	Resources []schema.GroupVersionResource

	// BindingDelay delays every Binding write (and the policy status written after it) by this long after
	// the change that causes it; events arriving meanwhile are folded into the same write.
	BindingDelay time.Duration
	// StatusDelay delays every CombinedStatus write the same way.
	StatusDelay time.Duration
	// Jitter adds a random duration in [0, Jitter) to each of the two delays.
	Jitter time.Duration

	// QPS and Burst limit the simulator's client; DefaultQPS and DefaultBurst when zero.
	QPS   float32
	Burst int
	// Workers is the number of concurrent Binding and CombinedStatus workers each; DefaultWorkers when zero.
	Workers int

	// AutoStatus, when set, computes the returned status of an object in a destination that has no script
	// entry.
	AutoStatus AutoStatusFunc
	// AutoStatusDelay holds back the AutoStatus result of an object in a destination until this long after
	// the simulator first saw the object in a Binding with that destination.
	AutoStatusDelay time.Duration

	// ScriptConfigMaps makes the simulator read its script from ConfigMaps labelled
	// kssim.drover.dev/script=true (ScriptConfigMapLabel), replacing the whole script whenever one changes.
	ScriptConfigMaps bool

	// Logger receives the simulator's logs; ctrl.Log named "kssim" when unset.
	Logger logr.Logger

	// Now returns the current time; time.Now when unset.
	Now func() time.Time
}

// withDefaults returns cfg with every unset field at its default.
func (cfg Config) withDefaults() Config {
	if len(cfg.Resources) == 0 {
		cfg.Resources = append([]schema.GroupVersionResource(nil), DefaultResources...)
	}
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = ctrl.Log.WithName("kssim")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// delay returns base plus a random part of the configured jitter.
func (cfg Config) delay(base time.Duration) time.Duration {
	if cfg.Jitter <= 0 {
		return base
	}
	return base + rand.N(cfg.Jitter) //nolint:gosec // jitter of a test double, not a secret
}

// ObjectRef names one workload object: its API group ("" for the core group), lowercase plural resource,
// namespace ("" for cluster-scoped objects) and name.
type ObjectRef struct {
	Group     string `json:"group"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String returns "group/resource namespace/name".
func (r ObjectRef) String() string {
	return r.Group + "/" + r.Resource + " " + r.Namespace + "/" + r.Name
}
