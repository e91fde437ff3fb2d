package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/measure"
	"github.com/drover-dev/drover/internal/scheme"
)

// The TApp scenario (docs/tapp.md, Performance). With N instances (--n), measured in order:
//
//  1. raw creation: a raw client creates N plain pods with the TApp's pod template (32 parallel clients, no
//     client-side limit) on the kwok nodes and waits until every pod is Running and Ready;
//  2. raw update: the raw client patches the image of those pods in waves of ceil(10% of N), each wave
//     waiting until kwok (the drover-pod-inplace-image stage) reports the new image and the pods are Ready;
//  3. raw-gated creation and update: the same with drover's gate protocol done by hand (pods with the
//     tkestack.io/InPlaceUpdate readiness gate, gate True after each create; per wave gate False, image
//     patch, wait for kwok's image report, gate True, wait for Ready). Not a target: it tells what the
//     protocol costs on this cluster (three writes per pod and three kwok reactions instead of one each)
//     from what the controller adds;
//  4. TApp creation: from creating a TApp of N instances (maxUnavailable "10%") until status.availableReplicas
//     is N;
//  5. TApp update: from changing spec.template's image until status.observedGeneration is the new generation,
//     updatedReplicas and availableReplicas are N and the Progressing condition is False;
//
// and reports the ratios drover / raw (targets 1.5× for creation and 2× for the update; 3× is the most
// that is acceptable, not the goal) and drover / raw-gated, the largest number of unavailable instances seen during the TApp update
// against the budget, and the API writes drover made per instance in each TApp phase.
//
// Each raw client has a namespace of its own, deleted (and waited for) before the next phase, so that every
// phase runs on the same cluster in the same state. Timings are wall-clock times on the local cluster: everything
// (etcd, kube-apiserver, the scheduler, kwok, the manager and this client) shares the machine's CPUs.
//
// Unavailability is observed through a pod informer of the namespace: the watch delivers the namespace's
// pod changes in resourceVersion order, so the count after each event is a state the namespace really was
// in. A pod counts as available when it exists, is not terminating, is Running and Ready, its
// tkestack.io/InPlaceUpdate gate (when present) is not False and kwok reports the pod spec's image for every
// container (a kubelet restarting a container for a new image would not report it ready meanwhile). That is
// drover's definition of an available instance seen from outside, plus the image check.
//
// API writes are counted from the kube-apiserver's apiserver_request_total (mutating verbs on pods, tapps,
// persistentvolumeclaims and events with their subresources, dry runs excluded), before each phase and once
// the counters have come to rest after it. That metric has no client label: pods/status writes are drover's
// gate writes plus kwok's status reports, pods/binding is the scheduler, events include the scheduler's. With
// the manager's metrics (WithTAppManagerMetrics) drover's own counter drover_tapp_pod_writes_total separates
// drover's pod writes exactly; without them the pods/status writes are all counted as drover's, an upper
// bound.

const (
	tappScenario = "tapp"
	tappName     = "bench"
	tappImage    = "registry.example/bench-tapp:1"
	tappImageV2  = "registry.example/bench-tapp:2"
	// tappBudgetPercent is updateStrategy.maxUnavailable of the TApp, and the wave size of the raw update.
	tappBudgetPercent = 10
	// tappQuiet is how long the counted API writes must stay still before a phase's writes are read.
	tappQuiet = 3 * time.Second
	// tappPhaseTimeout bounds each measured wait.
	tappPhaseTimeout = 30 * time.Minute
)

// tappCountedResources are the resources whose writes the scenario counts.
var tappCountedResources = []string{"pods", "tapps", "persistentvolumeclaims", "events"}

// TAppOption configures the TApp scenario.
type TAppOption func(*tappConfig)

// WithTAppInstances sets the number of instances; 0 (the default) takes the run's N (--n).
func WithTAppInstances(n int) TAppOption { return func(c *tappConfig) { c.instances = n } }

// WithTAppManagerMetrics gives the manager's metrics endpoint (host:port, HTTPS with authentication), so that
// drover's pod writes are read from its own counters rather than estimated from the kube-apiserver's.
func WithTAppManagerMetrics(addr string) TAppOption {
	return func(c *tappConfig) { c.managerMetrics = addr }
}

type tappConfig struct {
	instances      int
	managerMetrics string
}

// TApp returns the TApp scenario.
func TApp(opts ...TAppOption) []Scenario {
	var cfg tappConfig
	for _, o := range opts {
		o(&cfg)
	}
	n := "N"
	if cfg.instances > 0 {
		n = fmt.Sprint(cfg.instances)
	}
	return []Scenario{{
		Name: tappScenario,
		Description: fmt.Sprintf("TApp of %s instances: creation and image update (maxUnavailable %d%%) against a raw client, budget, writes per instance",
			n, tappBudgetPercent),
		Run: cfg.run,
	}}
}

// tappRun is the state of one run of the scenario.
type tappRun struct {
	env    Env
	cfg    tappConfig
	n      int
	budget int
	id     string
	cs     kubernetes.Interface
	c      client.WithWatch
	mm     *measure.Scraper
	figs   []Figure
	// Results of the phases, for the ratios.
	raw, gated             rawResult
	tappCreate, tappUpdate time.Duration
}

func (cfg tappConfig) run(ctx context.Context, env Env) ([]Figure, error) {
	n := cfg.instances
	if n == 0 {
		n = env.N
	}
	if n < 1 {
		return nil, fmt.Errorf("the TApp scenario needs at least one instance, got %d", n)
	}
	cs, err := unlimited(env.Config)
	if err != nil {
		return nil, err
	}
	restCfg := rest.CopyConfig(env.Config)
	restCfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	c, err := client.NewWithWatch(restCfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	r := &tappRun{env: env, cfg: cfg, n: n, budget: budgetOf(n), id: utilrand.String(5), cs: cs, c: c}
	r.logf("%d instances, budget %d unavailable (%d%%, rounded up), %d fake nodes", n, r.budget, tappBudgetPercent, len(env.Nodes))

	if r.raw, err = r.rawPhases(ctx, false); err != nil {
		return r.figs, err
	}
	if r.gated, err = r.rawPhases(ctx, true); err != nil {
		return r.figs, err
	}
	err = r.tappPhases(ctx)
	r.ratios()
	return r.figs, err
}

func (r *tappRun) logf(format string, args ...any) {
	fmt.Fprintf(r.env.Log, "   "+format+"\n", args...)
}

func (r *tappRun) figure(metric string, value float64, unit, note string) {
	r.figs = append(r.figs, Figure{Scenario: tappScenario, Metric: metric, Value: round(value), Unit: unit, Note: note})
}

// tappBudget is updateStrategy.maxUnavailable of the TApp.
var tappBudget = intstr.FromString(fmt.Sprintf("%d%%", tappBudgetPercent))

// budgetOf returns how many of n instances tappBudget lets be unavailable at once, resolved by drover's own
// rule (a percentage of n rounded up): the raw update's wave size and the budget the TApp update is held to.
func budgetOf(n int) int {
	b, _ := tkestackv1.ResolveBudget(tappBudget, n)
	return b
}

// instanceName is the pod name of instance i, for the TApp (<tapp>-<id>) and the raw pods alike.
func instanceName(i int) string { return fmt.Sprintf("%s-%d", tappName, i) }

// tappTemplate is the pod template of the TApp and of the raw pods: one container, tolerating the fake
// nodes' taints.
func tappTemplate(image string) corev1.PodTemplateSpec {
	pod := benchPod("")
	pod.Spec.Containers[0].Image = image
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench-tapp"}},
		Spec:       pod.Spec,
	}
}

// ---- raw client ----

// rawResult is what one raw client measured.
type rawResult struct{ create, update time.Duration }

// rawPhases measures a raw client's creation and update in a namespace of their own, then deletes it and
// waits until it is gone.
//
// Plain (gated false), the client does the minimal writes of a pod workload without the gate: one create per
// pod, then one image patch per pod in waves of the budget, each wave waiting until kwok reports the new
// image and the pods are Ready. Gated, it follows drover's in-place update gate protocol by hand, so that its figures
// tell the cost of the protocol on this cluster from the cost of the controller: the pods carry the
// tkestack.io/InPlaceUpdate readiness gate; creation writes the gate True right after each create; each
// update wave writes the gate False, patches the image, waits until kwok reports the new image, writes the
// gate True and waits until the pods are Ready.
func (r *tappRun) rawPhases(ctx context.Context, gated bool) (rawResult, error) {
	var res rawResult
	label, prefix := "raw", "bench-tapp-raw"
	if gated {
		label, prefix = "raw-gated", "bench-tapp-rawgate"
	}
	ns, cleanup, err := benchNamespace(ctx, r.cs, prefix)
	if err != nil {
		return res, err
	}
	defer func() {
		cleanup()
		r.waitNamespaceGone(ns)
	}()
	tr, stop, err := startPodTracker(ctx, r.cs, ns, r.n)
	if err != nil {
		return res, err
	}
	defer stop()
	// The namespaces of earlier scenarios are deleted in the background; their pods' deletion would be
	// measured with the raw creation.
	r.waitTerminatingNamespaces(ctx)
	if err := r.quiesce(ctx, 3*time.Minute); err != nil {
		r.logf("the counted API writes did not come to rest before the %s creation (%v); measuring anyway", label, err)
	}
	rc := &rawClient{label: label, gated: gated, pods: r.cs.CoreV1().Pods(ns), tr: tr}
	if res.create, err = r.rawCreate(ctx, rc); err != nil {
		return res, err
	}
	res.update, err = r.rawUpdate(ctx, rc)
	return res, err
}

// rawClient is the raw client of one namespace.
type rawClient struct {
	label string
	gated bool
	pods  typedcorev1.PodInterface
	tr    *podTracker
}

// gate writes the gate condition of instance i, as drover does (a strategic merge on status.conditions).
func (rc *rawClient) gate(ctx context.Context, i int, status corev1.ConditionStatus) error {
	body := fmt.Appendf(nil, `{"status":{"conditions":[{"type":%q,"status":%q,"lastTransitionTime":%q}]}}`,
		tkestackv1.InPlaceUpdateReady, status, time.Now().UTC().Format(time.RFC3339))
	_, err := rc.pods.Patch(ctx, instanceName(i), types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}

// rawCreate creates the pods and waits until all are Running and Ready.
func (r *tappRun) rawCreate(ctx context.Context, rc *rawClient) (time.Duration, error) {
	label, gated, pods, tr := rc.label, rc.gated, rc.pods, rc.tr
	before, err := apiserverWriteCounts(ctx, r.cs, tappCountedResources)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	tmpl := tappTemplate(tappImage)
	if gated {
		tmpl.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: tkestackv1.InPlaceUpdateReady}}
	}
	if err := parallel(ctx, r.n, func(ctx context.Context, i int) error {
		pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
		pod.Name = instanceName(i)
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		if gated {
			return rc.gate(ctx, i, corev1.ConditionTrue)
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("%s creation: %w", label, err)
	}
	created := time.Since(start)
	at, err := tr.waitFor(ctx, r.logf, label+" pods Running and Ready", tappPhaseTimeout, func(t *podTracker) (bool, string) {
		a := t.available()
		return a == r.n, fmt.Sprintf("%d/%d", a, r.n)
	})
	if err != nil {
		return 0, err
	}
	took := at.Sub(start)
	r.logf("%s creation: writes done after %s, all Running and Ready after %s", label, created.Round(time.Millisecond), took.Round(time.Millisecond))
	if err := r.quiesce(ctx, 3*time.Minute); err != nil {
		r.logf("the counted API writes did not come to rest after the %s creation (%v); counting anyway", label, err)
	}
	after, err := apiserverWriteCounts(ctx, r.cs, tappCountedResources)
	if err != nil {
		return 0, err
	}
	what := "plain pods (the TApp's template, no readiness gate) created"
	if gated {
		what = "pods with the TApp's template and readiness gate created, each followed by its gate-True write,"
	}
	r.figure(label+"-create-seconds", took.Seconds(), "s",
		fmt.Sprintf("%d %s by %d parallel clients until all Running and Ready (the writes alone: %.2f s); kube-apiserver writes: %s",
			r.n, what, rawWorkers, created.Seconds(), writeCounts(subtractCounts(after, before))))
	return took, nil
}

// rawUpdate changes the pods' image in waves of the budget.
func (r *tappRun) rawUpdate(ctx context.Context, rc *rawClient) (time.Duration, error) {
	label, gated, pods, tr := rc.label, rc.gated, rc.pods, rc.tr
	before, err := apiserverWriteCounts(ctx, r.cs, tappCountedResources)
	if err != nil {
		return 0, err
	}
	patch := fmt.Appendf(nil, `{"spec":{"containers":[{"name":%q,"image":%q}]}}`, tappTemplate("").Spec.Containers[0].Name, tappImageV2)
	tr.resetMax()
	start := time.Now()
	waves := 0
	for lo := 0; lo < r.n; lo += r.budget {
		hi := min(lo+r.budget, r.n)
		wave := fmt.Sprintf("%s update wave %d", label, waves)
		if err := parallel(ctx, hi-lo, func(ctx context.Context, i int) error {
			if gated {
				if err := rc.gate(ctx, lo+i, corev1.ConditionFalse); err != nil {
					return err
				}
			}
			_, err := pods.Patch(ctx, instanceName(lo+i), types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			return err
		}); err != nil {
			return 0, fmt.Errorf("%s: %w", wave, err)
		}
		if gated {
			if _, err := tr.waitFor(ctx, r.logf, wave+" (image reported)", tappPhaseTimeout, func(t *podTracker) (bool, string) {
				done := t.reportingImage(lo, hi, tappImageV2)
				return done == hi-lo, fmt.Sprintf("%d/%d", done, hi-lo)
			}); err != nil {
				return 0, err
			}
			if err := parallel(ctx, hi-lo, func(ctx context.Context, i int) error {
				return rc.gate(ctx, lo+i, corev1.ConditionTrue)
			}); err != nil {
				return 0, fmt.Errorf("%s: %w", wave, err)
			}
		}
		if _, err := tr.waitFor(ctx, r.logf, wave, tappPhaseTimeout, func(t *podTracker) (bool, string) {
			done := t.availableWithImage(lo, hi, tappImageV2)
			return done == hi-lo, fmt.Sprintf("%d/%d", done, hi-lo)
		}); err != nil {
			return 0, err
		}
		waves++
	}
	took := time.Since(start)
	maxU, _, _ := tr.maxUnavailable()
	r.logf("%s update: %d waves in %s, at most %d pods unavailable", label, waves, took.Round(time.Millisecond), maxU)
	if err := r.quiesce(ctx, 3*time.Minute); err != nil {
		r.logf("the counted API writes did not come to rest after the %s update (%v); counting anyway", label, err)
	}
	after, err := apiserverWriteCounts(ctx, r.cs, tappCountedResources)
	if err != nil {
		return 0, err
	}
	what := "image patch"
	if gated {
		what = "gate False + image patch, wait for kwok's image report, gate True,"
	}
	r.figure(label+"-update-seconds", took.Seconds(), "s",
		fmt.Sprintf("%s of %d pods in %d waves of %d (%d parallel clients), each wave waiting for kwok to report the new image and the pods Ready; at most %d pods seen unavailable; kube-apiserver writes: %s",
			what, r.n, waves, r.budget, rawWorkers, maxU, writeCounts(subtractCounts(after, before))))
	return took, nil
}

// parallel runs do(0..n-1) with rawWorkers parallel clients and returns the number of failures with the
// first error.
func parallel(ctx context.Context, n int, do func(ctx context.Context, i int) error) error {
	var next, failures atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range min(rawWorkers, n) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				if err := do(ctx, int(i)); err != nil {
					failures.Add(1)
					once.Do(func() { firstErr = err })
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if failures.Load() > 0 {
		return fmt.Errorf("%d of %d writes failed, first: %w", failures.Load(), n, firstErr)
	}
	return nil
}

// ---- TApp ----

// tappPhases measures drover's creation and update of the TApp.
func (r *tappRun) tappPhases(ctx context.Context) error {
	ns, cleanup, err := benchNamespace(ctx, r.cs, "bench-tapp")
	if err != nil {
		return err
	}
	mm, cleanupMetrics := r.managerScraper(ctx, ns)
	r.mm = mm
	defer func() {
		cleanupMetrics()
		_ = r.c.DeleteAllOf(context.Background(), &tkestackv1.TApp{}, client.InNamespace(ns))
		cleanup()
		r.waitNamespaceGone(ns)
	}()
	tr, stop, err := startPodTracker(ctx, r.cs, ns, r.n)
	if err != nil {
		return err
	}
	defer stop()

	if err := r.quiesce(ctx, 5*time.Minute); err != nil {
		r.logf("the counted API writes did not come to rest before the TApp creation (%v); measuring anyway", err)
	}
	before, err := r.snapshot(ctx)
	if err != nil {
		return err
	}
	app := &tkestackv1.TApp{
		ObjectMeta: metav1.ObjectMeta{Name: tappName, Namespace: ns},
		Spec: tkestackv1.TAppSpec{
			Replicas: int32(r.n),
			Selector: &metav1.LabelSelector{MatchLabels: tappTemplate(tappImage).Labels},
			Template: tappTemplate(tappImage),
			UpdateStrategy: tkestackv1.UpdateStrategy{
				MaxUnavailable: ptr.To(tappBudget),
			},
		},
	}
	start := time.Now()
	if err := r.c.Create(ctx, app); err != nil {
		return fmt.Errorf("creating the TApp: %w", err)
	}
	at, err := r.waitTApp(ctx, ns, "TApp available", tr, start, func(t *tkestackv1.TApp) bool {
		return t.Status.ObservedGeneration >= app.Generation && int(t.Status.AvailableReplicas) == r.n
	})
	if err != nil {
		return err
	}
	r.tappCreate = at.Sub(start)
	podsAt := tr.fullSince()
	r.logf("TApp creation: availableReplicas %d after %s (pods: all available after %s)", r.n, r.tappCreate.Round(time.Millisecond), podsAt.Sub(start).Round(time.Millisecond))
	r.figure("create-seconds", r.tappCreate.Seconds(), "s",
		fmt.Sprintf("TApp of %d instances created until status.availableReplicas = %d (the pod watch saw all available after %.2f s)",
			r.n, r.n, podsAt.Sub(start).Seconds()))
	if err := r.quiesce(ctx, 5*time.Minute); err != nil {
		r.logf("the counted API writes did not come to rest after the TApp creation (%v); counting anyway", err)
	}
	after, err := r.snapshot(ctx)
	if err != nil {
		return err
	}
	r.writeFigures("create", before, after, map[string]float64{"POST tapps": 1}, 2)

	// The update.
	before = after
	patch := fmt.Appendf(nil, `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, tappImageV2)
	tr.resetMax()
	start = time.Now()
	if err := r.c.Patch(ctx, app, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("changing the TApp's image: %w", err)
	}
	gen := app.Generation
	at, err = r.waitTApp(ctx, ns, "TApp updated", tr, start, func(t *tkestackv1.TApp) bool {
		s := t.Status
		return s.ObservedGeneration >= gen && int(s.UpdatedReplicas) == r.n && int(s.AvailableReplicas) == r.n &&
			meta.IsStatusConditionFalse(s.Conditions, tkestackv1.TAppProgressing)
	})
	if err != nil {
		r.budgetFigures(tr)
		return err
	}
	r.tappUpdate = at.Sub(start)
	r.logf("TApp update: updated and available %d, Progressing False after %s", r.n, r.tappUpdate.Round(time.Millisecond))
	r.figure("update-seconds", r.tappUpdate.Seconds(), "s",
		fmt.Sprintf("spec.template image change (maxUnavailable %d%%) until observedGeneration is current, updatedReplicas = availableReplicas = %d and Progressing False",
			tappBudgetPercent, r.n))
	r.budgetFigures(tr)
	if err := r.quiesce(ctx, 5*time.Minute); err != nil {
		r.logf("the counted API writes did not come to rest after the TApp update (%v); counting anyway", err)
	}
	if after, err = r.snapshot(ctx); err != nil {
		return err
	}
	r.writeFigures("update", before, after, map[string]float64{"PATCH tapps": 1}, 3)
	return nil
}

// budgetFigures reports the largest number of unavailable instances seen during the update.
func (r *tappRun) budgetFigures(tr *podTracker) {
	maxU, reasons, over := tr.maxUnavailable()
	r.figure("update-max-unavailable", float64(maxU), "instances",
		fmt.Sprintf("most instances unavailable at once during the update (budget %d = %d%% of %d, rounded up); at that moment: %s",
			r.budget, tappBudgetPercent, r.n, reasons))
	exceeded := 0.0
	note := "never: the budget was respected at every observed state"
	if maxU > r.budget {
		exceeded = 1
		note = fmt.Sprintf("EXCEEDED: %d of the observed states had more than %d unavailable instances; first: %s", over.count, r.budget, over.first)
		r.logf("budget exceeded: %s", note)
	}
	r.figure("update-budget-exceeded", exceeded, "bool", note)
}

// ratios reports drover / raw for the phases that both finished.
func (r *tappRun) ratios() {
	ratio := func(metric string, drover, raw time.Duration, note string) {
		if drover > 0 && raw > 0 {
			r.figure(metric, drover.Seconds()/raw.Seconds(), "×", note)
		}
	}
	// The targets compare drover with a raw client doing the same minimal writes and waits: a TApp
	// instance carries the tkestack.io/InPlaceUpdate readiness gate, so the minimal creation is the pod plus
	// its gate-True write, and the minimal in-place update is gate False, the image patch, the wait for the
	// kubelet to report the new image, then gate True. The plain raw client (no gate) is reported beside it:
	// it tells what the gate protocol itself costs on this cluster, which no TApp controller can avoid.
	ratio("create-ratio", r.tappCreate, r.gated.create,
		"TApp creation / raw client creating the same gated pods with their gate writes (target ≤ 1.5×, never above 3×)")
	ratio("update-ratio", r.tappUpdate, r.gated.update,
		"TApp update / raw client doing the same gate protocol in waves of the budget (target ≤ 2×, never above 3×)")
	ratio("create-ratio-plain", r.tappCreate, r.raw.create,
		"TApp creation / raw creation of plain pods without the gate (not a target: adds the gate's cost)")
	ratio("update-ratio-plain", r.tappUpdate, r.raw.update,
		"TApp update / raw image patches in waves without the gate (not a target: adds the gate protocol's cost)")
}

// waitTApp waits, through a watch of the TApp, until done holds for it and returns when it first did. It
// prints progress every 5 seconds.
func (r *tappRun) waitTApp(ctx context.Context, ns, what string, tr *podTracker, start time.Time, done func(*tkestackv1.TApp) bool) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, tappPhaseTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	var last *tkestackv1.TApp
	progress := func() string {
		if last == nil {
			return "no status yet"
		}
		s := last.Status
		return fmt.Sprintf("generation %d observed %d, available %d, ready %d, updated %d of %d; pods available %d",
			last.Generation, s.ObservedGeneration, s.AvailableReplicas, s.ReadyReplicas, s.UpdatedReplicas, r.n, tr.available())
	}
	for {
		var app tkestackv1.TApp
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tappName}, &app); err != nil {
			if ctx.Err() != nil {
				return time.Time{}, fmt.Errorf("waiting for %s: %s: %w", what, progress(), ctx.Err())
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		last = &app
		if done(&app) {
			return time.Now(), nil
		}
		w, err := r.c.Watch(ctx, &tkestackv1.TAppList{}, &client.ListOptions{
			Namespace:     ns,
			FieldSelector: fields.OneTermEqualSelector("metadata.name", tappName),
			Raw:           &metav1.ListOptions{ResourceVersion: app.ResourceVersion},
		})
		if err != nil {
			if ctx.Err() != nil {
				return time.Time{}, fmt.Errorf("waiting for %s: %s: %w", what, progress(), ctx.Err())
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		at, ok, err := func() (time.Time, bool, error) {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return time.Time{}, false, fmt.Errorf("waiting for %s: %s: %w", what, progress(), ctx.Err())
				case <-tick.C:
					r.logf("%s: %s after %s", what, progress(), time.Since(start).Round(time.Second))
				case ev, open := <-w.ResultChan():
					if !open {
						return time.Time{}, false, nil
					}
					t, isApp := ev.Object.(*tkestackv1.TApp)
					if !isApp || ev.Type == watch.Error {
						return time.Time{}, false, nil
					}
					if ev.Type == watch.Deleted {
						return time.Time{}, false, fmt.Errorf("waiting for %s: the TApp was deleted", what)
					}
					last = t
					if done(t) {
						return time.Now(), true, nil
					}
				}
			}
		}()
		if err != nil || ok {
			return at, err
		}
	}
}

// ---- write accounting ----

// tappSnapshot is the counters a phase's writes are computed from.
type tappSnapshot struct {
	apiserver map[string]float64
	// manager holds the manager's counters (nil without its metrics): "op/<operation>" from
	// drover_tapp_pod_writes_total, "reconciles" from controller_runtime_reconcile_total of the tapp
	// controller, and "rest/<METHOD>" from rest_client_requests_total.
	manager map[string]float64
}

func (r *tappRun) snapshot(ctx context.Context) (tappSnapshot, error) {
	var s tappSnapshot
	var err error
	if s.apiserver, err = apiserverWriteCounts(ctx, r.cs, tappCountedResources); err != nil {
		return s, err
	}
	if r.mm == nil {
		return s, nil
	}
	m, err := r.mm.Scrape(ctx)
	if err != nil {
		r.logf("reading the manager's metrics: %v; counting from the kube-apiserver only", err)
		r.mm = nil
		return s, nil
	}
	s.manager = map[string]float64{
		"reconciles": measure.Sum(m, "controller_runtime_reconcile_total", map[string]string{"controller": "tapp"}),
	}
	for _, sm := range m {
		switch sm.Name {
		case "drover_tapp_pod_writes_total":
			s.manager["op/"+sm.Labels["operation"]] += sm.Value
			if res := sm.Labels["result"]; res != "success" {
				s.manager["failed/"+sm.Labels["operation"]+"/"+res] += sm.Value
			}
		case "rest_client_requests_total":
			if slices.Contains(mutatingVerbs, sm.Labels["method"]) {
				s.manager["rest/"+sm.Labels["method"]] += sm.Value
			}
		}
	}
	return s, nil
}

// tappWrites is drover's share of one phase's writes.
type tappWrites struct {
	// pods: pod creates, patches and deletes (only drover writes TApp pods in the scenario).
	pods float64
	// gates: drover's gate writes on pods/status (from its own counter, or every pods/status write without it).
	gates float64
	// podStatus: every pods/status write the kube-apiserver served (drover's gates and kwok's reports).
	podStatus float64
	// tappStatus: TApp status writes (only drover writes them).
	tappStatus float64
	// tappSpec: TApp spec writes by drover (the scenario's own writes removed).
	tappSpec float64
	// events: event writes (drover's and the scheduler's).
	events float64
	// exact says whether the gate writes come from drover's own counter.
	exact bool
}

func (w tappWrites) total() float64 { return w.pods + w.gates + w.tappStatus + w.tappSpec }

// droverWrites splits the kube-apiserver's write counts of a phase (delta, by "VERB resource[/sub]") into
// drover's writes. own are the scenario's own writes, removed. gateWrites is drover's count of its gate
// writes, or nil when unknown (then every pods/status write counts as drover's).
func droverWrites(delta, own map[string]float64, gateWrites *float64) tappWrites {
	var w tappWrites
	for k, v := range delta {
		v -= own[k]
		_, res, _ := strings.Cut(k, " ")
		switch res {
		case "pods", "pods/eviction", "persistentvolumeclaims":
			w.pods += v
		case "pods/status":
			w.podStatus += v
		case "tapps/status":
			w.tappStatus += v
		case "tapps", "tapps/scale":
			w.tappSpec += v
		case "events":
			w.events += v
		}
	}
	w.gates = w.podStatus
	if gateWrites != nil {
		w.gates, w.exact = *gateWrites, true
	}
	return w
}

// writeFigures reports drover's writes per instance in a phase. budget is drover's pod-write budget per
// instance for it: 2 for a creation (pod, gate True), 3 for an in-place update (gate False, image, gate True).
func (r *tappRun) writeFigures(phase string, before, after tappSnapshot, own map[string]float64, budget int) {
	delta := subtractCounts(after.apiserver, before.apiserver)
	var gates *float64
	var mgr map[string]float64
	if before.manager != nil && after.manager != nil {
		mgr = subtractCounts(after.manager, before.manager)
		gates = ptr.To(mgr["op/gate"])
	}
	w := droverWrites(delta, own, gates)
	n := float64(r.n)
	var b strings.Builder
	fmt.Fprintf(&b, "pod writes %.0f + gate writes %.0f + TApp status writes %.0f", w.pods, w.gates, w.tappStatus)
	if w.tappSpec != 0 {
		fmt.Fprintf(&b, " + TApp spec writes %.0f", w.tappSpec)
	}
	fmt.Fprintf(&b, " over %d instances (spec budget %d pod writes per instance + one status write per pass)", r.n, budget)
	if w.exact {
		fmt.Fprintf(&b, "; gate writes from drover_tapp_pod_writes_total, so kwok wrote the other %.0f pods/status writes (%.2f per instance)",
			w.podStatus-w.gates, (w.podStatus-w.gates)/n)
		ops := map[string]float64{}
		for k, v := range mgr {
			if name, ok := strings.CutPrefix(k, "op/"); ok {
				ops[name] = v
			}
		}
		fmt.Fprintf(&b, "; drover_tapp_pod_writes_total: %s", writeCounts(ops))
		failed := map[string]float64{}
		for k, v := range mgr {
			if name, ok := strings.CutPrefix(k, "failed/"); ok {
				failed[name] = v
			}
		}
		if f := writeCounts(failed); f != "none" {
			fmt.Fprintf(&b, " (not successful: %s)", f)
		}
		fmt.Fprintf(&b, "; %.0f tapp reconciles", mgr["reconciles"])
		rest := map[string]float64{}
		for k, v := range mgr {
			if name, ok := strings.CutPrefix(k, "rest/"); ok {
				rest[name] = v
			}
		}
		fmt.Fprintf(&b, "; the manager's client sent %s (all controllers, leader election and events included)", writeCounts(rest))
	} else {
		b.WriteString("; without the manager's metrics every pods/status write is counted as drover's, kwok's status reports included (an upper bound)")
	}
	fmt.Fprintf(&b, "; %.0f event writes not counted (drover's and the scheduler's); kube-apiserver writes, the scenario's own removed: %s",
		w.events, writeCounts(subtractCounts(delta, own)))
	r.figure(phase+"-writes-per-instance", w.total()/n, "writes", b.String())
	r.figure(phase+"-pod-writes-per-instance", (w.pods+w.gates)/n, "writes",
		fmt.Sprintf("drover's pod writes only (creates, patches, deletes, gates), spec budget %d", budget))
	r.figure(phase+"-status-writes", w.tappStatus, "writes", "TApp status writes during the phase (at most one per pass)")
	r.logf("%s writes: %s", phase, b.String())
}

// quiesce waits until the counted writes have not moved for tappQuiet.
func (r *tappRun) quiesce(ctx context.Context, deadline time.Duration) error {
	read := func(ctx context.Context) (map[string]float64, error) {
		return apiserverWriteCounts(ctx, r.cs, tappCountedResources)
	}
	_, err := waitWritesAtRest(ctx, read, tappQuiet, deadline, nil)
	return err
}

// waitNamespaceGone waits (at most 5 minutes) until a deleted namespace and its pods are gone.
func (r *tappRun) waitNamespaceGone(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := r.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		r.logf("namespace %s is still being deleted after %s", ns, time.Since(start).Round(time.Second))
		return
	}
	r.logf("namespace %s deleted in %s", ns, time.Since(start).Round(time.Second))
}

// waitTerminatingNamespaces waits (at most 5 minutes) until no namespace is being deleted.
func (r *tappRun) waitTerminatingNamespaces(ctx context.Context) {
	start := time.Now()
	var terminating []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := r.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		terminating = terminating[:0]
		for _, ns := range list.Items {
			if ns.Status.Phase == corev1.NamespaceTerminating {
				terminating = append(terminating, ns.Name)
			}
		}
		return len(terminating) == 0, nil
	})
	switch {
	case err != nil:
		r.logf("namespaces %v are still being deleted after %s; measuring anyway", terminating, time.Since(start).Round(time.Second))
	case time.Since(start) > time.Second:
		r.logf("waited %s for the namespaces of earlier scenarios to be deleted", time.Since(start).Round(time.Second))
	}
}

// managerScraper returns a scraper of the manager's metrics, authenticated as a ServiceAccount of ns, and a
// cleanup; nil (logged) when it cannot be read.
func (r *tappRun) managerScraper(ctx context.Context, ns string) (*measure.Scraper, func()) {
	if r.cfg.managerMetrics == "" {
		r.logf("no manager metrics endpoint: drover's gate writes cannot be told from kwok's status writes")
		return nil, func() {}
	}
	m, cleanup, err := measure.NewManagerScraper(ctx, r.c, r.cs, r.cfg.managerMetrics, ns, "drover-bench-tapp-metrics-"+r.id)
	if err != nil {
		r.logf("cannot read the manager's metrics (%v)", err)
	}
	return m, cleanup
}
