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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/measure"
	"github.com/drover-dev/drover/internal/scheme"
)

// The PersistentPodState scenario (docs/persistentpodstate.md, Performance): one StatefulSet of 5,000 pods
// whose generated PPS tracks kubernetes.io/hostname (required) and topology.kubernetes.io/zone (preferred).
// Measured, in order:
//
//  1. recording: the bench creates the pods (200 creates a second unless WithPPSRate says otherwise) on the
//     kwok nodes; the time from the last create to all of them being in status.podStates;
//  2. the pod webhook, admission alone: the same pods created again once the PPS has an entry for every pod
//     (each create is steered), against the same creates with the webhook kept away from the namespace by
//     its opt-out label; rounds alternate off and on, the pods being deleted, and the PPS controller left
//     to come to rest, before each. Target: the p99 latency added per create below 5 ms. The pods of these
//     rounds carry the scheduling gate drover.dev/bench-hold and no node, in both settings: the target is
//     about admission, and pods that start are scheduled, run by kwok, turn Ready and make the PPS
//     controller run passes while the next creates are timed, so the figure would time the whole cluster's
//     reaction to 5,000 new pods on shared CPUs, not admission. Gated pods still go through the webhook and
//     are still steered: every pod of an "on" round must come back from its create with its recorded node's
//     hostname in nodeSelector, a preferred term on its recorded zone and the injected annotation (and
//     every pod of an "off" round without them), and drover_persistentpodstate_pod_admissions_total must
//     count every create of an "on" round as injected. The API server's timing of the webhook call, the
//     manager's handler time, both processes' CPU time per create and how busy the PPS controller was
//     meanwhile tell where the added time goes. After the rounds the gated pods are deleted and the pods
//     created again on their nodes, as recorded, for the steps that follow;
//  3. no-op passes: a pod's Ready condition is set False and kwok sets it back, which makes the controller
//     run a full pass over the 5,000 pods that has nothing to change. controller-runtime's reconcile time
//     histogram gives the pass duration (target below 100 ms), against a LIST of the namespace's pods from
//     the API server; the status writes and the PPS resourceVersion must not move (target: zero writes);
//  4. a rolling update by hand: pods deleted and created again one at a time on their recorded node; status
//     writes per pass (the placements do not change, so about 0);
//  5. the stored size of the PPS (its JSON from the API server, managedFields included) against the
//     controller's size estimate and etcd's limit.
//
// The pods are the bench's, not the StatefulSet controller's, so that their create latency is measured by
// this client. They carry what that controller gives its own pods (the selector's labels, the pod-name and
// pod-index labels, hostname and subdomain, a controller ownerReference), so it counts them as its own. Its
// pod template names a PriorityClass that does not exist: the API server refuses every pod that controller
// tries to create (the Priority admission plugin runs before the webhooks, so drover never sees those
// attempts), and it can never race the bench for a missing pod. updateStrategy OnDelete keeps it from
// replacing the bench's pods, which differ from the template. OrderedReady with a minReadySeconds no pod
// reaches keeps it from trying more than one create per sync: it stops at the first pod that is missing or
// not available, pod 0 (with Parallel it retries every missing pod on every sync, as many refused creates
// as its client's rate limit allows while the pods are deleted and created).
//
// Deleting and creating again a pod of the same name races kwok: it deletes a pod it saw terminating by name,
// without a UID, and when it lags behind it deletes the new pod. So the bench marks a pod
// kwok.drover.dev/disregard (kwok's stages leave such pods alone) before it force-deletes it.

const (
	ppsScenario  = "persistentpodstate"
	ppsNamespace = "bench-pps"
	ppsName      = "big"
	// ppsDefaultPods is the scale target's pod count.
	ppsDefaultPods = 5000
	// ppsDefaultRate is the bench's pod creates per second; ppsDeleteRate its pod deletes per second (two
	// requests each); ppsInflight bounds the requests in flight.
	ppsDefaultRate = 200
	ppsDeleteRate  = 200
	ppsInflight    = 32
	// ppsRounds is the number of off/on round pairs of the webhook step.
	ppsRounds = 2
	// ppsNudges is the number of no-op passes measured, ppsRolling the pods of the rolling update.
	ppsNudges  = 20
	ppsRolling = 100
	// ppsAbsentPriorityClass is the PriorityClass of the StatefulSet's template: it does not exist.
	ppsAbsentPriorityClass = "drover-bench-absent"
	// ppsNeverAvailable is the StatefulSet's minReadySeconds (a day): no pod becomes available during a run.
	ppsNeverAvailable = 86400
	// ppsDisregard is the annotation that makes kwok leave a pod alone.
	ppsDisregard = "kwok.drover.dev/disregard"
	// ppsControllerName is the PPS controller's name in controller-runtime's metrics.
	ppsControllerName = "persistentpodstate"
	// ppsWait bounds each wait of the scenario.
	ppsWait = 10 * time.Minute
)

var ppsLabels = map[string]string{"app": "bench-pps"}

// PPSOption configures the PersistentPodState scenario.
type PPSOption func(*ppsConfig)

// WithPPSManagerMetrics gives the manager's metrics endpoint (host:port, HTTPS with authentication); the
// scenario needs it (admissions, passes, status writes).
func WithPPSManagerMetrics(addr string) PPSOption {
	return func(c *ppsConfig) { c.managerMetrics = addr }
}

// WithPPSPods sets the number of pods of the StatefulSet (default 5,000, the scale target).
func WithPPSPods(n int) PPSOption { return func(c *ppsConfig) { c.pods = n } }

// WithPPSRate sets the bench's pod creates per second (default 200).
func WithPPSRate(perSecond int) PPSOption { return func(c *ppsConfig) { c.rate = perSecond } }

type ppsConfig struct {
	pods, rate     int
	managerMetrics string
}

// PersistentPodState returns the PersistentPodState scale scenario.
func PersistentPodState(opts ...PPSOption) []Scenario {
	cfg := ppsConfig{pods: ppsDefaultPods, rate: ppsDefaultRate}
	for _, o := range opts {
		o(&cfg)
	}
	return []Scenario{{
		Name: ppsScenario,
		Description: fmt.Sprintf("StatefulSet of %d pods (created %d/s) with a generated PPS (hostname required, zone preferred): recording, pod webhook latency, no-op passes, rolling update, stored size",
			cfg.pods, cfg.rate),
		Run: cfg.run,
	}}
}

// ppsRun is the state of one run of the scenario.
type ppsRun struct {
	cfg ppsConfig
	env Env
	n   int
	cs  kubernetes.Interface
	c   client.WithWatch
	mm  *measure.Scraper
	tr  *podTracker
	uid types.UID // the StatefulSet's
	// apiStart is the API server's metrics when the StatefulSet was created.
	apiStart []measure.Sample
	figs     []Figure
	// problems are failed checks reported after every figure was measured.
	problems []error
}

func (cfg ppsConfig) run(ctx context.Context, env Env) ([]Figure, error) {
	if cfg.pods < ppsNudges || cfg.pods < ppsRolling {
		return nil, fmt.Errorf("the scenario needs at least %d pods, got %d", max(ppsNudges, ppsRolling), cfg.pods)
	}
	if cfg.rate < 1 {
		return nil, fmt.Errorf("the create rate must be positive, got %d", cfg.rate)
	}
	if cfg.managerMetrics == "" || len(env.Nodes) == 0 {
		return nil, errors.New("the scenario needs the manager's metrics endpoint and fake nodes")
	}
	r := &ppsRun{cfg: cfg, env: env, n: cfg.pods}
	cleanup, err := r.setup(ctx)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	for _, step := range []func(context.Context) error{r.createTarget, r.record, r.webhook, r.noop, r.rolling, r.size, r.refusedCreates} {
		if err := step(ctx); err != nil {
			return r.figs, err
		}
	}
	return r.figs, errors.Join(r.problems...)
}

func (r *ppsRun) logf(format string, args ...any) {
	fmt.Fprintf(r.env.Log, "   "+format+"\n", args...)
}

func (r *ppsRun) figure(metric string, value float64, unit, note string) {
	r.figs = append(r.figs, Figure{Scenario: ppsScenario, Metric: metric, Value: round(value), Unit: unit, Note: note})
}

// problem records a failed check: the scenario goes on and fails at the end.
func (r *ppsRun) problem(format string, args ...any) {
	err := fmt.Errorf(format, args...)
	r.logf("PROBLEM: %v", err)
	r.problems = append(r.problems, err)
}

// setup makes the clients, the namespace, the metrics scraper and the pod tracker. The returned cleanup
// (never nil) deletes what was made and waits for the namespace to go.
func (r *ppsRun) setup(ctx context.Context) (func(), error) {
	cs, err := unlimited(r.env.Config)
	if err != nil {
		return func() {}, err
	}
	cfg := rest.CopyConfig(r.env.Config)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	if r.c, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		return func() {}, fmt.Errorf("creating client: %w", err)
	}
	r.cs = cs
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ppsNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return func() {}, fmt.Errorf("creating namespace %s: %w", ppsNamespace, err)
	}
	cleanups := []func(){r.deleteNamespace}
	cleanup := func() {
		for _, f := range slices.Backward(cleanups) {
			f()
		}
	}
	mm, stopScraper, err := measure.NewManagerScraper(ctx, r.c, cs, r.cfg.managerMetrics, ppsNamespace, "drover-bench-pps-metrics")
	cleanups = append(cleanups, stopScraper)
	if err != nil {
		return cleanup, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	r.mm = mm
	// want 0: only the counts of present and available pods are read, not the TApp budget bookkeeping.
	tr, stopTracker, err := startPodTracker(ctx, cs, ppsNamespace, 0)
	if err != nil {
		return cleanup, err
	}
	r.tr = tr
	cleanups = append(cleanups, stopTracker)
	return cleanup, nil
}

// deleteNamespace deletes the namespace and waits (at most 5 minutes) until it is gone.
func (r *ppsRun) deleteNamespace() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	_ = r.cs.CoreV1().Namespaces().Delete(ctx, ppsNamespace, metav1.DeleteOptions{})
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := r.cs.CoreV1().Namespaces().Get(ctx, ppsNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		r.logf("namespace %s is still being deleted after %s", ppsNamespace, time.Since(start).Round(time.Second))
		return
	}
	r.logf("namespace %s deleted in %s", ppsNamespace, time.Since(start).Round(time.Second))
}

// ppsStatefulSet is the scenario's StatefulSet: n replicas, OnDelete, OrderedReady with a minReadySeconds
// no pod reaches, the PPS annotations, and a template the API server refuses (its PriorityClass does not
// exist), so that only the bench creates pods.
func ppsStatefulSet(n int) *appsv1.StatefulSet {
	tmpl := benchPod("")
	tmpl.Spec.PriorityClassName = ppsAbsentPriorityClass
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: ppsName, Namespace: ppsNamespace, Annotations: map[string]string{
			kruisev1beta1.AnnotationAutoGeneratePersistentPodState: "true",
			kruisev1beta1.AnnotationRequiredPersistentTopology:     corev1.LabelHostname,
			kruisev1beta1.AnnotationPreferredPersistentTopology:    corev1.LabelTopologyZone,
		}},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(int32(n)),
			ServiceName:         ppsName,
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			MinReadySeconds:     ppsNeverAvailable,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:            &metav1.LabelSelector{MatchLabels: ppsLabels},
			Template:            corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: ppsLabels}, Spec: tmpl.Spec},
		},
	}
}

// ppsPod is pod i of the StatefulSet (uid), bound to node: the identity the StatefulSet controller gives its
// own pods (name, labels, hostname, subdomain, controller ownerReference), so that it counts the pod as one
// of its replicas and leaves it alone.
func ppsPod(uid types.UID, i int, node string) *corev1.Pod {
	name := ppsPodName(i)
	pod := benchPod(name)
	pod.Namespace = ppsNamespace
	pod.Labels = map[string]string{appsv1.StatefulSetPodNameLabel: name, appsv1.PodIndexLabel: strconv.Itoa(i)}
	for k, v := range ppsLabels {
		pod.Labels[k] = v
	}
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "StatefulSet", Name: ppsName, UID: uid,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	pod.Spec.Hostname, pod.Spec.Subdomain = name, ppsName
	pod.Spec.NodeName = node
	return pod
}

func ppsPodName(i int) string { return fmt.Sprintf("%s-%d", ppsName, i) }

// nodeOf is the node of pod i: round-robin over the fake nodes, the same in every round.
func (r *ppsRun) nodeOf(i int) string { return r.env.Nodes[i%len(r.env.Nodes)] }

// createTarget creates the StatefulSet and waits for the generated PPS.
func (r *ppsRun) createTarget(ctx context.Context) error {
	var err error
	if _, r.apiStart, err = r.scrapeBoth(ctx); err != nil {
		return err
	}
	sts, err := r.cs.AppsV1().StatefulSets(ppsNamespace).Create(ctx, ppsStatefulSet(r.n), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the StatefulSet: %w", err)
	}
	r.uid = sts.UID
	start := time.Now()
	var pps kruisev1beta1.PersistentPodState
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return r.c.Get(ctx, client.ObjectKey{Namespace: ppsNamespace, Name: ppsName}, &pps) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the generated PersistentPodState %s: %w", ppsName, err)
	}
	var required []string
	if t := pps.Spec.RequiredPersistentTopology; t != nil {
		required = t.Keys
	}
	r.logf("StatefulSet %s (%d replicas, OnDelete) created; PPS %s generated after %s: required %v, %d preferred term(s)",
		ppsName, r.n, pps.Name, time.Since(start).Round(time.Millisecond), required, len(pps.Spec.PreferredPersistentTopology))
	return nil
}

// boundPod is pod i bound to its node, as the StatefulSet's pods run.
func (r *ppsRun) boundPod(i int) *corev1.Pod { return ppsPod(r.uid, i, r.nodeOf(i)) }

// createPods creates the pods that pod(i) makes at the configured rate and returns the create latencies,
// sorted, and when the last create returned. check, when not nil, is given each pod as the API server
// returned it (as admitted); it is not timed.
func (r *ppsRun) createPods(ctx context.Context, label string, pod func(i int) *corev1.Pod,
	check func(i int, created *corev1.Pod)) ([]time.Duration, time.Time, error) {
	lat := make([]time.Duration, r.n)
	start := time.Now()
	err := paced(ctx, r.n, r.cfg.rate, ppsInflight, func(ctx context.Context, i int) error {
		t := time.Now()
		created, err := r.cs.CoreV1().Pods(ppsNamespace).Create(ctx, pod(i), metav1.CreateOptions{})
		lat[i] = time.Since(t)
		if err == nil && check != nil {
			check(i, created)
		}
		return err
	})
	last := time.Now()
	if err != nil {
		return nil, last, fmt.Errorf("%s: creating %d pods: %w", label, r.n, err)
	}
	slices.Sort(lat)
	r.logf("%s: %d creates in %s (%.0f/s), p50 %s, p99 %s", label, r.n, last.Sub(start).Round(time.Millisecond),
		float64(r.n)/last.Sub(start).Seconds(), measure.Percentile(lat, 50).Round(10*time.Microsecond),
		measure.Percentile(lat, 99).Round(10*time.Microsecond))
	return lat, last, nil
}

// deleteAllPods deletes every pod as deletePod does, ppsDeleteRate pods a second, and waits until none is
// left.
func (r *ppsRun) deleteAllPods(ctx context.Context) error {
	err := paced(ctx, r.n, ppsDeleteRate, ppsInflight, func(ctx context.Context, i int) error {
		return r.deletePod(ctx, ppsPodName(i))
	})
	if err != nil {
		return fmt.Errorf("deleting the pods: %w", err)
	}
	_, err = r.tr.waitFor(ctx, r.logf, "pods gone", ppsWait, func(t *podTracker) (bool, string) {
		n := podsPresent(t)
		return n == 0, fmt.Sprintf("%d left", n)
	})
	return err
}

// deletePod marks the pod for kwok to disregard, then force-deletes it (grace period 0).
func (r *ppsRun) deletePod(ctx context.Context, name string) error {
	pods := r.cs.CoreV1().Pods(ppsNamespace)
	mark := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"deleted by the bench"}}}`, ppsDisregard)
	_, err := pods.Patch(ctx, name, types.MergePatchType, mark, metav1.PatchOptions{})
	if err == nil {
		err = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitAllReady waits until all n pods are Running and Ready.
func (r *ppsRun) waitAllReady(ctx context.Context, what string) error {
	_, err := r.tr.waitFor(ctx, r.logf, what, 5*time.Minute, func(t *podTracker) (bool, string) {
		a := t.available()
		return a == r.n, fmt.Sprintf("%d present, %d/%d Ready", podsPresent(t), a, r.n)
	})
	return err
}

// getPPS reads the PPS from the API server.
func (r *ppsRun) getPPS(ctx context.Context) (*kruisev1beta1.PersistentPodState, error) {
	pps := &kruisev1beta1.PersistentPodState{}
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: ppsNamespace, Name: ppsName}, pps); err != nil {
		return nil, fmt.Errorf("reading PersistentPodState %s: %w", ppsName, err)
	}
	return pps, nil
}

// record creates the pods and measures the time from the last create until every pod is recorded, and
// how much of it came after the last pod became Ready (until then kwok, not drover, held the records back).
func (r *ppsRun) record(ctx context.Context) error {
	before, err := r.mm.Scrape(ctx)
	if err != nil {
		return err
	}
	readyCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	readyAt := make(chan time.Time, 1)
	go func() {
		at, _ := r.tr.waitFor(readyCtx, func(string, ...any) {}, "all Ready", ppsWait, func(t *podTracker) (bool, string) {
			return t.available() == r.n, ""
		})
		readyAt <- at
	}()
	lat, last, err := r.createPods(ctx, "record", r.boundPod, nil)
	if err != nil {
		return err
	}
	at, err := r.waitRecorded(ctx, last)
	if err != nil {
		return err
	}
	ready := <-readyAt // every pod was Ready once recorded: the tracker saw it or is about to
	after, err := r.mm.Scrape(ctx)
	if err != nil {
		return err
	}
	writes := sampleDelta(before, after, ppsWritesMetric, nil)
	passes := sampleDelta(before, after, ppsPassesMetric, ppsCtrl)
	took, afterReady := at.Sub(last), at.Sub(ready)
	r.logf("all %d pods recorded %s after the last create, %s after the last pod became Ready (%.0f status writes, %.0f passes)",
		r.n, took.Round(time.Millisecond), afterReady.Round(time.Millisecond), writes, passes)
	r.figure("record_seconds", took.Seconds(), "s", fmt.Sprintf(
		"last of %d pod creates (%d/s, webhook with no entry yet: p50 %.2f ms, p99 %.2f ms) → all %d in status.podStates (seen through a watch); %.0f status writes and %.0f passes from the first create",
		r.n, r.cfg.rate, ms(measure.Percentile(lat, 50)), ms(measure.Percentile(lat, 99)), r.n, writes, passes))
	r.figure("record_after_ready_seconds", afterReady.Seconds(), "s", fmt.Sprintf(
		"last pod Ready (seen by the bench's pod watch, %.2f s after the last create: kwok's lag) → all recorded", ready.Sub(last).Seconds()))
	if err := r.waitAllReady(ctx, "pods Ready after recording"); err != nil {
		return err
	}
	return r.checkRecords(ctx)
}

// waitRecorded waits, through a watch of the PPS, until it records every pod, and returns when it saw that.
// It prints progress every 10 seconds.
func (r *ppsRun) waitRecorded(ctx context.Context, since time.Time) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, ppsWait)
	defer cancel()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	recorded := 0
	for {
		pps, err := r.getPPS(ctx)
		if err == nil {
			if recorded = len(pps.Status.PodStates); recorded >= r.n {
				return time.Now(), nil
			}
			if at, ok := r.watchRecorded(ctx, pps.ResourceVersion, &recorded, tick.C, since); ok {
				return at, nil
			}
		}
		if ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("waiting for %d records: %d after %s: %w", r.n, recorded, time.Since(since).Round(time.Second), ctx.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watchRecorded watches the PPS from resourceVersion rv until it records every pod (true) or the watch ends
// (false).
func (r *ppsRun) watchRecorded(ctx context.Context, rv string, recorded *int, tick <-chan time.Time, since time.Time) (time.Time, bool) {
	w, err := r.c.Watch(ctx, &kruisev1beta1.PersistentPodStateList{}, &client.ListOptions{
		Namespace:     ppsNamespace,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", ppsName),
		Raw:           &metav1.ListOptions{ResourceVersion: rv},
	})
	if err != nil {
		return time.Time{}, false
	}
	defer w.Stop()
	for {
		select {
		case <-tick:
			r.logf("records: %d/%d after %s", *recorded, r.n, time.Since(since).Round(time.Second))
		case ev, open := <-w.ResultChan():
			pps, ok := ev.Object.(*kruisev1beta1.PersistentPodState)
			if !open || !ok || ev.Type == watch.Error || ev.Type == watch.Deleted {
				return time.Time{}, false
			}
			if *recorded = len(pps.Status.PodStates); *recorded >= r.n {
				return time.Now(), true
			}
		}
	}
}

// checkRecords checks that every pod is recorded on its node with its node's zone.
func (r *ppsRun) checkRecords(ctx context.Context) error {
	pps, err := r.getPPS(ctx)
	if err != nil {
		return err
	}
	var wrong []string
	for i := range r.n {
		e, ok := pps.Status.PodStates[ppsPodName(i)]
		if !ok || e.NodeName != r.nodeOf(i) || e.NodeTopologyLabels[corev1.LabelHostname] != r.nodeOf(i) ||
			e.NodeTopologyLabels[corev1.LabelTopologyZone] == "" {
			wrong = append(wrong, ppsPodName(i))
		}
	}
	if len(wrong) > 0 {
		r.problem("%d records lack the pod's node, hostname or zone, e.g. %v", len(wrong), wrong[:min(len(wrong), 5)])
	}
	return nil
}

// refusedCreates logs how many pod creates the API server refused in the run: the StatefulSet controller's
// attempts (the bench's own creates never fail).
func (r *ppsRun) refusedCreates(ctx context.Context) error {
	_, now, err := r.scrapeBoth(ctx)
	if err != nil {
		return err
	}
	refused := sampleDelta(r.apiStart, now, "apiserver_request_total", map[string]string{"verb": "POST", "resource": "pods", "code": "403"})
	r.logf("the API server refused %.0f pod creates during the scenario: the StatefulSet controller's attempts (its template's PriorityClass does not exist)", refused)
	return nil
}
