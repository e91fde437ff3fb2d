package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/kubestellarsim"
	"github.com/drover-dev/drover/internal/measure"
	"github.com/drover-dev/drover/internal/scheme"
)

// The StagedBindingPolicy scenario (docs/stagedbindingpolicy.md, Performance). 1,000 ManagedClusters in three
// tiers (1 % tier=1, 9 % tier=2, the rest tier=3), 300 Deployments with a StatusCollector (count: COUNT,
// available: SUM of returned.status.availableReplicas), and kssim running in this process, scripted by it.
// The cluster runs no kssim of its own. Before the first run the bench waits until the API server has seen no
// write of the setup's kinds for 3 s (kube-controller-manager writes the status of every new Deployment), so
// that the first run does not measure the cluster digesting the setup.
//
// Each run creates a StagedBindingPolicy (a new name per run) with stages s1, s2 and s3 on the three tiers,
// each gated by "every destination reports and the sum of available replicas reaches the number of
// destinations" for every object. Every destination reports every object available, but for one object
// (the held object) the first cluster of each tier reports nothing: as in KubeStellar, the held object's
// CombinedStatus then has a row error for that cluster, and each stage waits on AwaitingStatus.
// Once the stage waits with its BindingPolicy current, its 300 CombinedStatuses present and everything quiet,
// the bench scripts the held cluster's report. The promotion latency runs from t0, the watch event of the
// held object's CombinedStatus carrying the satisfying values, to t1, the later of the watch event of the
// policy with status.activeStage on the next stage and the watch event creating the next stage's
// BindingPolicy. Every time is taken by this process's watches, on one clock; s1→s2 and s2→s3 are measured
// in every run. Just before each promotion the anchor, a raw client's write-to-watch-event latency, is
// measured the same way: an update of a ConfigMap as large as a CombinedStatus, to its watch event. The
// manager's own drover_sbp_promotion_latency_seconds over all runs (start of the promoting pass to the
// committed status) tells how much of the latency is the pass itself.
//
// In the first run, with s3 waiting (900 destinations), two windows follow:
//   - CPU per pass: every object is scripted with a new value that still leaves s3's condition false, so all
//     300 CombinedStatuses change; the manager's process_cpu_seconds_total and controller-runtime's
//     reconcile count and time for the controller before and after give the CPU per pass and the pass
//     time (the manager's CPU includes its other controllers, idle here, and decoding the 300 updates);
//   - zero writes while waiting: 10 s with nothing changing; the policy's and its BindingPolicies'
//     resourceVersions and the controller's reconcile count must not move.
//
// The scenario fails only when it cannot measure; a missed target is a figure.

const (
	sbpScenario   = "stagedbindingpolicy"
	sbpNamespace  = "bench-sbp"
	sbpCollector  = "bench-sbp-aggregator"
	sbpController = "stagedbindingpolicy"
	// sbpBenchLabel marks what the scenario creates outside its namespace, for the cleanup.
	sbpBenchLabel = "bench.drover.dev/scenario"
	// sbpObjectLabel selects the Deployments of the policies.
	sbpObjectLabel = "bench.drover.dev/sbp"
	// sbpTierLabel is the ManagedCluster label the stages select.
	sbpTierLabel = "tier"
	// Defaults: the target's scale.
	sbpDefaultObjects  = 300
	sbpDefaultClusters = 1000
	sbpDefaultRuns     = 10
	// sbpTargetMs is the target of the promotion latency (p95), sbpTargetCPUMs the target CPU per pass.
	sbpTargetMs    = 1000
	sbpTargetCPUMs = 250
	// sbpQuietWindow is the window of the zero-writes check; sbpSettle how long nothing may happen before a
	// trigger.
	sbpQuietWindow = 10 * time.Second
	sbpSettle      = time.Second
	// sbpWait bounds a stage reaching its waiting state, sbpPromoteWait a promotion.
	sbpWait        = 10 * time.Minute
	sbpPromoteWait = 2 * time.Minute
	// kssim's client limits in this process: above what the scenario's bursts need.
	sbpKssimQPS   = 5000
	sbpKssimBurst = 10000
)

// sbpStages are the stage names, one per tier.
var sbpStages = []string{"s1", "s2", "s3"}

// SBPOption configures the StagedBindingPolicy scenario.
type SBPOption func(*sbpConfig)

// WithSBPObjects sets the number of Deployments the policies select (default 300).
func WithSBPObjects(n int) SBPOption { return func(c *sbpConfig) { c.objects = n } }

// WithSBPClusters sets the number of ManagedClusters (default 1,000).
func WithSBPClusters(n int) SBPOption { return func(c *sbpConfig) { c.clusters = n } }

// WithSBPRuns sets the number of runs, each measuring two promotions (default 10).
func WithSBPRuns(n int) SBPOption { return func(c *sbpConfig) { c.runs = n } }

// WithSBPManagerMetrics gives the manager's metrics endpoint (host:port); the scenario needs it.
func WithSBPManagerMetrics(addr string) SBPOption {
	return func(c *sbpConfig) { c.managerMetrics = addr }
}

type sbpConfig struct {
	objects, clusters, runs int
	managerMetrics          string
}

// StagedBindingPolicy returns the StagedBindingPolicy scenario.
func StagedBindingPolicy(opts ...SBPOption) []Scenario {
	cfg := sbpConfig{objects: sbpDefaultObjects, clusters: sbpDefaultClusters, runs: sbpDefaultRuns}
	for _, o := range opts {
		o(&cfg)
	}
	return []Scenario{{
		Name: sbpScenario,
		Description: fmt.Sprintf("%d ManagedClusters in 3 tiers, %d gated Deployments, kssim in process: promotion latency over %d runs, CPU per pass, writes while waiting",
			cfg.clusters, cfg.objects, cfg.runs),
		Run: cfg.run,
	}}
}

// sbpRun is the state of one execution of the scenario.
type sbpRun struct {
	cfg   sbpConfig
	env   Env
	c     client.Client
	cs    kubernetes.Interface
	sim   *kubestellarsim.Sim
	w     *sbpWatch
	mm    *measure.Scraper
	tiers sbpTiers
	// value is the availableReplicas every reporting destination returns in the current run.
	value int64
	// anchorSeq numbers the anchor writes; payload is the anchor ConfigMap's filler.
	anchorSeq int
	payload   string
	samples   []sbpSample
	anchors   []time.Duration
	figs      []Figure
	problems  []error
}

func (cfg sbpConfig) run(ctx context.Context, env Env) ([]Figure, error) {
	if cfg.objects < 1 || cfg.runs < 1 {
		return nil, fmt.Errorf("the scenario needs at least one object and one run, got %d and %d", cfg.objects, cfg.runs)
	}
	tiers, err := newSBPTiers(cfg.clusters)
	if err != nil {
		return nil, err
	}
	if cfg.managerMetrics == "" {
		return nil, errors.New("the scenario needs the manager's metrics endpoint")
	}
	r := &sbpRun{cfg: cfg, env: env, tiers: tiers}
	cleanup, err := r.setup(ctx)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	before, err := r.mm.Scrape(ctx)
	if err != nil {
		return nil, err
	}
	for i := range cfg.runs {
		if err := r.runOnce(ctx, i); err != nil {
			r.reportFigures(ctx, before)
			return r.figs, fmt.Errorf("run %d: %w", i+1, err)
		}
	}
	r.reportFigures(ctx, before)
	return r.figs, errors.Join(r.problems...)
}

func (r *sbpRun) logf(format string, args ...any) {
	fmt.Fprintf(r.env.Log, "   "+format+"\n", args...)
}

func (r *sbpRun) figure(metric string, value float64, unit, note string) {
	r.figs = append(r.figs, Figure{Scenario: sbpScenario, Metric: metric, Value: round(value), Unit: unit, Note: note})
}

// problem records a failed check that does not stop the measurement; the scenario reports it at the end.
func (r *sbpRun) problem(format string, args ...any) {
	err := fmt.Errorf(format, args...)
	r.logf("PROBLEM: %v", err)
	r.problems = append(r.problems, err)
}

// setup makes the clients, the inventory, the workload, the collector, the watches, the metrics scraper and
// starts kssim. The returned cleanup (never nil) undoes it in reverse order.
func (r *sbpRun) setup(ctx context.Context) (func(), error) {
	var cleanups []func()
	cleanup := func() {
		for _, f := range slices.Backward(cleanups) {
			f()
		}
	}
	cfg := rest.CopyConfig(r.env.Config)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return cleanup, fmt.Errorf("creating client: %w", err)
	}
	if r.c, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		return cleanup, fmt.Errorf("creating client: %w", err)
	}
	r.cs = cs
	start := time.Now()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sbpNamespace}}, metav1.CreateOptions{}); err != nil {
		return cleanup, fmt.Errorf("creating namespace %s: %w", sbpNamespace, err)
	}
	cleanups = append(cleanups, r.deleteInventory)
	if err := r.createInventory(ctx); err != nil {
		return cleanup, err
	}
	r.logf("%d ManagedClusters (tiers of %v), %d Deployments and StatusCollector %s created in %s",
		r.cfg.clusters, r.tiers.sizes(), r.cfg.objects, sbpCollector, time.Since(start).Round(time.Millisecond))
	if r.w, err = startSBPWatch(ctx, cfg, sbpNamespace, sbpObjectName(r.cfg.objects-1)); err != nil {
		return cleanup, err
	}
	cleanups = append(cleanups, r.w.stop)
	stopSim, err := r.startKssim(ctx, cfg)
	cleanups = append(cleanups, stopSim)
	if err != nil {
		return cleanup, err
	}
	// Policies are deleted while kssim runs: it holds a finalizer on their BindingPolicies.
	cleanups = append(cleanups, r.deleteAllPolicies)
	mm, stopScraper, err := measure.NewManagerScraper(ctx, r.c, cs, r.cfg.managerMetrics, sbpNamespace, "drover-bench-sbp-metrics")
	cleanups = append(cleanups, stopScraper)
	if err != nil {
		return cleanup, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	r.mm = mm
	if err := r.createAnchor(ctx); err != nil {
		return cleanup, err
	}
	return cleanup, r.settle(ctx)
}

// sbpSettleResources are the resources whose writes must have stopped before the first run: what the
// setup made and what the cluster's controllers write in reaction (Leases are renewed all the time).
var sbpSettleResources = []string{"deployments", "replicasets", "pods", "events", "managedclusters", "bindings",
	"bindingpolicies", "combinedstatuses", "configmaps", "namespaces", "serviceaccounts", "secrets"}

// settle waits (at most 2 minutes) until the API server has seen no write on sbpSettleResources for 3 s,
// so that the first run does not measure the cluster digesting the setup.
func (r *sbpRun) settle(ctx context.Context) error {
	start := time.Now()
	read := func(ctx context.Context) (map[string]float64, error) {
		return apiserverWriteCounts(ctx, r.cs, sbpSettleResources)
	}
	moved, err := waitWritesAtRest(ctx, read, 3*time.Second, 2*time.Minute, nil)
	if err != nil {
		return fmt.Errorf("waiting for the cluster to come to rest after the setup: %w", err)
	}
	for k, v := range moved {
		if v == 0 {
			delete(moved, k)
		}
	}
	r.logf("the cluster came to rest %s after the setup (writes meanwhile: %v)", time.Since(start).Round(time.Millisecond), moved)
	return nil
}

// startKssim runs kssim in this process with the bench's admin configuration and raised client limits, and
// returns once it is ready. The returned stop (never nil) stops it and waits for it.
func (r *sbpRun) startKssim(ctx context.Context, cfg *rest.Config) (func(), error) {
	r.sim = kubestellarsim.New(kubestellarsim.Config{QPS: sbpKssimQPS, Burst: sbpKssimBurst, Logger: sbpLogger(r.env.Log, "kssim")})
	simCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- r.sim.Start(simCtx, cfg) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			r.logf("kssim stopped: %v", err)
		}
	}
	select {
	case <-r.sim.Ready():
		return stop, nil
	case err := <-done:
		done <- err
		return stop, fmt.Errorf("starting kssim: %w", err)
	case <-ctx.Done():
		return stop, ctx.Err()
	}
}

// createInventory creates the ManagedClusters, the StatusCollector and the Deployments.
func (r *sbpRun) createInventory(ctx context.Context) error {
	err := parallel(ctx, r.cfg.clusters, func(ctx context.Context, i int) error {
		return client.IgnoreAlreadyExists(r.c.Create(ctx, sbpManagedCluster(i, r.tiers.tierOf(i))))
	})
	if err != nil {
		return fmt.Errorf("creating ManagedClusters: %w", err)
	}
	if err := client.IgnoreAlreadyExists(r.c.Create(ctx, sbpStatusCollector())); err != nil {
		return fmt.Errorf("creating StatusCollector %s: %w", sbpCollector, err)
	}
	err = parallel(ctx, r.cfg.objects, func(ctx context.Context, i int) error {
		return r.c.Create(ctx, sbpDeployment(i))
	})
	if err != nil {
		return fmt.Errorf("creating Deployments: %w", err)
	}
	return nil
}

// deleteInventory deletes the ManagedClusters, the StatusCollector and the namespace, and waits (at most 5
// minutes) for the namespace to go.
func (r *sbpRun) deleteInventory() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(kubestellarsim.ManagedClusterGVK)
	_ = r.c.DeleteAllOf(ctx, mc, client.MatchingLabels{sbpBenchLabel: sbpScenario})
	_ = r.c.Delete(ctx, &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: sbpCollector}})
	_ = r.cs.CoreV1().Namespaces().Delete(ctx, sbpNamespace, metav1.DeleteOptions{})
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := r.cs.CoreV1().Namespaces().Get(ctx, sbpNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		r.logf("namespace %s is still being deleted", sbpNamespace)
	}
}

// deleteAllPolicies deletes every policy of the scenario (a run that failed midway leaves one) and waits
// until their BindingPolicies are gone.
func (r *sbpRun) deleteAllPolicies() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var list communityv1alpha1.StagedBindingPolicyList
	if err := r.c.List(ctx, &list, client.MatchingLabels{sbpBenchLabel: sbpScenario}); err != nil {
		r.logf("listing the scenario's policies: %v", err)
		return
	}
	for i := range list.Items {
		if err := r.deletePolicy(ctx, list.Items[i].Name); err != nil {
			r.logf("deleting policy %s: %v", list.Items[i].Name, err)
		}
	}
}

// ---- objects ----

// sbpTiers are the upper bounds (exclusive) of the cluster indexes of tiers 1 and 2, and the cluster count.
type sbpTiers struct{ b1, b2, n int }

// newSBPTiers splits n clusters into 1 % tier=1, 9 % tier=2 and the rest tier=3, each at least one.
func newSBPTiers(n int) (sbpTiers, error) {
	if n < 3 {
		return sbpTiers{}, fmt.Errorf("the scenario needs at least 3 clusters, got %d", n)
	}
	b1 := max(1, n/100)
	b2 := min(max(b1+1, n/10), n-1)
	return sbpTiers{b1: b1, b2: b2, n: n}, nil
}

// tierOf is the tier (1, 2 or 3) of cluster i.
func (t sbpTiers) tierOf(i int) int {
	switch {
	case i < t.b1:
		return 1
	case i < t.b2:
		return 2
	}
	return 3
}

// first is the index of the first cluster of the tier of stage st (0-based).
func (t sbpTiers) first(st int) int { return []int{0, t.b1, t.b2}[st] }

// size is the number of clusters of the tier of stage st.
func (t sbpTiers) size(st int) int { return []int{t.b1, t.b2 - t.b1, t.n - t.b2}[st] }

func (t sbpTiers) sizes() []int { return []int{t.size(0), t.size(1), t.size(2)} }

// held is the cluster that holds stage st: the first of its tier, which does not report the held object.
func (t sbpTiers) held(st int) string { return sbpClusterName(t.first(st)) }

func sbpClusterName(i int) string { return fmt.Sprintf("bench-c%04d", i) }

func sbpObjectName(i int) string { return fmt.Sprintf("sbp-%04d", i) }

func sbpManagedCluster(i, tier int) *unstructured.Unstructured {
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(kubestellarsim.ManagedClusterGVK)
	mc.SetName(sbpClusterName(i))
	mc.SetLabels(map[string]string{sbpTierLabel: strconv.Itoa(tier), sbpBenchLabel: sbpScenario})
	_ = unstructured.SetNestedField(mc.Object, true, "spec", "hubAcceptsClient")
	return mc
}

func sbpStatusCollector() *controlv1alpha1.StatusCollector {
	available := controlv1alpha1.Expression("returned.status.availableReplicas")
	return &controlv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: sbpCollector, Labels: map[string]string{sbpBenchLabel: sbpScenario}},
		Spec: controlv1alpha1.StatusCollectorSpec{
			CombinedFields: []controlv1alpha1.NamedAggregator{
				{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
				{Name: "available", Type: controlv1alpha1.AggregatorTypeSum, Subject: &available},
			},
			Limit: 20,
		},
	}
}

// sbpDeployment is one selected object. It is paused, so kube-controller-manager makes no ReplicaSet and no
// pod for it: only kssim's scripted reports count.
func sbpDeployment(i int) *appsv1.Deployment {
	labels := map[string]string{sbpObjectLabel: "gated", "app": sbpObjectName(i)}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: sbpObjectName(i), Namespace: sbpNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Paused:   true,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": sbpObjectName(i)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": sbpObjectName(i)}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/bench:1"}}},
			},
		},
	}
}

// sbpCondition is every stage's condition: every destination reports, and the available replicas they
// report add up to at least one per destination.
func sbpCondition(collector string) string {
	return fmt.Sprintf(`results[%q][0].count >= double(size(destinations)) && results[%q][0].available >= double(size(destinations))`,
		collector, collector)
}

// sbpPolicy is the policy of one run: the selected Deployments of ns, stages s1..s3 on tiers 1..3.
func sbpPolicy(name, ns string) *communityv1alpha1.StagedBindingPolicy {
	sbp := &communityv1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{sbpBenchLabel: sbpScenario}},
		Spec: communityv1alpha1.StagedBindingPolicySpec{
			Downsync: []controlv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{
					APIGroup:        ptr.To("apps"),
					Resources:       []string{"deployments"},
					Namespaces:      []string{ns},
					ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{sbpObjectLabel: "gated"}}},
				},
				DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{sbpCollector}},
			}},
		},
	}
	for i, st := range sbpStages {
		sbp.Spec.Stages = append(sbp.Spec.Stages, communityv1alpha1.Stage{
			Name:             st,
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{sbpTierLabel: strconv.Itoa(i + 1)}}},
			Condition:        sbpCondition(sbpCollector),
		})
	}
	return sbp
}

// sbpScript is kssim's script: every destination reports every object with value available replicas, but
// each cluster of holding does not report the held object (the last one). Entries are applied in order,
// so the held clusters' entries win over the AllClusters ones.
func sbpScript(objects int, value int64, holding []string) []kubestellarsim.ScriptEntry {
	entry := func(cluster, name string, status map[string]any) kubestellarsim.ScriptEntry {
		return kubestellarsim.ScriptEntry{Cluster: cluster, Group: "apps", Resource: "deployments", Namespace: sbpNamespace, Name: name, Status: status}
	}
	out := make([]kubestellarsim.ScriptEntry, 0, objects+len(holding))
	for i := range objects {
		out = append(out, entry(kubestellarsim.AllClusters, sbpObjectName(i), map[string]any{"availableReplicas": value}))
	}
	for _, c := range holding {
		out = append(out, entry(c, sbpObjectName(objects-1), nil))
	}
	return out
}

// holding are the held clusters of the stages from st on.
func (r *sbpRun) holding(st int) []string {
	var out []string
	for i := st; i < len(sbpStages); i++ {
		out = append(out, r.tiers.held(i))
	}
	return out
}
