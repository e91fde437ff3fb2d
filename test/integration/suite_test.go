// Package integration runs drover's manager and webhooks in-process against a real kube-apiserver and
// etcd started by envtest from bin/k8s. There is no kube-controller-manager, scheduler or kubelet here:
// tests set Node and workload status themselves where a real cluster would.
package integration

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/kubestellarsim"
	"github.com/drover-dev/drover/internal/registry"
	"github.com/drover-dev/drover/internal/scheme"
)

var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client // direct client (no cache): what a user sees
	cancelMgr context.CancelFunc
	mgrDone   chan error
	// sim plays KubeStellar for StagedBindingPolicy: Bindings, CombinedStatuses, scripted cluster reports.
	sim       *kubestellarsim.Sim
	cancelSim context.CancelFunc
	simDone   chan error
)

func TestIntegration(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "drover integration")
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)

	root := repoRoot()
	testEnv = &envtest.Environment{
		BinaryAssetsDirectory: filepath.Join(root, "bin", "k8s"),
		// drover's CRDs, and KubeStellar's with the minimal ManagedCluster for StagedBindingPolicy.
		CRDDirectoryPaths:     append(components(root, "crd"), filepath.Join(root, "config", "crd", "kubestellar")),
		ErrorIfCRDPathMissing: true,
		// With drover's scheme, envtest points the conversion webhook of each CRD whose kind has a hub and
		// convertible versions there at the manager's webhook server below (https://host:port/convert), with
		// the CA of its certificate.
		Scheme: scheme.New(),
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: components(root, "webhooks.yaml"),
		},
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "starting envtest (run `make tools` to build bin/k8s)")

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())

	startManager()
	startSim()
})

// startSim runs kssim in-process against the suite's API server, with no delays.
func startSim() {
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), ctrl.Log))
	cancelSim = cancel
	sim = kubestellarsim.New(kubestellarsim.Config{Logger: ctrl.Log.WithName("kssim")})
	simDone = make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		simDone <- sim.Start(ctx, cfg)
	}()
	Eventually(sim.Ready()).Should(BeClosed())
}

// startManager runs drover's controllers and webhooks the way cmd/drover-manager wires them.
func startManager() {
	wh := testEnv.WebhookInstallOptions
	// The registry with its flags' defaults, but OpenYurt's 3 YurtAppDaemon workers (drover's default is 10).
	controllers := registry.Registry()
	Expect(kit.SetFlag(controllers, "yurtappdaemon-workers", "3")).To(Succeed())
	// PersistentPodState looks for late CRDs and waits for informers for seconds, not the default 30 and 10.
	Expect(kit.SetFlag(controllers, "pps-kind-retry-interval", "2s")).To(Succeed())
	Expect(kit.SetFlag(controllers, "pps-informer-sync-timeout", "3s")).To(Succeed())
	enabled := sets.New(kit.Names(controllers)...)
	cacheOpts, err := registry.CacheOptions(controllers, enabled)
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme.New(),
		Cache:   cacheOpts,
		Client:  registry.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{RecoverPanic: new(true), SkipNameValidation: new(true)},
	})
	Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), ctrl.Log))
	cancelMgr = cancel
	started, err := registry.Setup(ctx, mgr, controllers, enabled, true)
	Expect(err).NotTo(HaveOccurred())
	Expect(started).To(ConsistOf("nodepool", "yurtappdaemon", "uniteddaemonset", "tapp", "persistentpodstate", "stagedbindingpolicy"))

	mgrDone = make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(ctx)
	}()
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
	Eventually(func() error { return mgr.GetWebhookServer().StartedChecker()(nil) }).Should(Succeed())
}

var _ = AfterSuite(func() {
	if cancelSim != nil {
		cancelSim()
		Eventually(simDone, time.Minute).Should(Receive(BeNil()))
	}
	if cancelMgr != nil {
		cancelMgr()
		Eventually(mgrDone, time.Minute).Should(Receive(BeNil()))
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// Every spec fails if a reconcile or a webhook panicked while it ran: the manager recovers panics (so one
// bad object cannot take it down), and this turns each recovered panic into a test failure.
var _ = JustAfterEach(func() {
	Expect(panicCount()).To(BeZero(), "a reconcile or webhook panicked; see the log above")
})

func panicCount() float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var total float64
	for _, mf := range families {
		switch mf.GetName() {
		case "controller_runtime_reconcile_panics_total", "controller_runtime_webhook_panics_total":
			total += sum(mf.GetMetric())
		}
	}
	return total
}

func sum(ms []*dto.Metric) float64 {
	var s float64
	for _, m := range ms {
		s += m.GetCounter().GetValue()
	}
	return s
}

// reconcileErrors returns how many passes of a controller returned an error so far.
func reconcileErrors(controllerName string) float64 {
	return controllerCounter("controller_runtime_reconcile_errors_total", controllerName)
}

// reconcileTotal returns how many reconciles the controller has finished, whatever their result.
func reconcileTotal(controllerName string) float64 {
	return controllerCounter("controller_runtime_reconcile_total", controllerName)
}

// controllerCounter sums a controller-runtime counter over the series of one controller.
func controllerCounter(metric, controllerName string) float64 {
	return metricSum(metric, "controller", controllerName, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

// metricSum sums value over the series of metric in the manager's registry whose label has labelValue.
func metricSum(metric, label, labelValue string, value func(*dto.Metric) float64) float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var total float64
	for _, mf := range families {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == labelValue {
					total += value(m)
				}
			}
		}
	}
	return total
}

// components returns the files or folders named name of every controller's kustomize component.
func components(root, name string) []string {
	found, err := filepath.Glob(filepath.Join(root, "config", "components", "*", name))
	Expect(err).NotTo(HaveOccurred())
	Expect(found).NotTo(BeEmpty())
	return found
}
