// Command kssim runs the KubeStellar stand-in (internal/kubestellarsim) as a process, for the local cluster
// and the demo: it turns BindingPolicies into Bindings and writes CombinedStatuses from scripted or automatic
// cluster statuses.
//
// Returned statuses come from ConfigMaps labelled kssim.drover.dev/script=true, whose data key script.yaml
// holds a YAML list of entries {cluster ("*" for every cluster), group, resource, namespace, name, status};
// a later entry wins. With --auto-status=deployments, every destination of a Deployment that no entry covers
// reports it fully available (replicas, readyReplicas, availableReplicas and updatedReplicas equal to
// spec.replicas, 1 when unset), --report-delay after the simulator first sees the Deployment in a Binding
// with that destination. Until then, and for every object no entry or automatic status covers, a
// destination has not reported and is evaluated as a blank report, as KubeStellar does.
//
// It stops cleanly on SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-dev/drover/internal/kubestellarsim"
)

// autoStatusDeployments is the one --auto-status value.
const autoStatusDeployments = "deployments"

type flags struct {
	autoStatus   string
	reportDelay  time.Duration
	bindingDelay time.Duration
	statusDelay  time.Duration
	jitter       time.Duration
	qps          float64
	burst        int
	workers      int
}

// addFlags registers kssim's flags on fs. --kubeconfig is registered by controller-runtime's config package
// on the default flag set and read by ctrl.GetConfig.
func addFlags(fs *flag.FlagSet) *flags {
	f := &flags{}
	fs.StringVar(&f.autoStatus, "auto-status", "",
		"Automatic returned status for objects no script entry covers: empty for none, or "+autoStatusDeployments+
			" (every destination reports a Deployment fully available).")
	fs.DurationVar(&f.reportDelay, "report-delay", 0,
		"How long after an object first appears in a Binding with a destination its automatic status appears there.")
	fs.DurationVar(&f.bindingDelay, "binding-delay", 0, "Delay of every Binding write (and the BindingPolicy status after it).")
	fs.DurationVar(&f.statusDelay, "status-delay", 0, "Delay of every CombinedStatus write.")
	fs.DurationVar(&f.jitter, "delay-jitter", 0, "Random extra delay, up to this long, added to each Binding and CombinedStatus delay.")
	fs.Float64Var(&f.qps, "kube-api-qps", kubestellarsim.DefaultQPS, "Client-side queries per second to the API server.")
	fs.IntVar(&f.burst, "kube-api-burst", kubestellarsim.DefaultBurst, "Client-side burst of requests to the API server.")
	fs.IntVar(&f.workers, "workers", kubestellarsim.DefaultWorkers, "Concurrent Binding workers, and as many CombinedStatus workers.")
	return f
}

// config turns the flags into the simulator's configuration.
func (f *flags) config() (kubestellarsim.Config, error) {
	cfg := kubestellarsim.Config{
		BindingDelay:     f.bindingDelay,
		StatusDelay:      f.statusDelay,
		Jitter:           f.jitter,
		QPS:              float32(f.qps),
		Burst:            f.burst,
		Workers:          f.workers,
		AutoStatusDelay:  f.reportDelay,
		ScriptConfigMaps: true,
		Logger:           ctrl.Log.WithName("kssim"),
	}
	switch f.autoStatus {
	case "":
	case autoStatusDeployments:
		cfg.AutoStatus = kubestellarsim.DeploymentsAutoStatus
	default:
		return cfg, fmt.Errorf("unknown --auto-status %q (want %q or nothing)", f.autoStatus, autoStatusDeployments)
	}
	return cfg, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kssim:", err)
		os.Exit(1)
	}
}

func run() error {
	f := addFlags(flag.CommandLine)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	cfg, err := f.config()
	if err != nil {
		return err
	}
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := kubestellarsim.New(cfg).Start(ctx, restConfig); err != nil {
		return fmt.Errorf("running the simulator: %w", err)
	}
	ctrl.Log.WithName("kssim").Info("Stopped")
	return nil
}
