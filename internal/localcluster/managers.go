package localcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What a test needs to exercise leader election and restarts: stop and restart the cluster's manager, run
// more managers next to it, and read who holds the Lease.

// ManagerProcess is an additional manager started by StartExtraManager: the same binary, ServiceAccount and
// flags as the cluster's manager, with ports and a certificate directory of its own. Cluster.Stop stops it
// too; its exit is never reported through Failed.
type ManagerProcess struct {
	// LogPath is its log file.
	LogPath string
	// WebhookAddr is where it serves the webhooks (host:port), a backend of the Service WebhookService
	// after the cluster's manager.
	WebhookAddr string

	p      *process
	egress *egressProxy
}

// StartExtraManager starts another manager process named name (log <Dir>/logs/<name>.log) with the
// cluster's manager flags, its own metrics, probe and webhook ports, its own certificate directory (where
// WebhookSecret is mounted, as for every replica), and args appended last. Its webhook port becomes a backend
// of the Service WebhookService, tried when the cluster's manager does not accept connections. It returns
// once the process answers /readyz; with leader election on (the default) it is then a candidate for the
// Lease, not necessarily its holder.
func (c *Cluster) StartExtraManager(ctx context.Context, name string, args ...string) (*ManagerProcess, error) {
	if c.manager == nil {
		return nil, errors.New("the cluster runs no manager (Options.SkipManager)")
	}
	if name == "" || name == Manager || slices.ContainsFunc(c.Processes(), func(r ProcessRecord) bool { return r.Name == name }) {
		return nil, fmt.Errorf("process name %q is empty or already used", name)
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	m := &ManagerProcess{LogPath: c.LogPath(name), WebhookAddr: "127.0.0.1:" + strconv.Itoa(ports[2]), egress: c.egress}
	certDir := c.webhookCertDir(name)
	if err := c.MountSecret(ctx, ManagerNamespace, WebhookSecret, certDir); err != nil {
		return nil, err
	}
	probe := "127.0.0.1:" + strconv.Itoa(ports[1])
	// A repeated flag takes its last value: these override the cluster manager's ports and directory.
	all := append(slices.Clone(c.managerArgs),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(ports[0]),
		"--health-probe-bind-address="+probe,
		"--webhook-port="+strconv.Itoa(ports[2]),
		"--webhook-cert-dir="+certDir)
	p, err := c.startRecorded(name, c.opts.ManagerBinary, append(all, args...), c.managerEnv)
	if err != nil {
		return nil, err
	}
	m.p = p
	if err := c.ExposeService(ctx, ManagerNamespace, WebhookService, webhookServicePort, m.WebhookAddr); err != nil {
		_ = m.Stop(c.opts.StopTimeout)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ready := httpOK("http://" + probe + "/readyz")
	err = c.poll(ctx, name+"'s /readyz (log: "+m.LogPath+")", func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, p.crashError()
		}
		return ready(ctx)
	})
	if err != nil {
		_ = m.Stop(c.opts.StopTimeout)
		return nil, err
	}
	return m, nil
}

// Kill sends SIGKILL and waits for the exit: the process leaves its Lease held until it expires. Its webhook
// port is no longer a backend of WebhookService.
func (m *ManagerProcess) Kill() error {
	m.egress.removeBackend(m.WebhookAddr)
	return m.p.kill()
}

// Stop sends SIGTERM (the manager releases its Lease), then SIGKILL after timeout. Its webhook port is no
// longer a backend of WebhookService.
func (m *ManagerProcess) Stop(timeout time.Duration) error {
	m.egress.removeBackend(m.WebhookAddr)
	return m.p.stop(timeout)
}

// StopManager stops the cluster's manager on purpose with SIGTERM (it releases its Lease on the way out).
// The exit is not reported through Failed, and the API server's calls to the webhooks fail until
// RestartManager.
func (c *Cluster) StopManager() error {
	if c.manager == nil {
		return errors.New("the cluster runs no manager (Options.SkipManager)")
	}
	return c.manager.stop(c.opts.StopTimeout)
}

// RestartManager starts the cluster's manager again with the same flags, ports and log (appended to), and
// args appended for this run only (a later restart without them restores the flags), stopping it first with
// SIGTERM if it still runs. It returns once /readyz answers and the webhooks are reachable. It does not wait
// for the Lease, which another manager may hold: see LeaseHolder.
func (c *Cluster) RestartManager(ctx context.Context, args ...string) error {
	if c.manager == nil {
		return errors.New("the cluster runs no manager (Options.SkipManager)")
	}
	if err := c.manager.stop(c.opts.StopTimeout); err != nil {
		return err
	}
	c.pids.drop(c.manager.pid())
	p, err := c.run(Manager, c.opts.ManagerBinary, append(slices.Clone(c.managerArgs), args...), c.managerEnv)
	if err != nil {
		return err
	}
	c.manager = p
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return c.waitManagerServing(ctx)
}

// LeaseHolder returns the holder identity of the manager's leader-election Lease (Options.ManagerLease);
// "" when it is not held or does not exist.
func (c *Cluster) LeaseHolder(ctx context.Context) (string, error) {
	var lease coordinationv1.Lease
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: ManagerNamespace, Name: c.opts.ManagerLease}, &lease)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil || lease.Spec.HolderIdentity == nil {
		return "", err
	}
	return *lease.Spec.HolderIdentity, nil
}

// kill sends SIGKILL and waits for the exit; the exit is not reported as a crash.
func (p *process) kill() error {
	p.stopping.Store(true)
	if p.exited() {
		return nil
	}
	return p.killAndWait()
}
