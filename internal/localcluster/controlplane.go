package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	// serviceCIDR is the Service ClusterIP range; kwok's pod CIDR is 10.0.0.0/16 (pod IPs are only strings
	// in pod status here: nothing is ever sent to them).
	serviceCIDR = "10.96.0.0/16"
	podCIDR     = "10.0.0.1/16"
	// saKeyFile is the ServiceAccount signing key envtest writes into the API server's cert dir.
	saKeyFile = "sa-signer.key"
)

func (c *Cluster) bin(name string) string { return filepath.Join(c.opts.BinDir, name) }

func (c *Cluster) adminKubeconfig() string { return filepath.Join(c.Dir, "admin.kubeconfig") }

// startControlPlane starts the egress proxy, etcd and kube-apiserver through envtest, installs the CRDs and
// writes the admin kubeconfig.
func (c *Cluster) startControlPlane(ctx context.Context) error {
	for _, name := range []string{Etcd, APIServer, ControllerManager, Scheduler, Kwok} {
		if !fileExists(c.bin(name)) {
			return fmt.Errorf("%s is missing: build the control plane with `make tools-k8s` (hack/build-tools.sh k8s)", c.bin(name))
		}
	}
	env, err := c.newEnvironment()
	if err != nil {
		return err
	}
	c.env = env
	cfg, startErr := c.env.Start()
	// Record the PIDs even after a failed start, so that Stop (and a later run) finds every process.
	for _, name := range []string{Etcd, APIServer} {
		for _, pid := range childrenRunning(c.bin(name)) {
			rec := ProcessRecord{Name: name, PID: pid, Path: c.bin(name)}
			if err := c.pids.add(rec); err != nil {
				return err
			}
			c.watchExternal(rec)
		}
	}
	if startErr != nil {
		return fmt.Errorf("starting etcd and kube-apiserver (logs: %s, %s): %w", c.LogPath(Etcd), c.LogPath(APIServer), startErr)
	}
	c.Config = cfg
	// No WebhookOptions: InstallCRDs leaves each CRD's conversion stanza as readCRDs wrote it.
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: c.crds, MaxTime: 2 * time.Minute}); err != nil {
		return fmt.Errorf("installing the CRDs: %w", err)
	}
	if c.Client, err = client.New(cfg, client.Options{Scheme: c.scheme}); err != nil {
		return err
	}
	if err := c.writeAdminKubeconfig(); err != nil {
		return err
	}
	return c.waitCRDsEstablished(ctx)
}

// newEnvironment configures envtest: binaries from BinDir, state and logs under Dir, the CRDs, and the API
// server's "cluster" egress through the proxy of this process (egress.go). The webhook configurations are
// installed with the manager (installWebhooks), not by envtest.
func (c *Cluster) newEnvironment() (*envtest.Environment, error) {
	etcdLog, err := c.openLog(Etcd)
	if err != nil {
		return nil, err
	}
	apiLog, err := c.openLog(APIServer)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(c.Dir, "apiserver")
	dataDir := filepath.Join(c.Dir, "etcd")
	for _, d := range []string{certDir, dataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	api := &envtest.APIServer{Path: c.bin(APIServer), CertDir: certDir, Out: apiLog, Err: apiLog}
	args := api.Configure()
	// Authorization stays RBAC (envtest's default); envtest also sets the ServiceAccount issuer and signing
	// keys, so TokenRequest works. The ServiceAccount admission plugin stays disabled as envtest has it:
	// pods do not wait for their namespace's default ServiceAccount.
	args.Set("advertise-address", "127.0.0.1")
	// The API server would publish its advertise address as the endpoint of the default/kubernetes Service,
	// and rejects a loopback one; nothing in this cluster reaches the API server through that Service.
	args.Set("endpoint-reconciler-type", "none")
	args.Set("service-cluster-ip-range", serviceCIDR)
	egress, egressConfig, err := startEgressProxy(filepath.Join(c.Dir, "egress"), c.log.WithName("egress"))
	if err != nil {
		return nil, err
	}
	c.egress = egress
	args.Set("egress-selector-config-file", egressConfig)
	if err := setArgs(args, c.opts.APIServerArgs); err != nil {
		return nil, fmt.Errorf("APIServerArgs: %w", err)
	}
	// The CRDs are installed after the control plane starts (startControlPlane), not through the
	// environment's CRDInstallOptions: envtest's Start rewrites the conversion stanza of every CRD whose kind
	// is not convertible in its scheme to None, which would drop the manager's conversion webhook.
	if c.crds, err = c.readCRDs(); err != nil {
		return nil, err
	}
	return &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			APIServer:   api,
			Etcd:        &envtest.Etcd{Path: c.bin(Etcd), DataDir: dataDir, Out: etcdLog, Err: etcdLog},
			KubectlPath: c.bin("kubectl"),
		},
		Scheme:                   c.scheme,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  c.opts.StopTimeout,
	}, nil
}

// readCRDs reads the CRDs of crdPaths, each with its conversion webhook, if it has one, pointed at the
// webhook Service (installedConversion).
func (c *Cluster) readCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	opts := envtest.CRDInstallOptions{Paths: c.crdPaths()}
	if err := envtest.ReadCRDFiles(&opts); err != nil {
		return nil, fmt.Errorf("reading the CRDs: %w", err)
	}
	for _, crd := range opts.CRDs {
		installedConversion(crd)
	}
	return opts.CRDs, nil
}

// writeAdminKubeconfig writes the API server's CA and the admin kubeconfig, both for the components
// (<Dir>/admin.kubeconfig) and for the user (Options.Kubeconfig).
func (c *Cluster) writeAdminKubeconfig() error {
	cfg := c.Config
	if err := os.WriteFile(filepath.Join(c.Dir, "ca.crt"), cfg.CAData, 0o600); err != nil {
		return err
	}
	admin, err := kubeconfig(cfg, "admin", clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData})
	if err != nil {
		return err
	}
	for _, p := range []string{c.adminKubeconfig(), c.Kubeconfig} {
		if err := writeFileAtomic(p, admin); err != nil {
			return fmt.Errorf("writing kubeconfig: %w", err)
		}
	}
	return nil
}

// crdPaths returns drover's CRD directories that exist and, unless skipped, the KubeStellar CRD directory
// (envtest skips the files there that hold no CRD, such as kustomization.yaml).
func (c *Cluster) crdPaths() []string {
	dirs := c.opts.CRDDirs
	if !c.opts.SkipKubeStellar {
		dirs = append(slices.Clone(dirs), c.opts.KubeStellarCRDDir)
	}
	var paths []string
	for _, d := range dirs {
		if !fileExists(d) {
			c.log.Info("CRD directory does not exist, skipping it", "path", d)
			continue
		}
		paths = append(paths, d)
	}
	return paths
}

// waitCRDsEstablished waits until every installed CRD has the Established condition.
func (c *Cluster) waitCRDsEstablished(ctx context.Context) error {
	for _, crd := range c.env.CRDs {
		name := crd.Name
		err := c.poll(ctx, "CRD "+name+" to be established", func(ctx context.Context) (bool, error) {
			var got apiextensionsv1.CustomResourceDefinition
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return err
		}
	}
	c.log.V(1).Info("CRDs established", "count", len(c.env.CRDs))
	return nil
}

// startComponents starts kube-controller-manager, kube-scheduler and kwok, and waits for the first two to
// be healthy (kwok proves itself when the nodes become Ready). kube-controller-manager and kube-scheduler
// get no --authentication/--authorization-kubeconfig: only their /healthz is used, which is always allowed,
// and envtest's API server has no request-header CA for them to look up.
func (c *Cluster) startComponents(ctx context.Context) error {
	kubeconfig := c.adminKubeconfig()
	kcmPort, err := freePort()
	if err != nil {
		return err
	}
	kcm := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=*",
		"--service-account-private-key-file=" + filepath.Join(c.Dir, "apiserver", saKeyFile),
		"--root-ca-file=" + filepath.Join(c.Dir, "ca.crt"),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--cert-dir=" + filepath.Join(c.Dir, "kube-controller-manager"),
	}
	if _, err := c.run(ControllerManager, c.bin(ControllerManager), append(kcm, c.opts.ControllerManagerArgs...), childEnv()); err != nil {
		return err
	}
	schedPort, err := freePort()
	if err != nil {
		return err
	}
	sched := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(schedPort),
		"--cert-dir=" + filepath.Join(c.Dir, "kube-scheduler"),
	}
	if _, err := c.run(Scheduler, c.bin(Scheduler), append(sched, c.opts.SchedulerArgs...), childEnv()); err != nil {
		return err
	}
	if err := c.startKwok(ctx, kubeconfig); err != nil {
		return err
	}
	for name, port := range map[string]int{ControllerManager: kcmPort, Scheduler: schedPort} {
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
		if err := c.poll(ctx, name+" to be healthy (log: "+c.LogPath(name)+")", httpOK(url)); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startKwok(ctx context.Context, kubeconfig string) error {
	stages, err := c.opts.kwokStageFiles(ctx)
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + AnnotationKwokNode + "=" + KwokNodeValue,
		// With the heartbeat-with-lease stage kwok renews a Lease per node; without the Leases
		// kube-controller-manager marks the nodes NotReady and evicts their pods.
		"--node-lease-duration-seconds=40",
		// A /16 is large enough for the benchmarks' pod counts (the default /24 runs out past ~250 pods).
		"--cidr=" + podCIDR,
		"--node-ip=127.0.0.1",
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
	}
	for _, s := range stages {
		args = append(args, "--config="+s)
	}
	// kwok also loads ~/.kwok/kwok.yaml when it exists; a private HOME keeps a user's kwok set-up out.
	home := filepath.Join(c.Dir, "kwok-home")
	if err := os.MkdirAll(home, 0o750); err != nil {
		return err
	}
	_, err = c.run(Kwok, c.bin(Kwok), append(args, c.opts.KwokArgs...), childEnv("HOME="+home))
	return err
}

// httpOK returns a check that GETs url (TLS not verified: these are self-signed health endpoints on
// 127.0.0.1) and succeeds on 200.
func httpOK(url string) func(context.Context) (bool, error) {
	hc := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // local health probe
	}
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return true, nil
	}
}

// kubeconfig renders a kubeconfig for the API server of cfg with the given credentials.
func kubeconfig(cfg *rest.Config, user string, auth clientcmdapi.AuthInfo) ([]byte, error) {
	const name = "drover-local"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &auth
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}

// setArgs applies extra "--name=value" (or "--name") flags to envtest arguments, replacing any default.
func setArgs(args *envtest.Arguments, extra []string) error {
	for _, a := range extra {
		if !strings.HasPrefix(a, "--") {
			return fmt.Errorf("%q is not of the form --name=value", a)
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if hasValue {
			args.Set(name, value)
		} else {
			args.Enable(name)
		}
	}
	return nil
}
