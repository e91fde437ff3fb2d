// Package cli implements the drover-local command: up and down (a background daemon, for scripts and
// make local-up/local-down), serve (that daemon in the foreground) and run (make run).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-dev/drover/internal/localcluster"
)

const usage = `drover-local starts drover's local cluster: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok with fake nodes in three NodePools, drover's and KubeStellar's CRDs, kssim (the
KubeStellar stand-in), drover's webhooks and the manager.

Usage:
  drover-local up     [flags]   start the cluster in the background, apply config/samples; prints the
                                KUBECONFIG line
  drover-local down   [flags]   stop it, and every process it started
  drover-local run    [flags]   start it in the foreground, apply config/samples, show the manager's log;
                                Ctrl-C stops everything
  drover-local serve  [flags]   the background daemon of up, in the foreground

Flags:
`

// config holds the flags shared by every subcommand.
type config struct {
	root       string
	dir        string
	nodes      int
	manager    string
	binDir     string
	kwokStages stringList
	timeout    time.Duration
	samples    bool
	noKssim    bool

	stdout, stderr io.Writer
	log            logr.Logger
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// Main runs drover-local with args (without the program name) and returns the exit code.
func Main(args []string) int {
	cfg := &config{stdout: os.Stdout, stderr: os.Stderr}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(os.Stderr, usage)
		cfg.flags("help").PrintDefaults()
		return 2
	}
	cmd := args[0]
	fs := cfg.flags(cmd)
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if err := cfg.complete(); err != nil {
		fmt.Fprintln(cfg.stderr, "drover-local:", err)
		return 1
	}
	var err error
	switch cmd {
	case "up":
		err = cfg.up()
	case "down":
		err = cfg.down()
	case "serve":
		err = cfg.serve()
	case "run":
		err = cfg.run()
	default:
		fmt.Fprintf(os.Stderr, "drover-local: unknown command %q\n\n%s", cmd, usage)
		fs.PrintDefaults()
		return 2
	}
	if err != nil {
		fmt.Fprintln(cfg.stderr, "drover-local:", err)
		return 1
	}
	return 0
}

func (c *config) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("drover-local "+name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&c.dir, "dir", ".local", "State directory: the cluster's state and logs (<dir>/cluster), the kubeconfig, the daemon's PID file and log.")
	fs.IntVar(&c.nodes, "nodes", 0, "Number of fake nodes (default $"+localcluster.NodesEnv+", else 12).")
	fs.StringVar(&c.manager, "manager", "bin/drover-manager", "The manager binary.")
	fs.StringVar(&c.binDir, "bin-dir", "bin/k8s", "Directory of etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok.")
	fs.Var(&c.kwokStages, "kwok-stage", "Extra kwok stage configuration file (repeatable).")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "How long start-up may take.")
	fs.BoolVar(&c.samples, "samples", true, "Apply config/samples once the cluster is ready (run and up).")
	fs.BoolVar(&c.noKssim, "no-kssim", false, "Do not run kssim, the KubeStellar stand-in (KubeStellar's CRDs are still installed).")
	return fs
}

// complete resolves relative paths against the working directory and finds the repository root.
func (c *config) complete() error {
	root, err := localcluster.FindRepoRoot("")
	if err != nil {
		return fmt.Errorf("%w (run drover-local inside the drover repository)", err)
	}
	c.root = root
	for _, p := range []*string{&c.dir, &c.manager, &c.binDir} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	for i := range c.kwokStages {
		if c.kwokStages[i], err = filepath.Abs(c.kwokStages[i]); err != nil {
			return err
		}
	}
	c.log = zap.New(zap.WriteTo(c.stderr), zap.ConsoleEncoder(), zap.StacktraceLevel(zapcore.DPanicLevel))
	ctrllog.SetLogger(c.log)
	return nil
}

// Files under the state directory.
func (c *config) clusterDir() string { return filepath.Join(c.dir, "cluster") }
func (c *config) kubeconfig() string { return filepath.Join(c.dir, "kubeconfig") }
func (c *config) pidFile() string    { return filepath.Join(c.dir, "drover-local.pid") }
func (c *config) statusFile() string { return filepath.Join(c.dir, "drover-local.status") }
func (c *config) serveLog() string   { return filepath.Join(c.dir, "serve.log") }

func (c *config) options() localcluster.Options {
	return localcluster.Options{
		RepoRoot:      c.root,
		Dir:           c.clusterDir(),
		Kubeconfig:    c.kubeconfig(),
		BinDir:        c.binDir,
		ManagerBinary: c.manager,
		Nodes:         c.nodes,
		KwokStages:    c.kwokStages,
		SkipKssim:     c.noKssim,
		StartTimeout:  c.timeout,
		Logger:        c.log,
	}
}

// serveArgs are the arguments up gives the daemon: the same settings, every path absolute.
func (c *config) serveArgs() []string {
	args := []string{"serve", "--dir=" + c.dir, "--manager=" + c.manager, "--bin-dir=" + c.binDir,
		fmt.Sprintf("--nodes=%d", c.nodes), "--timeout=" + c.timeout.String(),
		fmt.Sprintf("--samples=%t", c.samples), fmt.Sprintf("--no-kssim=%t", c.noKssim)}
	for _, s := range c.kwokStages {
		args = append(args, "--kwok-stage="+s)
	}
	return args
}

func (c *config) exportLine() string { return "export KUBECONFIG=" + c.kubeconfig() }

// startCluster starts the cluster under the PID file of this process. The caller stops it and removes the
// PID file.
func (c *config) startCluster(ctx context.Context) (*localcluster.Cluster, error) {
	if pid, ok := c.runningDaemon(); ok && pid != os.Getpid() {
		return nil, fmt.Errorf("a local cluster is already running (pid %d); stop it with `drover-local down`", pid)
	}
	if err := os.MkdirAll(c.dir, 0o750); err != nil {
		return nil, err
	}
	if err := writePID(c.pidFile(), os.Getpid()); err != nil {
		return nil, err
	}
	cluster, err := localcluster.Start(ctx, c.options())
	if err != nil {
		_ = os.Remove(c.pidFile())
		return nil, err
	}
	return cluster, nil
}

// stopCluster stops the cluster and removes the PID file.
func (c *config) stopCluster(cluster *localcluster.Cluster) error {
	err := cluster.Stop()
	if pid, _ := readPID(c.pidFile()); pid == os.Getpid() {
		_ = os.Remove(c.pidFile())
	}
	return err
}

// follow copies the file at path to w from the beginning, then as it grows, until ctx ends.
func follow(ctx context.Context, path string, w io.Writer) error {
	var f *os.File
	for f == nil {
		var err error
		if f, err = os.Open(filepath.Clean(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if f == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if n == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}
