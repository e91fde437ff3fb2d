package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/measure"
	"github.com/drover-dev/drover/internal/scheme"
)

// The YurtAppDaemon scenario: P NodePools and O YurtAppDaemons that select
// all of them, so the manager keeps P×O child Deployments. Measured, in order:
//
//  1. fan-out: from creating the O owners until all P×O children exist;
//  2. new pool, busy: from creating one more NodePool until its O children exist, repeated (p50/p99), right
//     after the fan-out while kube-controller-manager still works through it;
//  3. the writes each child creation cost, once everything has come to rest, and whether every child's
//     create-time fields were handed to drover's apply;
//  4. no-op resync: the API writes caused by a NodePool event that changes no owner's selection, so that every
//     owner runs a full pass over all pools that has nothing to do (target: zero writes);
//  5. new pool, steady state (target p99 < 1 s): as 2, each sample starting at rest;
//  6. rollout: from changing the image of every owner until every child's pod template has the new image.
//
// Children are observed through a Deployment informer in the scenario's namespace (the observation time of a
// child includes the watch delay). What is measured is the children, not their pods, so the template has
// replicas: 0 and paused: true. Paused Deployments get no ReplicaSets, so kube-controller-manager only writes
// each child's status: that shortens the time the no-op step waits for it by about a third. drover renders and writes the children exactly as it would without
// these two fields.

const (
	yadScenario = "yurtappdaemon"
	// yadPoolLabel marks the pools of one run; its value is the run's id.
	yadPoolLabel = "bench.drover.dev/yad"
	// yadTouchLabel is the label the no-op step puts on one pool: every owner selects the pool before and
	// after, so nothing but a reconcile of every owner follows.
	yadTouchLabel = "bench.drover.dev/touched"
	yadImage      = "registry.example/bench-yad:1"
	yadImageV2    = "registry.example/bench-yad:2"
	// yadWorkers is the number of parallel clients that create the pools.
	yadWorkers = 32
	// yadControllerName is the controller name of YurtAppDaemon in controller-runtime's metrics.
	yadControllerName = "yurtappdaemon"
)

// YurtAppDaemonOption configures the YurtAppDaemon scenario.
type YurtAppDaemonOption func(*yadConfig)

// WithPools sets the number of NodePools (default 1000).
func WithPools(n int) YurtAppDaemonOption { return func(c *yadConfig) { c.pools = n } }

// WithOwners sets the number of YurtAppDaemons selecting every pool (default 10).
func WithOwners(n int) YurtAppDaemonOption { return func(c *yadConfig) { c.owners = n } }

// WithNewPoolSamples sets how many times the new-pool latency is measured (default 20).
func WithNewPoolSamples(n int) YurtAppDaemonOption { return func(c *yadConfig) { c.samples = n } }

// WithManagerMetrics gives the manager's metrics endpoint (host:port, HTTPS with authentication). The
// no-op step then reads controller-runtime's reconcile counters to know that every owner did reconcile;
// without it the step waits a fixed quiet period instead.
func WithManagerMetrics(addr string) YurtAppDaemonOption {
	return func(c *yadConfig) { c.managerMetrics = addr }
}

type yadConfig struct {
	pools, owners, samples int
	managerMetrics         string
}

// YurtAppDaemon returns the YurtAppDaemon scale scenario.
func YurtAppDaemon(opts ...YurtAppDaemonOption) []Scenario {
	cfg := yadConfig{pools: 1000, owners: 10, samples: 20}
	for _, o := range opts {
		o(&cfg)
	}
	return []Scenario{{
		Name: yadScenario,
		Description: fmt.Sprintf("%d YurtAppDaemons × %d NodePools: fan-out, new-pool latency, template rollout, no-op resync writes",
			cfg.owners, cfg.pools),
		Run: cfg.run,
	}}
}

// yadRun is the state of one run of the scenario.
type yadRun struct {
	cfg     yadConfig
	env     Env
	cs      kubernetes.Interface
	c       client.Client
	ns      string
	id      string
	tracker *childTracker
	pools   []string
	figs    []Figure
	// writesBefore are the counted API writes before the owners were created.
	writesBefore map[string]float64
	// mm reads the manager's metrics; nil when they are not available.
	mm *measure.Scraper
}

func (cfg yadConfig) run(ctx context.Context, env Env) ([]Figure, error) {
	if cfg.pools < 1 || cfg.owners < 1 {
		return nil, fmt.Errorf("pools (%d) and owners (%d) must be positive", cfg.pools, cfg.owners)
	}
	cs, err := unlimited(env.Config)
	if err != nil {
		return nil, err
	}
	cfgCopy := rest.CopyConfig(env.Config)
	cfgCopy.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	c, err := client.New(cfgCopy, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	ns, cleanupNS, err := benchNamespace(ctx, cs, "bench-yad")
	if err != nil {
		return nil, err
	}
	r := &yadRun{cfg: cfg, env: env, cs: cs, c: c, ns: ns, id: utilrand.String(5)}
	defer r.cleanup(cleanupNS)

	stopInformer, err := r.startTracker(ctx)
	if err != nil {
		return nil, err
	}
	defer stopInformer()
	var cleanupScraper func()
	r.mm, cleanupScraper = r.managerScraper(ctx)
	defer cleanupScraper()

	// The steps that need a cluster at rest (the no-op resync, the steady-state new-pool latency) come after
	// kube-controller-manager has finished with the fan-out and before the rollout, so they wait for one burst
	// of children, not two.
	steps := []func(context.Context) error{r.createPools, r.fanOut, r.newPoolsBusy, r.settle, r.noopResync, r.newPoolsSteady, r.rollout}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return r.figs, err
		}
	}
	return r.figs, nil
}

func (r *yadRun) logf(format string, args ...any) {
	fmt.Fprintf(r.env.Log, "   "+format+"\n", args...)
}

func (r *yadRun) figure(metric string, value float64, unit, note string) {
	r.figs = append(r.figs, Figure{Scenario: yadScenario, Metric: metric, Value: round(value), Unit: unit, Note: note})
}

func (r *yadRun) poolName(i int) string { return fmt.Sprintf("bench-%s-%04d", r.id, i) }

func (r *yadRun) ownerName(i int) string { return fmt.Sprintf("yad-%02d", i) }

// children is the number of children expected with the pools created so far.
func (r *yadRun) children() int { return len(r.pools) * r.cfg.owners }

// cleanup deletes the namespace (the owners, and through garbage collection their children) and the pools.
// It does not wait for garbage collection: the cluster is stopped after the run.
func (r *yadRun) cleanup(deleteNamespace func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_ = r.c.DeleteAllOf(ctx, &openyurtv1alpha1.YurtAppDaemon{}, client.InNamespace(r.ns))
	deleteNamespace()
	if err := r.c.DeleteAllOf(ctx, &openyurtv1beta1.NodePool{}, client.MatchingLabels{yadPoolLabel: r.id}); err != nil {
		r.logf("deleting the pools: %v", err)
		return
	}
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(openyurtv1beta1.GroupVersion.WithKind("NodePoolList"))
		if err := r.c.List(ctx, &list, client.MatchingLabels{yadPoolLabel: r.id}); err != nil {
			return false, nil //nolint:nilerr // retried until the timeout
		}
		return len(list.Items) == 0, nil
	})
	if err != nil {
		r.logf("the pools of run %s are still being deleted: %v", r.id, err)
	}
}

// createPools creates the P pools with parallel clients. They have no member nodes: a pool without members
// still gets its children, whose pods would stay Pending.
func (r *yadRun) createPools(ctx context.Context) error {
	start := time.Now()
	names := make([]string, r.cfg.pools)
	for i := range names {
		names[i] = r.poolName(i)
	}
	var next atomic.Int64
	errs := make([]error, yadWorkers)
	var wg sync.WaitGroup
	for w := range yadWorkers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(names)) || ctx.Err() != nil {
					return
				}
				if err := r.createPool(ctx, names[i]); err != nil && errs[w] == nil {
					errs[w] = err
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("creating %d NodePools: %w", len(names), err)
	}
	r.pools = names
	r.logf("%d NodePools created in %s", len(names), time.Since(start).Round(time.Millisecond))
	return nil
}

func (r *yadRun) createPool(ctx context.Context, name string) error {
	pool := &openyurtv1beta1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{yadPoolLabel: r.id}},
		Spec:       openyurtv1beta1.NodePoolSpec{Type: openyurtv1beta1.Edge},
	}
	if err := r.c.Create(ctx, pool); err != nil {
		return fmt.Errorf("creating NodePool %s: %w", name, err)
	}
	return nil
}

// owner returns the i-th YurtAppDaemon: a paused Deployment template with replicas 0 selecting the run's
// pools.
func (r *yadRun) owner(i int) *openyurtv1alpha1.YurtAppDaemon {
	labels := map[string]string{"app": r.ownerName(i)}
	pod := benchPod("")
	return &openyurtv1alpha1.YurtAppDaemon{
		ObjectMeta: metav1.ObjectMeta{Name: r.ownerName(i), Namespace: r.ns},
		Spec: openyurtv1alpha1.YurtAppDaemonSpec{
			Selector:         &metav1.LabelSelector{MatchLabels: labels},
			NodePoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{yadPoolLabel: r.id}},
			WorkloadTemplate: openyurtv1alpha1.WorkloadTemplate{DeploymentTemplate: &openyurtv1alpha1.DeploymentTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](0),
					Paused:   true,
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{
							Containers:  []corev1.Container{{Name: "app", Image: yadImage}},
							Tolerations: pod.Spec.Tolerations,
						},
					},
				},
			}},
		},
	}
}

// fanOut creates the owners and waits for every child.
func (r *yadRun) fanOut(ctx context.Context) error {
	var err error
	if r.writesBefore, err = r.apiserverWrites(ctx); err != nil {
		return err
	}
	start := time.Now()
	for i := range r.cfg.owners {
		if err := r.c.Create(ctx, r.owner(i)); err != nil {
			return fmt.Errorf("creating YurtAppDaemon %s: %w", r.ownerName(i), err)
		}
	}
	want := r.children()
	err = r.waitFor(ctx, "children", 30*time.Minute, func() (int, int) { return r.tracker.count(), want })
	secs := time.Since(start).Seconds()
	r.figure("fan-out", secs, "s", fmt.Sprintf("%d owners × %d pools: until all %d child Deployments exist", r.cfg.owners, r.cfg.pools, want))
	r.figure("fan-out-rate", float64(r.tracker.count())/secs, "children/s", "child creates per second during the fan-out")
	return err
}

// newPoolsBusy measures the new-pool latency right after the fan-out, while kube-controller-manager still
// writes the status of the fan-out's children and the owners follow those changes in their status.
func (r *yadRun) newPoolsBusy(ctx context.Context) error {
	lat, err := r.newPoolLatency(ctx, "busy", false)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("NodePool create → its %d children seen, %d samples with %d pools, right after the fan-out while kube-controller-manager still updates the children's status",
		r.cfg.owners, len(lat), r.cfg.pools)
	r.figure("new-pool-busy-p50", ms(measure.Percentile(lat, 50)), "ms", note)
	r.figure("new-pool-busy-p99", ms(measure.Percentile(lat, 99)), "ms", p99Note(len(lat)))
	return nil
}

// newPoolsSteady measures the new-pool latency in steady state: each sample starts once the API writes
// caused by the previous one have come to rest.
func (r *yadRun) newPoolsSteady(ctx context.Context) error {
	before := r.managerSample(ctx)
	lat, err := r.newPoolLatency(ctx, "steady", true)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("NodePool create → its %d children seen, %d samples with %d pools, each at rest (target: p99 < 1 s)",
		r.cfg.owners, len(lat), r.cfg.pools)
	if after := r.managerSample(ctx); before != nil && after != nil {
		note += "; in the manager: " + managerBreakdown(before, after)
	}
	r.figure("new-pool-p50", ms(measure.Percentile(lat, 50)), "ms", note)
	r.figure("new-pool-p99", ms(measure.Percentile(lat, 99)), "ms", p99Note(len(lat)))
	return nil
}

// managerSample returns the manager's metrics, or nil when they cannot be read.
func (r *yadRun) managerSample(ctx context.Context) []measure.Sample {
	if r.mm == nil {
		return nil
	}
	m, err := r.mm.Scrape(ctx)
	if err != nil {
		r.logf("reading the manager's metrics: %v", err)
		return nil
	}
	return m
}

// managerBreakdown describes, from two samples of the manager's metrics, where the time went: the mean time
// from a NodePool event to a child create (drover_yurtappdaemon_pool_provision_seconds), and the number and
// mean duration of the YurtAppDaemon reconciles.
func managerBreakdown(before, after []measure.Sample) string {
	delta := func(name string, match map[string]string) float64 {
		return measure.Sum(after, name, match) - measure.Sum(before, name, match)
	}
	kind := map[string]string{"kind": "YurtAppDaemon"}
	ctrlLabel := map[string]string{"controller": yadControllerName}
	provisions := delta("drover_yurtappdaemon_pool_provision_seconds_count", kind)
	reconciles := delta("controller_runtime_reconcile_time_seconds_count", ctrlLabel)
	out := "no pool provision recorded"
	if provisions > 0 {
		out = fmt.Sprintf("pool event → child create %.0f ms on average over %.0f creates",
			1000*delta("drover_yurtappdaemon_pool_provision_seconds_sum", kind)/provisions, provisions)
	}
	if reconciles > 0 {
		out += fmt.Sprintf(", %.0f reconciles of %.0f ms on average", reconciles,
			1000*delta("controller_runtime_reconcile_time_seconds_sum", ctrlLabel)/reconciles)
	}
	return out
}

func p99Note(samples int) string {
	return fmt.Sprintf("nearest rank over %d samples (with fewer than 100 samples: the slowest)", samples)
}

// newPoolLatency adds one pool at a time and returns, sorted, the times until its O children were seen. With
// atRest, each sample first waits for the API writes to come to rest.
func (r *yadRun) newPoolLatency(ctx context.Context, label string, atRest bool) ([]time.Duration, error) {
	var lat []time.Duration
	for i := range r.cfg.samples {
		if atRest {
			if err := r.quiesce(ctx, 2*time.Second, 2*time.Minute, false); err != nil {
				return nil, fmt.Errorf("waiting for the API writes to come to rest: %w", err)
			}
		}
		name := fmt.Sprintf("bench-%s-%s-%02d", r.id, label, i)
		start := time.Now()
		if err := r.createPool(ctx, name); err != nil {
			return nil, err
		}
		r.pools = append(r.pools, name)
		err := r.waitFor(ctx, "children of "+name, time.Minute, func() (int, int) { return r.tracker.poolCount(name), r.cfg.owners })
		if err != nil {
			return nil, err
		}
		lat = append(lat, r.tracker.lastSeen(name).Sub(start))
	}
	slices.Sort(lat)
	r.logf("new-pool latencies (%s): %v", label, lat)
	return lat, nil
}

// rollout changes the image of every owner and waits until every child's pod template has it.
func (r *yadRun) rollout(ctx context.Context) error {
	patch := fmt.Appendf(nil, `[{"op":"replace","path":"/spec/workloadTemplate/deploymentTemplate/spec/template/spec/containers/0/image","value":%q}]`, yadImageV2)
	start := time.Now()
	for i := range r.cfg.owners {
		o := &openyurtv1alpha1.YurtAppDaemon{ObjectMeta: metav1.ObjectMeta{Name: r.ownerName(i), Namespace: r.ns}}
		if err := r.c.Patch(ctx, o, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			return fmt.Errorf("changing the image of %s: %w", o.Name, err)
		}
	}
	want := r.children()
	err := r.waitFor(ctx, "children with the new image", 30*time.Minute, func() (int, int) { return r.tracker.withImage(yadImageV2), want })
	r.figure("template-rollout", time.Since(start).Seconds(), "s",
		fmt.Sprintf("image change on %d owners → all %d children show it in their pod template", r.cfg.owners, want))
	return err
}

// waitFor polls progress (done, want) until done == want, printing progress every 5 seconds.
func (r *yadRun) waitFor(ctx context.Context, what string, timeout time.Duration, progress func() (int, int)) error {
	start, lastLog := time.Now(), time.Now()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		done, want := progress()
		if time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			r.logf("%s: %d/%d after %s", what, done, want, time.Since(start).Round(time.Second))
		}
		return done >= want, nil
	})
	if err != nil {
		done, want := progress()
		return fmt.Errorf("waiting for %s: %d/%d after %s: %w", what, done, want, time.Since(start).Round(time.Second), err)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// childTracker follows the child Deployments of the scenario's namespace through an informer.
type childTracker struct {
	mu       sync.Mutex
	children map[string]trackedChild // by name
	perPool  map[string]int
	seen     map[string]time.Time // pool → when its latest child was first seen
	images   map[string]int
}

type trackedChild struct{ pool, image string }

func (r *yadRun) startTracker(ctx context.Context) (func(), error) {
	r.tracker = &childTracker{children: map[string]trackedChild{}, perPool: map[string]int{}, seen: map[string]time.Time{}, images: map[string]int{}}
	factory := informers.NewSharedInformerFactoryWithOptions(r.cs, 0, informers.WithNamespace(r.ns))
	// slimDeployment keeps only what is measured, so that 10,000 children cost little memory.
	stop, err := runInformer(ctx, factory, factory.Apps().V1().Deployments().Informer(), slimDeployment, r.tracker.set, r.tracker.remove)
	if err != nil {
		return nil, fmt.Errorf("deployments: %w", err)
	}
	return stop, nil
}

func slimDeployment(obj any) (any, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	slim := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: d.Name, Namespace: d.Namespace, UID: d.UID, ResourceVersion: d.ResourceVersion,
		Labels: map[string]string{openyurtv1alpha1.LabelPoolName: d.Labels[openyurtv1alpha1.LabelPoolName]},
	}}
	for _, c := range d.Spec.Template.Spec.Containers {
		slim.Spec.Template.Spec.Containers = append(slim.Spec.Template.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image})
	}
	return slim, nil
}

func (t *childTracker) set(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	now := time.Now()
	c := trackedChild{pool: d.Labels[openyurtv1alpha1.LabelPoolName]}
	if len(d.Spec.Template.Spec.Containers) > 0 {
		c.image = d.Spec.Template.Spec.Containers[0].Image
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old, existed := t.children[d.Name]
	if existed {
		t.perPool[old.pool]--
		t.images[old.image]--
	} else {
		t.seen[c.pool] = now
	}
	t.children[d.Name] = c
	t.perPool[c.pool]++
	t.images[c.image]++
}

func (t *childTracker) remove(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, existed := t.children[d.Name]; existed {
		t.perPool[old.pool]--
		t.images[old.image]--
		delete(t.children, d.Name)
	}
}

func (t *childTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.children)
}

func (t *childTracker) poolCount(pool string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.perPool[pool]
}

func (t *childTracker) lastSeen(pool string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen[pool]
}

func (t *childTracker) withImage(image string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.images[image]
}

// writeCounts formats counts by key, sorted, as "key=n, ...".
func writeCounts(counts map[string]float64) string {
	keys := make([]string, 0, len(counts))
	for k, v := range counts {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, int64(counts[k])))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
