package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-dev/drover/internal/localcluster"
)

// status is what the daemon reports to up through <dir>/drover-local.status.
type status struct {
	State string `json:"state"` // starting, ready or failed
	Error string `json:"error,omitempty"`
}

// up starts serve as a detached daemon and waits until it reports ready or failed.
func (c *config) up() error {
	if pid, ok := c.runningDaemon(); ok {
		fmt.Fprintf(c.stderr, "The local cluster is already running (pid %d).\n", pid)
		fmt.Fprintln(c.stdout, c.exportLine())
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o750); err != nil {
		return err
	}
	_ = os.Remove(c.statusFile())
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.Create(c.serveLog())
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(exe, c.serveArgs()...)
	cmd.Dir = c.root
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A new session: the daemon outlives this command and the terminal it runs in.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the daemon: %w", err)
	}
	pid := cmd.Process.Pid
	if err := writePID(c.pidFile(), pid); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	fmt.Fprintf(c.stderr, "Starting the local cluster (pid %d, log %s)...\n", pid, c.serveLog())

	deadline := time.After(c.timeout + time.Minute)
	for {
		st, _ := readStatus(c.statusFile())
		switch st.State {
		case "ready":
			fmt.Fprintf(c.stderr, "Local cluster ready in %s. Stop it with `make local-down`.\n", time.Since(began).Round(time.Second))
			fmt.Fprintln(c.stdout, c.exportLine())
			return nil
		case "failed":
			<-exited
			return fmt.Errorf("the local cluster did not start: %s\n(log: %s)", st.Error, c.serveLog())
		}
		select {
		case <-exited:
			return fmt.Errorf("the daemon exited before the cluster was ready; end of %s:\n%s",
				c.serveLog(), localcluster.TailFile(c.serveLog(), 30))
		case <-deadline:
			return fmt.Errorf("the cluster was not ready after %s; the daemon (pid %d) still runs, see %s or stop it with `drover-local down`",
				c.timeout+time.Minute, pid, c.serveLog())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// serve runs the cluster until SIGTERM/SIGINT or until one of its processes fails, reporting its state in
// the status file for up.
func (c *config) serve() error {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer cancel()
	if err := os.MkdirAll(c.dir, 0o750); err != nil {
		return err
	}
	_ = writeStatus(c.statusFile(), status{State: "starting"})
	cluster, err := c.startCluster(ctx)
	if err == nil {
		if _, err = c.applySamples(ctx, cluster); err != nil {
			err = errors.Join(err, c.stopCluster(cluster))
		}
	}
	if err != nil {
		_ = writeStatus(c.statusFile(), status{State: "failed", Error: err.Error()})
		return err
	}
	_ = writeStatus(c.statusFile(), status{State: "ready"})
	var runErr error
	select {
	case <-ctx.Done():
		c.log.Info("Stopping on signal")
	case <-cluster.Failed():
		runErr = cluster.Err()
		c.log.Error(runErr, "A process of the local cluster failed; stopping the cluster")
	}
	stopErr := c.stopCluster(cluster)
	_ = os.Remove(c.statusFile())
	return errors.Join(runErr, stopErr)
}

// down stops the daemon (SIGTERM, then SIGKILL), then any process recorded in the cluster's state that
// still runs. Running it when nothing runs is fine.
func (c *config) down() error {
	stopped := 0
	if pid, ok := c.runningDaemon(); ok {
		fmt.Fprintf(c.stderr, "Stopping drover-local (pid %d)...\n", pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitExit(pid, 2*time.Minute) {
			fmt.Fprintf(c.stderr, "drover-local (pid %d) did not stop within 2m; killing it\n", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitExit(pid, 10*time.Second)
		}
		fmt.Fprintf(c.stdout, "stopped drover-local (pid %d)\n", pid)
		stopped++
	}
	killed, err := localcluster.KillRecorded(c.clusterDir(), 20*time.Second)
	for _, p := range killed {
		fmt.Fprintf(c.stdout, "stopped %s (pid %d), left behind\n", p.Name, p.PID)
		stopped++
	}
	if err != nil {
		return err
	}
	_ = os.Remove(c.pidFile())
	_ = os.Remove(c.statusFile())
	if stopped == 0 {
		fmt.Fprintln(c.stdout, "no local cluster running")
	}
	return nil
}

// run is make run: the cluster in the foreground, the samples applied, a status printout and the manager's
// log until Ctrl-C.
func (c *config) run() error {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	began := time.Now()
	cluster, err := c.startCluster(ctx)
	if err != nil {
		return err
	}
	runErr := c.showCluster(ctx, cluster, began)
	if runErr == nil {
		fmt.Fprintf(c.stderr, "\n==> Manager log (%s); Ctrl-C stops the cluster\n", cluster.ManagerLog())
		followCtx, stopFollow := context.WithCancel(ctx)
		go func() {
			select {
			case <-cluster.Failed():
			case <-followCtx.Done():
			}
			stopFollow()
		}()
		runErr = follow(followCtx, cluster.ManagerLog(), c.stdout)
		stopFollow()
		if err := cluster.Err(); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	fmt.Fprintln(c.stderr, "\n==> Stopping the local cluster")
	return errors.Join(runErr, c.stopCluster(cluster))
}

// showCluster applies the samples and prints the status and the KUBECONFIG line.
func (c *config) showCluster(ctx context.Context, cluster *localcluster.Cluster, began time.Time) error {
	applied, err := c.applySamples(ctx, cluster)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "\n==> Local cluster ready in %s; %d sample object(s) applied from %s\n",
		time.Since(began).Round(time.Second), len(applied), c.samplesDir())
	for _, a := range applied {
		fmt.Fprintln(c.stdout, "    "+a)
	}
	fmt.Fprintln(c.stdout)
	if !localcluster.WaitNodePoolsCounted(ctx, cluster.Client, 15*time.Second) {
		fmt.Fprintln(c.stdout, "(the NodePools' status does not count every node yet)")
	}
	if err := localcluster.WriteStatus(ctx, cluster.Client, c.stdout); err != nil {
		return err
	}
	kubectl := c.binDir + "/kubectl"
	fmt.Fprintf(c.stdout, "\nLogs: %s\nTalk to the cluster with:\n    %s\n    %s get np\n    %s get sbp -w    # the staged rollout sample: dev, prod, Completed\n",
		cluster.LogDir(), c.exportLine(), kubectl, kubectl)
	return nil
}

func (c *config) samplesDir() string { return filepath.Join(c.root, "config", "samples") }

// applySamples applies config/samples (unless --samples=false), in file-name order.
func (c *config) applySamples(ctx context.Context, cluster *localcluster.Cluster) ([]string, error) {
	if !c.samples {
		return nil, nil
	}
	applied, err := localcluster.ApplyDir(ctx, cluster.Client, c.samplesDir())
	if err != nil {
		return applied, fmt.Errorf("applying the samples: %w", err)
	}
	c.log.Info("Applied the samples", "objects", len(applied), "dir", c.samplesDir())
	return applied, nil
}

// runningDaemon returns the PID in the PID file when that process is a live drover-local.
func (c *config) runningDaemon() (int, bool) {
	pid, err := readPID(c.pidFile())
	if err != nil || !localcluster.Running(pid, "") {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "drover-local") {
		return 0, false // the PID was reused by another program
	}
	return pid, true
}

func waitExit(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for localcluster.Running(pid, "") {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

func writePID(path string, pid int) error {
	return os.WriteFile(path, []byte(strconv.Itoa(pid)+"\n"), 0o600)
}

func readPID(path string) (int, error) {
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

func writeStatus(path string, st status) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readStatus(path string) (status, error) {
	var st status
	data, err := os.ReadFile(path) //nolint:gosec // the status file of the state directory
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(data, &st)
	return st, err
}
