// Command drover-manager runs every drover controller and webhook in one process.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/drover-dev/drover/internal/certs"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/registry"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/version"
)

// Client-side rate limits. client-go's defaults (5 QPS, burst 10) would make a controller that creates a
// thousand children spend minutes waiting on its own limiter. The API server protects itself with API
// Priority and Fairness, so the client limit only needs to stop a runaway loop: 500 QPS with a burst of
// 1000 is far above what a healthy reconcile issues and well below what would starve other clients.
const (
	defaultQPS   = 500
	defaultBurst = 1000
)

// defaultNamespace is the manager's namespace when neither --namespace nor $POD_NAMESPACE is set.
const defaultNamespace = "drover-system"

type flags struct {
	controllers            string
	namespace              string
	leaderElect            bool
	leaderElectionNS       string
	leaseDuration          time.Duration
	renewDeadline          time.Duration
	retryPeriod            time.Duration
	qps                    float64
	burst                  int
	metricsAddr            string
	secureMetrics          bool
	probeAddr              string
	pprofAddr              string
	webhookHost            string
	webhookPort            int
	webhookCertDir         string
	enableWebhooks         bool
	certMode               string
	certSecretName         string
	webhookServiceName     string
	certDNSNames           string
	gracefulShutdownPeriod time.Duration
	version                bool
}

// addFlags registers the manager's own flags and those of every controller in registry on fs.
func addFlags(fs *flag.FlagSet, registry []*kit.Controller) *flags {
	f := &flags{}
	fs.StringVar(&f.controllers, "controllers", "*",
		"Comma-separated controllers to run, or * for all: "+strings.Join(kit.Names(registry), ", ")+
			". An unknown name stops start-up; a controller whose CRD is not served is skipped with one log line.")
	fs.StringVar(&f.namespace, "namespace", "",
		"The manager's namespace: of its leader-election Lease, its webhook certificate Secret and Service, and PersistentPodState's whitelist ConfigMap. Empty means $POD_NAMESPACE, else "+defaultNamespace+".")
	fs.BoolVar(&f.leaderElect, "leader-elect", true,
		"Elect a leader through the Lease drover-manager.drover.dev so only one replica reconciles.")
	fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader-election Lease; empty means --namespace.")
	fs.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long the leader's Lease lasts without renewal: how long a crashed leader's work waits before a follower takes over.")
	fs.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew its Lease before it gives up leadership (and exits); shorter than the lease duration.")
	fs.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How often candidates try to acquire, and the leader to renew, the Lease.")
	fs.Float64Var(&f.qps, "kube-api-qps", defaultQPS,
		"Client-side queries per second to the API server (client-go's 5 would make a thousand-child rollout wait on itself; API Priority and Fairness protects the server).")
	fs.IntVar(&f.burst, "kube-api-burst", defaultBurst, "Client-side burst of requests to the API server.")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint; 0 disables it.")
	fs.BoolVar(&f.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with authentication and authorization.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz.")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "",
		"Address of Go's /debug/pprof endpoints, unauthenticated (bind it to 127.0.0.1); empty or 0 disables them.")
	fs.BoolVar(&f.enableWebhooks, "enable-webhooks", true, "Serve the admission webhooks.")
	fs.StringVar(&f.webhookHost, "webhook-host", "", "Address the webhook server binds to; empty means all interfaces.")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "Port of the webhook server (TLS).")
	fs.StringVar(&f.webhookCertDir, "webhook-cert-dir", "",
		"Directory holding tls.crt and tls.key for the webhook server (the certificate Secret's volume); empty means k8s-webhook-server/serving-certs in $TMPDIR (/tmp).")
	addCertFlags(fs, f)
	fs.DurationVar(&f.gracefulShutdownPeriod, "graceful-shutdown-timeout", 30*time.Second,
		"How long to wait for running reconciles to finish on SIGTERM.")
	fs.BoolVar(&f.version, "version", false, "Print the version, commit and build date, and exit.")
	kit.AddFlags(fs, registry)
	return f
}

// addCertFlags registers the flags of the webhook serving certificate (internal/certs).
func addCertFlags(fs *flag.FlagSet, f *flags) {
	fs.StringVar(&f.certMode, "cert-mode", string(certs.ModeSelf),
		"Who provides the webhook serving certificate: self (the manager creates and rotates it in --cert-secret-name and injects its CA into its webhook configurations) or external (cert-manager or the installation mounts it at --webhook-cert-dir and injects the CA).")
	fs.StringVar(&f.certSecretName, "cert-secret-name", certs.DefaultSecretName,
		"Secret in --namespace holding the webhook serving certificate and its CA (--cert-mode=self); created again when deleted.")
	fs.StringVar(&f.webhookServiceName, "webhook-service-name", certs.DefaultServiceName,
		"Service in --namespace in front of the webhook server: the certificate is for NAME.NAMESPACE.svc.")
	fs.StringVar(&f.certDNSNames, "cert-dns-names", "",
		"Comma-separated extra DNS names of the webhook serving certificate (--cert-mode=self).")
}

func parseFlags(registry []*kit.Controller) (*flags, *zap.Options) {
	// --kubeconfig is registered by controller-runtime's config package and read by ctrl.GetConfig:
	// a path to a kubeconfig; without it, $KUBECONFIG, the in-cluster configuration or ~/.kube/config.
	f := addFlags(flag.CommandLine, registry)
	zopts := &zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	return f, zopts
}

// complete resolves the defaults that depend on other flags or on the environment.
func (f *flags) complete() {
	if f.namespace == "" {
		f.namespace = os.Getenv("POD_NAMESPACE")
	}
	if f.namespace == "" {
		f.namespace = defaultNamespace
	}
	if f.leaderElectionNS == "" {
		f.leaderElectionNS = f.namespace
	}
	if f.webhookCertDir == "" {
		f.webhookCertDir = certs.DefaultCertDir()
	}
}

// certOptions returns the configuration of the webhook serving certificate.
func (f *flags) certOptions(controllers []*kit.Controller, enabled sets.Set[string]) (certs.Options, error) {
	mode, err := certs.ParseMode(f.certMode)
	if err != nil {
		return certs.Options{}, fmt.Errorf("--cert-mode: %w", err)
	}
	var extra []string
	for n := range strings.SplitSeq(f.certDNSNames, ",") {
		if n = strings.TrimSpace(n); n != "" {
			extra = append(extra, n)
		}
	}
	o := certs.Options{Mode: mode, Namespace: f.namespace, SecretName: f.certSecretName, ServiceName: f.webhookServiceName,
		ExtraDNSNames: extra, CertDir: f.webhookCertDir, Webhooks: certs.Webhooks(controllers, enabled),
		Conversions: kit.ConvertedCRDs(controllers)}
	return o, o.Validate()
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == guardCommand {
		if err := runUninstallGuard(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "drover-manager "+guardCommand+":", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "drover-manager:", err)
		os.Exit(1)
	}
}

func run() error {
	controllers := registry.Registry()
	f, zopts := parseFlags(controllers)
	if f.version {
		fmt.Println("drover-manager", version.Get())
		return nil
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(zopts)))
	log := ctrl.Log.WithName("setup")

	enabled, err := registry.ParseControllers(f.controllers, controllers)
	if err != nil {
		return err
	}
	f.complete()
	registry.SetNamespace(controllers, f.namespace)
	var certOpts certs.Options
	if f.enableWebhooks {
		if certOpts, err = f.certOptions(controllers, enabled); err != nil {
			return err
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	mgr, webhookServer, err := newManager(cfg, f, controllers, enabled)
	if err != nil {
		return err
	}
	s := &startup{mgr: mgr, log: log, controllers: controllers, enabled: enabled, webhooks: f.enableWebhooks,
		certs: certOpts, webhookServer: webhookServer}
	return s.run(ctrl.SetupSignalHandler())
}

// newManager builds the manager and the webhook server it serves once the certificates are in place.
func newManager(cfg *rest.Config, f *flags, controllers []*kit.Controller, enabled sets.Set[string]) (manager.Manager, ctrlwebhook.Server, error) {
	// HTTP/2 is disabled on the servers drover exposes (CVE-2023-44487, rapid reset).
	noHTTP2 := func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
	metricsOpts := metricsserver.Options{BindAddress: f.metricsAddr, SecureServing: f.secureMetrics, TLSOpts: []func(*tls.Config){noHTTP2}}
	if f.secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	cacheOpts, err := registry.CacheOptions(controllers, enabled)
	if err != nil {
		return nil, nil, fmt.Errorf("merging the controllers' cache needs: %w", err)
	}
	shutdown := f.gracefulShutdownPeriod
	webhookServer := ctrlwebhook.NewServer(ctrlwebhook.Options{
		Host: f.webhookHost, Port: f.webhookPort, CertDir: f.webhookCertDir, TLSOpts: []func(*tls.Config){noHTTP2},
	})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.New(),
		Cache:                   cacheOpts,
		Client:                  registry.ClientOptions(),
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  f.probeAddr,
		PprofBindAddress:        f.pprofAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        "drover-manager.drover.dev",
		LeaderElectionNamespace: f.leaderElectionNS,
		LeaseDuration:           &f.leaseDuration,
		RenewDeadline:           &f.renewDeadline,
		RetryPeriod:             &f.retryPeriod,
		// Release the Lease on a clean shutdown so a new replica takes over at once.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdown,
		// The server starts when the controllers' webhooks are registered (mgr.GetWebhookServer adds it),
		// which waits for its certificate: it cannot start without tls.crt and tls.key.
		WebhookServer: webhookServer,
		Controller:    config.Controller{RecoverPanic: ptr.To(true)},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, webhookServer, nil
}
