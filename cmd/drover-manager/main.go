// Command drover-manager runs every drover controller and webhook in one process.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/drover-dev/drover/internal/controller"
	"github.com/drover-dev/drover/internal/controller/nodepool"
	"github.com/drover-dev/drover/internal/controller/tapp"
	"github.com/drover-dev/drover/internal/controller/yurtappdaemon"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/webhook"
)

// Client-side rate limits. client-go's defaults (5 QPS, burst 10) would make a controller that creates a
// thousand children spend minutes waiting on its own limiter. The API server protects itself with API
// Priority and Fairness, so the client limit only needs to stop a runaway loop: 500 QPS with a burst of
// 1000 is far above what a healthy reconcile issues and well below what would starve other clients.
const (
	defaultQPS   = 500
	defaultBurst = 1000
)

type flags struct {
	controllers            string
	leaderElect            bool
	leaderElectionNS       string
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
	manageNodePools        bool
	nodePoolWorkers        int
	syncNodeAttributes     bool
	yadWorkers             int
	yadMaxBatch            int
	tappDeleteAfterFinish  bool
	tappWorkers            int
	tappWriteConcurrency   int
	gracefulShutdownPeriod time.Duration
}

func parseFlags() (*flags, *zap.Options) {
	f := &flags{}
	// --kubeconfig is registered by controller-runtime's config package and read by ctrl.GetConfig:
	// a path to a kubeconfig; without it, $KUBECONFIG, the in-cluster configuration or ~/.kube/config.
	flag.StringVar(&f.controllers, "controllers", "*",
		"Comma-separated controllers to run, or * for all: nodepool, yurtappdaemon, uniteddaemonset, tapp, persistentpodstate, stagedbindingpolicy.")
	flag.BoolVar(&f.leaderElect, "leader-elect", true, "Elect a leader through a Lease so only one replica reconciles.")
	flag.StringVar(&f.leaderElectionNS, "leader-election-namespace", "drover-system", "Namespace of the leader-election Lease.")
	flag.Float64Var(&f.qps, "kube-api-qps", defaultQPS, "Client-side queries per second to the API server.")
	flag.IntVar(&f.burst, "kube-api-burst", defaultBurst, "Client-side burst of requests to the API server.")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint; 0 disables it.")
	flag.BoolVar(&f.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with authentication and authorization.")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz.")
	flag.StringVar(&f.pprofAddr, "pprof-bind-address", "",
		"Address of Go's /debug/pprof endpoints, unauthenticated (bind it to 127.0.0.1); empty or 0 disables them.")
	flag.BoolVar(&f.enableWebhooks, "enable-webhooks", true, "Serve the admission webhooks.")
	flag.StringVar(&f.webhookHost, "webhook-host", "", "Address the webhook server binds to; empty means all interfaces.")
	flag.IntVar(&f.webhookPort, "webhook-port", 9443, "Port of the webhook server.")
	flag.StringVar(&f.webhookCertDir, "webhook-cert-dir", "", "Directory holding tls.crt and tls.key for the webhook server.")
	flag.BoolVar(&f.manageNodePools, "manage-nodepools", true,
		"Run the NodePool controller and webhooks. Set false next to OpenYurt's yurt-manager.")
	flag.IntVar(&f.nodePoolWorkers, "nodepool-workers", 3, "Concurrent NodePool reconciles.")
	flag.BoolVar(&f.syncNodeAttributes, "nodepool-sync-node-attributes", true,
		"Propagate NodePool labels, annotations and taints to member nodes.")
	// The spec's default is 3. A new NodePool concerns every owner that selects it, and each owner's pass ends
	// with a status write of up to 150 KB at the scale target; with 3 workers, 10 owners queue behind each
	// other's status writes and the new pool waited 1.1-1.5 s (p99) for its 10 children, with 10 workers
	// 0.2 s (docs/yurtappdaemon.md, "Scale").
	flag.IntVar(&f.yadWorkers, "yurtappdaemon-workers", 10, "Concurrent reconciles of each of YurtAppDaemon and UnitedDaemonSet.")
	flag.IntVar(&f.yadMaxBatch, "yurtappdaemon-max-batch", 32,
		"Most concurrent child creates, updates or deletes of one YurtAppDaemon pass (slow-start batches).")
	flag.BoolVar(&f.tappDeleteAfterFinish, "tapp-delete-pod-after-app-finish", true,
		"Delete the pods of finished TApp instances once the whole TApp has finished (default of spec.deletePodAfterAppFinish).")
	flag.IntVar(&f.tappWorkers, "tapp-concurrent-reconciles", 5, "Concurrent TApp reconciles.")
	flag.IntVar(&f.tappWriteConcurrency, "tapp-pod-write-concurrency", tapp.DefaultPodWriteConcurrency,
		"Most pod and PVC writes of one TApp pass in flight at once.")
	flag.DurationVar(&f.gracefulShutdownPeriod, "graceful-shutdown-timeout", 30*time.Second,
		"How long to wait for running reconciles to finish on SIGTERM.")
	zopts := &zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	return f, zopts
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "drover-manager:", err)
		os.Exit(1)
	}
}

func run() error {
	f, zopts := parseFlags()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(zopts)))
	log := ctrl.Log.WithName("setup")

	enabled, err := controller.ParseControllers(f.controllers)
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst

	// HTTP/2 is disabled on the servers drover exposes (CVE-2023-44487, rapid reset).
	noHTTP2 := func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
	metricsOpts := metricsserver.Options{BindAddress: f.metricsAddr, SecureServing: f.secureMetrics, TLSOpts: []func(*tls.Config){noHTTP2}}
	if f.secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	shutdown := f.gracefulShutdownPeriod
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.New(),
		Cache:                   controller.CacheOptions(),
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  f.probeAddr,
		PprofBindAddress:        f.pprofAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        "drover-manager.drover.dev",
		LeaderElectionNamespace: f.leaderElectionNS,
		// Release the Lease on a clean shutdown so a new replica takes over at once.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdown,
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host: f.webhookHost, Port: f.webhookPort, CertDir: f.webhookCertDir, TLSOpts: []func(*tls.Config){noHTTP2},
		}),
		Controller: config.Controller{RecoverPanic: ptrTo(true)},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}

	ctx := ctrl.LoggerInto(ctrl.SetupSignalHandler(), log)
	started, err := controller.Setup(ctx, mgr, controller.Options{
		Enabled:         enabled,
		ManageNodePools: f.manageNodePools,
		NodePool:        nodepool.Options{Workers: f.nodePoolWorkers, SyncNodeAttributes: f.syncNodeAttributes},
		YurtAppDaemon:   yurtappdaemon.Options{Workers: f.yadWorkers, MaxBatch: f.yadMaxBatch},
		TApp: tapp.Options{
			DeletePodAfterAppFinish: f.tappDeleteAfterFinish,
			ConcurrentReconciles:    f.tappWorkers,
			PodWriteConcurrency:     f.tappWriteConcurrency,
		},
	})
	if err != nil {
		return err
	}
	if f.enableWebhooks {
		if err := webhook.Setup(mgr, started); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	ready := healthz.Ping
	if f.enableWebhooks {
		ready = mgr.GetWebhookServer().StartedChecker()
	}
	if err := mgr.AddReadyzCheck("readyz", ready); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}

	log.Info("Starting manager", "controllers", started, "webhooks", f.enableWebhooks)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
