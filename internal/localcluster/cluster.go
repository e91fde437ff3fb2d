package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Process names, which are also the base names of the log files (<Dir>/logs/<name>.log).
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
	Manager           = "drover-manager"
	Kssim             = "kssim"
)

// Cluster is a running local cluster. Stop it with Stop.
type Cluster struct {
	opts Options
	log  logr.Logger

	// Config is the admin (system:masters) REST config; Client is an admin client whose scheme knows the
	// built-in types and CRDs (not drover's types: build another client with internal/scheme for those).
	Config *rest.Config
	Client client.Client
	// ManagerConfig is what the manager authenticates with: a token of the ServiceAccount
	// drover-system/drover-manager. Nil when the manager is skipped.
	ManagerConfig *rest.Config
	// Kubeconfig is the path of the admin kubeconfig.
	Kubeconfig string
	// Dir holds the state and logs.
	Dir string
	// Nodes are the fake nodes.
	Nodes []NodeSpec
	// WebhookPort is where the manager serves the webhooks, on 127.0.0.1: the backend of the Service
	// WebhookService (see ExposeService).
	WebhookPort int
	// MetricsAddr and ProbeAddr are the manager's metrics and health endpoints (host:port).
	MetricsAddr, ProbeAddr string

	scheme   *runtime.Scheme
	crds     []*apiextensionsv1.CustomResourceDefinition
	env      *envtest.Environment
	logFiles []*os.File
	procsMu  sync.Mutex
	procs    []*process // started by this package, in start order
	manager  *process   // the running manager process, nil when skipped
	// managerArgs and managerEnv are the manager's command line and environment, for RestartManager.
	managerArgs, managerEnv []string
	pids                    *pidRecorder
	webhooks                int // webhook configurations installed

	// lifetime ends when Stop begins: the watches of the mounted Secrets and the egress proxy's work.
	lifetime    context.Context
	endLifetime context.CancelFunc
	egress      *egressProxy // nil before the control plane starts
	mountsMu    sync.Mutex
	mounts      map[types.NamespacedName]*secretMount

	failOnce sync.Once
	failed   chan struct{}
	failErr  error

	stopOnce    sync.Once
	stopErr     error
	stopMonitor chan struct{}
}

// Start brings the local cluster up and returns when the API server, the CRDs, every fake node, the
// manager (/readyz, leader Lease) and the webhooks are ready. On failure it stops whatever it started and
// the error names the log of the process at fault.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.complete(ctx)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	c := &Cluster{
		opts:        opts,
		log:         opts.Logger,
		Kubeconfig:  opts.Kubeconfig,
		Dir:         opts.Dir,
		Nodes:       Layout(opts.Nodes),
		scheme:      s,
		failed:      make(chan struct{}),
		stopMonitor: make(chan struct{}),
		mounts:      map[types.NamespacedName]*secretMount{},
	}
	c.lifetime, c.endLifetime = context.WithCancel(ctrllog.IntoContext(context.Background(), opts.Logger))
	if err := c.prepareDir(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"control plane", c.startControlPlane},
		{"components", c.startComponents},
		{"kssim", c.startKssim},
		{"manager", c.startManager},
		{"nodes", c.startNodes},
	}
	for _, step := range steps {
		t := time.Now()
		if err := step.run(ctx); err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				err = errors.Join(err, fmt.Errorf("stopping after the failed start: %w", stopErr))
			}
			return nil, fmt.Errorf("starting the local cluster (%s): %w", step.name, err)
		}
		c.log.V(1).Info("Started", "step", step.name, "took", time.Since(t).Round(time.Millisecond))
	}
	c.log.Info("Local cluster ready", "took", time.Since(began).Round(time.Millisecond), "kubeconfig", c.Kubeconfig,
		"nodes", len(c.Nodes), "logs", c.LogDir())
	return c, nil
}

// LogDir is the directory of the log files.
func (c *Cluster) LogDir() string { return filepath.Join(c.Dir, "logs") }

// LogPath is the log file of a process (Etcd, APIServer, ..., Manager).
func (c *Cluster) LogPath(name string) string { return filepath.Join(c.LogDir(), name+".log") }

// ManagerLog is the manager's log file.
func (c *Cluster) ManagerLog() string { return c.LogPath(Manager) }

// Failed is closed when a process exits unexpectedly; Err then says which, with the end of its log.
func (c *Cluster) Failed() <-chan struct{} { return c.failed }

// Err returns the first unexpected process exit, or nil.
func (c *Cluster) Err() error {
	select {
	case <-c.failed:
		return c.failErr
	default:
		return nil
	}
}

func (c *Cluster) fail(err error) {
	c.failOnce.Do(func() {
		c.failErr = err
		close(c.failed)
	})
}

// Processes lists every process the cluster started (etcd and kube-apiserver included).
func (c *Cluster) Processes() []ProcessRecord {
	if c.pids == nil {
		return nil
	}
	c.pids.mu.Lock()
	defer c.pids.mu.Unlock()
	return append([]ProcessRecord(nil), c.pids.file.Processes...)
}

// Stop stops every process the cluster started, the manager first and etcd last: SIGTERM, then SIGKILL after
// Options.StopTimeout. It then checks by PID that none is left. Calling it again returns the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		began := time.Now()
		close(c.stopMonitor)
		c.endLifetime()
		var errs []error
		c.procsMu.Lock()
		procs := slices.Clone(c.procs)
		c.procsMu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			if err := procs[i].stop(c.opts.StopTimeout); err != nil {
				errs = append(errs, err)
			}
		}
		if c.env != nil {
			if err := c.env.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stopping etcd and kube-apiserver: %w", err))
			}
		}
		if c.egress != nil {
			c.egress.close()
		}
		for _, r := range c.Processes() {
			if Running(r.PID, r.Path) {
				if err := terminate(r.PID, r.Path, c.opts.StopTimeout); err != nil {
					errs = append(errs, fmt.Errorf("%s (pid %d) is still running: %w", r.Name, r.PID, err))
				}
			}
		}
		for _, f := range c.logFiles {
			_ = f.Close()
		}
		if len(errs) == 0 && c.pids != nil {
			c.pids.remove()
		}
		c.stopErr = errors.Join(errs...)
		c.log.Info("Local cluster stopped", "took", time.Since(began).Round(time.Millisecond))
	})
	return c.stopErr
}

// prepareDir refuses to run next to a live owner of the same directory, kills what a dead owner left
// behind, and wipes the directory.
func (c *Cluster) prepareDir() error {
	owner, ownerArg0, err := readOwner(c.Dir)
	if err != nil {
		return err
	}
	if owner != 0 && owner != os.Getpid() && Running(owner, ownerArg0) {
		return fmt.Errorf("a local cluster is already running in %s (owner pid %d); stop it first", c.Dir, owner)
	}
	killed, err := KillRecorded(c.Dir, c.opts.StopTimeout)
	for _, k := range killed {
		c.log.Info("Stopped a process left behind by an earlier run", "name", k.Name, "pid", k.PID)
	}
	if err != nil {
		return fmt.Errorf("stopping processes left behind in %s: %w", c.Dir, err)
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		return fmt.Errorf("wiping %s: %w", c.Dir, err)
	}
	for _, d := range []string{c.LogDir(), filepath.Dir(c.Kubeconfig)} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return err
		}
	}
	c.pids = &pidRecorder{path: filepath.Join(c.Dir, pidFileName), file: pidFile{Owner: os.Getpid(), OwnerPath: os.Args[0]}}
	return writeJSON(c.pids.path, c.pids.file)
}

// openLog opens <Dir>/logs/<name>.log for a process whose output is written by someone else (envtest).
func (c *Cluster) openLog(name string) (*os.File, error) {
	f, err := os.OpenFile(c.LogPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	c.logFiles = append(c.logFiles, f)
	return f, nil
}

// run starts one of the cluster's processes, records its PID and reports an unexpected exit through Failed.
func (c *Cluster) run(name, path string, args, env []string) (*process, error) {
	p, err := c.startRecorded(name, path, args, env)
	if err != nil {
		return nil, err
	}
	go func() {
		select {
		case <-p.done:
			if !p.stopping.Load() {
				c.fail(p.crashError())
			}
		case <-c.stopMonitor:
		}
	}()
	return p, nil
}

// startRecorded starts a process with its log at LogPath(name), records its PID in pids.json and adds it
// to the processes Stop stops.
func (c *Cluster) startRecorded(name, path string, args, env []string) (*process, error) {
	p, err := startProcess(name, path, args, env, c.LogPath(name))
	if err != nil {
		return nil, err
	}
	c.procsMu.Lock()
	c.procs = append(c.procs, p)
	c.procsMu.Unlock()
	if err := c.pids.add(ProcessRecord{Name: name, PID: p.pid(), Path: path}); err != nil {
		return p, err
	}
	c.log.V(1).Info("Started process", "name", name, "pid", p.pid(), "log", p.logPath)
	return p, nil
}

// watchExternal reports the exit of a process started by envtest (it does not expose the exit itself).
func (c *Cluster) watchExternal(rec ProcessRecord) {
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-c.stopMonitor:
				return
			case <-t.C:
				if !Running(rec.PID, rec.Path) {
					c.fail(fmt.Errorf("%s (pid %d) exited unexpectedly (log: %s)\n%s",
						rec.Name, rec.PID, c.LogPath(rec.Name), indent(TailFile(c.LogPath(rec.Name), 20))))
					return
				}
			}
		}
	}()
}

// poll calls check until it returns true, the context ends, or a process fails.
func (c *Cluster) poll(ctx context.Context, what string, check func(context.Context) (bool, error)) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		ok, err := check(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w; last error: %w", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-c.failed:
			return fmt.Errorf("waiting for %s: %w", what, c.failErr)
		case <-t.C:
		}
	}
}

// childEnv is the environment of the child processes: this process's without KUBECONFIG, so nothing
// reaches for another cluster.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
