// Command drover-bench starts a fresh local cluster (internal/localcluster) with the real manager, runs
// the benchmark scenarios against it, prints a table and writes the figures as JSON (.local/bench/).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/drover-dev/drover/internal/bench"
	"github.com/drover-dev/drover/internal/localcluster"
	"github.com/drover-dev/drover/internal/measure"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "drover-bench:", err)
		os.Exit(1)
	}
}

// scenarioFlags are the flags of the scenarios.
type scenarioFlags struct {
	pools, owners, ppsPods, ppsRate, sbpObjects, sbpClusters, sbpRuns *int
}

func newScenarioFlags() *scenarioFlags {
	return &scenarioFlags{
		pools:       flag.Int("pools", 1000, "NodePools of the yurtappdaemon scenario."),
		owners:      flag.Int("owners", 10, "YurtAppDaemons of the yurtappdaemon scenario, each selecting every pool."),
		ppsPods:     flag.Int("pps-pods", 5000, "Pods of the StatefulSet of the persistentpodstate scenario (the scale target is 5000)."),
		ppsRate:     flag.Int("pps-rate", 200, "Pod creates per second of the persistentpodstate scenario."),
		sbpObjects:  flag.Int("sbp-objects", 300, "Deployments the StagedBindingPolicies of the stagedbindingpolicy scenario select."),
		sbpClusters: flag.Int("sbp-clusters", 1000, "ManagedClusters of the stagedbindingpolicy scenario (1 % tier=1, 9 % tier=2, the rest tier=3)."),
		sbpRuns:     flag.Int("sbp-runs", 10, "Runs of the stagedbindingpolicy scenario, each measuring the promotions s1→s2 and s2→s3."),
	}
}

// scenarios lists every scenario, in the order they run. The manager's metrics address is known once the
// cluster is up.
func (f *scenarioFlags) scenarios(managerMetrics string) []bench.Scenario {
	// The anchors run first, so every drover figure has its anchors measured in the same run.
	all := append(bench.Anchors(), bench.YurtAppDaemon(
		bench.WithPools(*f.pools), bench.WithOwners(*f.owners), bench.WithManagerMetrics(managerMetrics))...)
	// The TApp scenario (docs/tapp.md, Performance) follows; its instance count is --n.
	all = append(all, bench.TApp(bench.WithTAppManagerMetrics(managerMetrics))...)
	// The PersistentPodState scenario (docs/persistentpodstate.md, Performance) measures its own anchors
	// (creates with the pod webhook off, a LIST of the pods) next to its figures.
	all = append(all, bench.PersistentPodState(
		bench.WithPPSPods(*f.ppsPods), bench.WithPPSRate(*f.ppsRate), bench.WithPPSManagerMetrics(managerMetrics))...)
	// The StagedBindingPolicy scenario (docs/stagedbindingpolicy.md, Performance) runs kssim in the bench
	// process, scripted by the scenario, so the cluster runs none of its own; it measures its own anchor (a
	// raw write to its watch event) next to each promotion.
	return append(all, bench.StagedBindingPolicy(bench.WithSBPObjects(*f.sbpObjects), bench.WithSBPClusters(*f.sbpClusters),
		bench.WithSBPRuns(*f.sbpRuns), bench.WithSBPManagerMetrics(managerMetrics))...)
}

func run() error {
	n := flag.Int("n", 1000, "Object count of the scenarios that take one (pods for the anchors).")
	sf := newScenarioFlags()
	nodes := flag.Int("nodes", 12, "Fake nodes in the benchmark cluster.")
	only := flag.String("scenarios", "", "Comma-separated scenario names to run; empty runs all.")
	out := flag.String("out", ".local/bench", "Directory for the JSON reports (relative to the repository root unless absolute).")
	dir := flag.String("dir", ".local/bench-cluster", "State directory of the benchmark cluster (relative to the repository root unless absolute).")
	var managerArgs, kcmArgs repeated
	flag.Var(&managerArgs, "manager-arg", "Extra drover-manager flag (--name=value); repeatable, e.g. --manager-arg=--pprof-bind-address=127.0.0.1:6060.")
	flag.Var(&kcmArgs, "kcm-arg", "Extra kube-controller-manager flag (--name=value); repeatable.")
	flag.Parse()

	all := sf.scenarios
	if _, err := selectScenarios(all(""), *only); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	// controller-runtime's caches in the bench process (the stagedbindingpolicy scenario's watches) log
	// through its global logger.
	ctrllog.SetLogger(log)

	root, err := localcluster.FindRepoRoot(".")
	if err != nil {
		return err
	}
	cluster, err := localcluster.Start(logr.NewContext(ctx, log), clusterOptions(root, *dir, *nodes, log, managerArgs, kcmArgs))
	if err != nil {
		return err
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "drover-bench: stopping the cluster:", err)
		}
	}()

	scenarios, err := selectScenarios(all(cluster.MetricsAddr), *only)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(cluster.Nodes))
	for _, nd := range cluster.Nodes {
		names = append(names, nd.Name)
	}
	rep := bench.Run(ctx, bench.Env{Config: cluster.Config, N: *n, Nodes: names, Log: os.Stdout}, scenarios)
	rep.Figures = append(rep.Figures, managerPeakRSS(cluster)...)
	fmt.Println()
	bench.PrintTable(os.Stdout, rep)
	path, err := bench.WriteJSON(inRepo(root, *out), rep)
	if err != nil {
		return err
	}
	fmt.Println("\nreport:", path)
	if len(rep.Errors) > 0 {
		return fmt.Errorf("%d scenario(s) failed", len(rep.Errors))
	}
	return nil
}

// managerPeakRSS is the manager's peak resident memory over the whole run: the figure its memory request and
// limit are sized from. Run one scenario per invocation (-scenarios) to size it for that scenario alone.
func managerPeakRSS(cluster *localcluster.Cluster) []bench.Figure {
	for _, p := range cluster.Processes() {
		if p.Name != localcluster.Manager {
			continue
		}
		rss, err := measure.PeakRSS(p.PID)
		if err != nil {
			fmt.Fprintln(os.Stderr, "drover-bench: reading the manager's peak RSS:", err)
			return nil
		}
		return []bench.Figure{{Scenario: "manager", Metric: "peak RSS", Value: float64(rss >> 20), Unit: "MiB",
			Note: "the manager process's high-water mark (VmHWM) over every scenario of this run"}}
	}
	return nil
}

// clusterOptions are the options of the benchmark cluster.
func clusterOptions(root, dir string, nodes int, log logr.Logger, managerArgs, kcmArgs []string) localcluster.Options {
	return localcluster.Options{
		RepoRoot:   root,
		Dir:        inRepo(root, dir),
		Kubeconfig: filepath.Join(inRepo(root, dir), "kubeconfig"),
		Nodes:      nodes,
		Logger:     log,
		// kssim runs in the bench process (the stagedbindingpolicy scenario scripts it); a second one in the
		// cluster would fight it over every Binding and CombinedStatus.
		SkipKssim: true,

		ManagerArgs: managerArgs,
		// kube-controller-manager's default client limit (20 requests per second) makes it the slowest part
		// of every scenario: after the 10,000-child fan-out it needs over 11 minutes to write their
		// statuses, and the stock StatefulSet anchor measures that limit. The bench cluster gives it the
		// order of the manager's own limit; --kcm-arg flags come after these and win.
		ControllerManagerArgs: append([]string{"--kube-api-qps=300", "--kube-api-burst=600"}, kcmArgs...),
	}
}

func selectScenarios(all []bench.Scenario, only string) ([]bench.Scenario, error) {
	if only == "" {
		return all, nil
	}
	want := strings.Split(only, ",")
	var out []bench.Scenario
	for _, s := range all {
		if slices.Contains(want, s.Name) {
			out = append(out, s)
		}
	}
	if len(out) != len(want) {
		return nil, fmt.Errorf("unknown scenario in %q", only)
	}
	return out, nil
}

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// inRepo resolves a relative path flag against the repository root; an absolute one is kept.
func inRepo(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}
