package localcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// InstalledManager says how an installation (a Helm release, a kustomize deploy) runs the manager: what the
// cluster needs to run the manager binary as a replica of that installation's Deployment would run.
type InstalledManager struct {
	// Name names the process and its log (<Dir>/logs/<Name>.log).
	Name string
	// Namespace and ServiceAccount are the installation's: the process authenticates as that ServiceAccount
	// and sees POD_NAMESPACE=Namespace, as the downward API gives a pod.
	Namespace, ServiceAccount string
	// Args are the container's arguments as the installation renders them. The flags of the addresses the
	// process binds, its certificate directory and its kubeconfig are replaced by the cluster's (a process
	// has no pod network), and $(POD_NAMESPACE) is expanded as the kubelet does.
	Args []string
	// CertSecret is the Secret mounted at the certificate directory, kept up to date as a kubelet does.
	CertSecret string
	// WebhookService is the Service in Namespace whose port 443 reaches the process's webhook server.
	WebhookService string
}

// replacedFlags are the flags StartInstalledManager sets itself.
var replacedFlags = []string{"--kubeconfig", "--metrics-bind-address", "--health-probe-bind-address", "--webhook-host",
	"--webhook-port", "--webhook-cert-dir", "--pprof-bind-address"}

// StartInstalledManager starts the manager binary as a replica of an installation: as its ServiceAccount,
// with its arguments, its certificate Secret mounted and its webhook Service reaching it. It returns once
// the process answers /readyz. Cluster.Stop stops it too.
func (c *Cluster) StartInstalledManager(ctx context.Context, m InstalledManager) (*ManagerProcess, error) {
	if m.Name == "" || m.Name == Manager || slices.ContainsFunc(c.Processes(), func(r ProcessRecord) bool { return r.Name == m.Name }) {
		return nil, fmt.Errorf("process name %q is empty or already used", m.Name)
	}
	if !fileExists(c.opts.ManagerBinary) {
		return nil, fmt.Errorf("manager binary %s is missing: build it with `make build`", c.opts.ManagerBinary)
	}
	kubeconfigPath := filepath.Join(c.Dir, m.Name+".kubeconfig")
	if _, err := c.ServiceAccountKubeconfig(ctx, m.Namespace, m.ServiceAccount, kubeconfigPath); err != nil {
		return nil, err
	}
	certDir := c.webhookCertDir(m.Name)
	if err := c.MountSecret(ctx, m.Namespace, m.CertSecret, certDir); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	probe := "127.0.0.1:" + strconv.Itoa(ports[1])
	args := installedArgs(m, kubeconfigPath, certDir, ports)
	p, err := c.startRecorded(m.Name, c.opts.ManagerBinary, args, childEnv("POD_NAMESPACE="+m.Namespace))
	if err != nil {
		return nil, err
	}
	proc := &ManagerProcess{LogPath: c.LogPath(m.Name), WebhookAddr: "127.0.0.1:" + strconv.Itoa(ports[2]), p: p, egress: c.egress}
	if err := c.ExposeService(ctx, m.Namespace, m.WebhookService, webhookServicePort, proc.WebhookAddr); err != nil {
		return nil, errors.Join(err, proc.Stop(c.opts.StopTimeout))
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ready := httpOK("http://" + probe + "/readyz")
	err = c.poll(ctx, m.Name+"'s /readyz (log: "+proc.LogPath+")", func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, p.crashError()
		}
		return ready(ctx)
	})
	if err != nil {
		return nil, errors.Join(err, proc.Stop(c.opts.StopTimeout))
	}
	return proc, nil
}

// installedArgs are m.Args with $(POD_NAMESPACE) expanded and the process's own addresses, directory and
// kubeconfig in place of the installation's.
func installedArgs(m InstalledManager, kubeconfigPath, certDir string, ports []int) []string {
	var args []string
	for _, a := range m.Args {
		name, _, _ := strings.Cut(a, "=")
		if slices.Contains(replacedFlags, name) {
			continue
		}
		args = append(args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", m.Namespace))
	}
	return append(args,
		"--kubeconfig="+kubeconfigPath,
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(ports[0]),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(ports[1]),
		"--webhook-host=127.0.0.1",
		"--webhook-port="+strconv.Itoa(ports[2]),
		"--webhook-cert-dir="+certDir)
}
