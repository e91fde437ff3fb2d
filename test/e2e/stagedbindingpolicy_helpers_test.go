package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/kubestellarsim"
	"github.com/drover-dev/drover/internal/measure"
	"github.com/drover-dev/drover/internal/scheme"
)

const (
	// sbpTimeout bounds a rollout step: kssim reports a Deployment KssimReportDelay (3 s) after placing it.
	sbpTimeout = 2 * time.Minute
	// failoverTimeout bounds a Lease changing hands after its holder was killed: the Lease lasts 15 s.
	failoverTimeout = 90 * time.Second
	// labelE2ERollout is on the ManagedClusters of a test, so that no other test's selector picks them.
	labelE2ERollout = "e2e.drover.dev/rollout"
)

var managedClusterGVK = kubestellarsim.ManagedClusterGVK

// getSBP reads a StagedBindingPolicy.
func getSBP(g Gomega, name string) *communityv1alpha1.StagedBindingPolicy {
	sbp := &communityv1alpha1.StagedBindingPolicy{}
	g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, sbp)).To(Succeed())
	return sbp
}

// eventuallyPhase waits until the policy has the phase with the active stage, and returns it.
func eventuallyPhase(name string, phase communityv1alpha1.Phase, active string) *communityv1alpha1.StagedBindingPolicy {
	GinkgoHelper()
	var sbp *communityv1alpha1.StagedBindingPolicy
	Eventually(func(g Gomega) {
		sbp = getSBP(g, name)
		g.Expect(sbp.Status.ActiveStage).To(Equal(active), "status: %+v", sbp.Status)
		g.Expect(sbp.Status.Phase).To(Equal(phase), "status: %+v", sbp.Status)
		g.Expect(sbp.Status.ObservedGeneration).To(Equal(sbp.Generation))
	}).WithTimeout(sbpTimeout).WithPolling(interval).Should(Succeed())
	return sbp
}

// expectCompleted checks the status of a finished rollout: Completed, Ready=True and every stage Succeeded.
func expectCompleted(sbp *communityv1alpha1.StagedBindingPolicy, stages ...string) {
	GinkgoHelper()
	Expect(sbp.Status.Phase).To(Equal(communityv1alpha1.PhaseCompleted))
	ready := meta.FindStatusCondition(sbp.Status.Conditions, "Ready")
	Expect(ready).NotTo(BeNil(), "conditions: %+v", sbp.Status.Conditions)
	Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %+v", ready)
	Expect(ready.ObservedGeneration).To(Equal(sbp.Generation))
	var got []string
	for _, e := range sbp.Status.Stages {
		Expect(e.Result).To(Equal(communityv1alpha1.StageSucceeded), "stage %s", e.Name)
		got = append(got, e.Name)
	}
	Expect(got).To(Equal(stages))
}

// sbpFixture is what a test's rollouts need, apart from other tests: ManagedClusters labelled with the
// fixture's id, a StatusCollector named id (count: COUNT, available: SUM of availableReplicas) and a
// one-replica Deployment "web" in namespace id labelled app.kubernetes.io/name=id. Everything goes at the
// end of the test.
type sbpFixture struct {
	id string
}

func newSBPFixture(prefix string, clusters map[string]map[string]string) *sbpFixture {
	GinkgoHelper()
	f := &sbpFixture{id: newNamespace(prefix)}
	for suffix, labels := range clusters {
		mc := &unstructured.Unstructured{}
		mc.SetGroupVersionKind(managedClusterGVK)
		mc.SetName(f.cluster(suffix))
		all := map[string]string{labelE2ERollout: f.id}
		maps.Copy(all, labels)
		mc.SetLabels(all)
		createWithCleanup(mc)
	}
	available := controlv1alpha1.Expression("returned.status.availableReplicas")
	createWithCleanup(&controlv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: f.id},
		Spec: controlv1alpha1.StatusCollectorSpec{
			CombinedFields: []controlv1alpha1.NamedAggregator{
				{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
				{Name: "available", Type: controlv1alpha1.AggregatorTypeSum, Subject: &available},
			},
			Limit: 20,
		},
	})
	labels := map[string]string{"app.kubernetes.io/name": f.id}
	Expect(k8sClient.Create(suiteCtx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.id, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	})).To(Succeed())
	return f
}

// cluster is the name of the fixture's ManagedCluster with suffix.
func (f *sbpFixture) cluster(suffix string) string { return f.id + "-" + suffix }

// stage places on the fixture's clusters labelled tier=tier, gated by condition.
func (f *sbpFixture) stage(name, tier, condition string) communityv1alpha1.Stage {
	return communityv1alpha1.Stage{
		Name:             name,
		ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{labelE2ERollout: f.id, "tier": tier}}},
		Filter:           `downsyncClause.resource == "deployments"`,
		Condition:        condition,
	}
}

// available is a condition: the fixture's collector sums n available replicas.
func (f *sbpFixture) available(n int) string {
	return fmt.Sprintf(`%q in results && results[%q].exists(r, r['available'] == %d.0)`, f.id, f.id, n)
}

// createSBP creates a StagedBindingPolicy (deleted at the end of the test) of the fixture's Deployment.
func (f *sbpFixture) createSBP(mode communityv1alpha1.RolloutMode, stages ...communityv1alpha1.Stage) *communityv1alpha1.StagedBindingPolicy {
	GinkgoHelper()
	sbp := &communityv1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: f.id},
		Spec: communityv1alpha1.StagedBindingPolicySpec{
			Downsync: []controlv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{
					ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app.kubernetes.io/name": f.id}}},
				},
				DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{f.id}},
			}},
			Stages: stages,
			Mode:   mode,
		},
	}
	createWithCleanup(sbp)
	return sbp
}

// script makes kssim's clusters report statuses of the fixture's Deployment: cluster suffix → status,
// through a script ConfigMap in the fixture's namespace (replaced on every call).
func (f *sbpFixture) script(statuses map[string]map[string]any) {
	GinkgoHelper()
	var entries []kubestellarsim.ScriptEntry
	for suffix, status := range statuses {
		entries = append(entries, kubestellarsim.ScriptEntry{Cluster: f.cluster(suffix), Group: "apps",
			Resource: "deployments", Namespace: f.id, Name: "web", Status: status})
	}
	data, err := yaml.Marshal(entries)
	Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kssim-script", Namespace: f.id}}
	_, err = controllerutil.CreateOrUpdate(suiteCtx, k8sClient, cm, func() error {
		cm.Labels = map[string]string{kubestellarsim.ScriptConfigMapLabel: "true"}
		cm.Data = map[string]string{kubestellarsim.ScriptConfigMapKey: string(data)}
		return nil
	})
	Expect(err).NotTo(HaveOccurred())
}

// createWithCleanup creates obj and deletes it at the end of the test.
func createWithCleanup(obj client.Object) {
	GinkgoHelper()
	Expect(k8sClient.Create(suiteCtx, obj)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, obj))).To(Succeed()) })
}

// sbpEventCounts counts the events regarding the policy with uid by reason and subject: "Reason/stage" for
// the events about a stage ("Stage dev activated ..."), "Reason/name" for BindingPolicyCreated, and
// "Reason" for the others. A series counts each occurrence.
func sbpEventCounts(g Gomega, uid types.UID) map[string]int {
	var list eventsv1.EventList
	g.Expect(k8sClient.List(suiteCtx, &list)).To(Succeed())
	out := map[string]int{}
	for _, e := range list.Items {
		if e.Regarding.UID != uid {
			continue
		}
		key, words := e.Reason, strings.Fields(e.Note)
		switch {
		case len(words) >= 2 && words[0] == "Stage":
			key += "/" + words[1]
		case len(words) >= 3 && words[0] == "Created" && words[1] == "BindingPolicy":
			key += "/" + words[2]
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		out[key] += n
	}
	return out
}

// transitionEvents keeps the stage transition and BindingPolicy creation counts of sbpEventCounts.
func transitionEvents(counts map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		reason, _, _ := strings.Cut(k, "/")
		if slices.Contains([]string{"StageActivated", "StageSucceeded", "RolloutCompleted", "BindingPolicyCreated"}, reason) {
			out[k] = v
		}
	}
	return out
}

// newSBPScraper reads the metrics of the manager at addr, as a ServiceAccount of ns.
func newSBPScraper(addr, ns string) *measure.Scraper {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(cluster.Config)
	Expect(err).NotTo(HaveOccurred())
	scraper, cleanup, err := measure.NewManagerScraper(suiteCtx, k8sClient, cs, addr, ns, "drover-e2e-sbp-metrics-"+ns)
	DeferCleanup(cleanup)
	Expect(err).NotTo(HaveOccurred(), "reading the manager's metrics at %s", addr)
	return scraper
}

// sbpMetrics returns the policy's drover_sbp_stage_transitions_total by "stage/result" and its one-hot
// drover_sbp_phase by phase.
func sbpMetrics(g Gomega, scraper *measure.Scraper, sbp string) (transitions, phases map[string]float64) {
	samples, err := scraper.Scrape(suiteCtx)
	g.Expect(err).NotTo(HaveOccurred())
	transitions, phases = map[string]float64{}, map[string]float64{}
	for _, s := range samples {
		if s.Labels["sbp"] != sbp {
			continue
		}
		switch s.Name {
		case "drover_sbp_stage_transitions_total":
			transitions[s.Labels["stage"]+"/"+s.Labels["result"]] += s.Value
		case "drover_sbp_phase":
			phases[s.Labels["phase"]] = s.Value
		}
	}
	return transitions, phases
}

// bpRecorder records, from one ordered watch stream, every change of the BindingPolicies of a
// StagedBindingPolicy (by its label), from before the policy exists.
type bpRecorder struct {
	mu     sync.Mutex
	events []bpEvent
	err    error
	stop   context.CancelFunc
	done   chan struct{}
}

type bpEvent struct {
	typ watch.EventType
	bp  *controlv1alpha1.BindingPolicy
}

func recordBindingPolicies(sbp string) *bpRecorder {
	GinkgoHelper()
	wc, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	selector := client.MatchingLabels{communityv1alpha1.LabelStagedBindingPolicy: sbp}
	var list controlv1alpha1.BindingPolicyList
	Expect(wc.List(suiteCtx, &list, selector)).To(Succeed())
	Expect(list.Items).To(BeEmpty(), "BindingPolicies of %s before it exists", sbp)
	ctx, cancel := context.WithCancel(suiteCtx)
	r := &bpRecorder{stop: cancel, done: make(chan struct{})}
	go r.run(ctx, wc, selector, list.ResourceVersion)
	DeferCleanup(r.Stop)
	return r
}

// run follows the watch, resuming from the last resource version when the API server ends it.
func (r *bpRecorder) run(ctx context.Context, wc client.WithWatch, selector client.MatchingLabels, rv string) {
	defer close(r.done)
	for ctx.Err() == nil {
		w, err := wc.Watch(ctx, &controlv1alpha1.BindingPolicyList{}, selector,
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			r.fail(fmt.Errorf("watching BindingPolicies: %w", err))
			return
		}
		for ev := range w.ResultChan() {
			bp, ok := ev.Object.(*controlv1alpha1.BindingPolicy)
			if !ok {
				r.fail(fmt.Errorf("the BindingPolicy watch sent %s %T: %v", ev.Type, ev.Object, ev.Object))
				w.Stop()
				return
			}
			rv = bp.ResourceVersion
			r.mu.Lock()
			r.events = append(r.events, bpEvent{typ: ev.Type, bp: bp})
			r.mu.Unlock()
		}
		w.Stop()
	}
}

func (r *bpRecorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil && !strings.Contains(err.Error(), "context canceled") {
		r.err = err
	}
}

// Stop ends the watch.
func (r *bpRecorder) Stop() {
	r.stop()
	<-r.done
}

// snapshot returns the events recorded so far; a watch failure fails g.
func (r *bpRecorder) snapshot(g Gomega) []bpEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	g.Expect(r.err).NotTo(HaveOccurred())
	return slices.Clone(r.events)
}

// live returns the names of the BindingPolicies that exist and are not being deleted, from the events.
func live(events []bpEvent) []string {
	state := map[string]bool{}
	for _, ev := range events {
		state[ev.bp.Name] = ev.typ != watch.Deleted && ev.bp.DeletionTimestamp == nil
	}
	var names []string
	for n, ok := range state {
		if ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// incarnations returns, for each BindingPolicy name, the UIDs it had in order: more than one means it was
// deleted and created again.
func incarnations(events []bpEvent) map[string][]types.UID {
	out := map[string][]types.UID{}
	for _, ev := range events {
		if !slices.Contains(out[ev.bp.Name], ev.bp.UID) {
			out[ev.bp.Name] = append(out[ev.bp.Name], ev.bp.UID)
		}
	}
	return out
}

// firstEvent is the index of the first event about name that satisfies match, or -1.
func firstEvent(events []bpEvent, name string, match func(bpEvent) bool) int {
	return slices.IndexFunc(events, func(ev bpEvent) bool { return ev.bp.Name == name && match(ev) })
}

func deletionStarted(ev bpEvent) bool {
	return ev.typ == watch.Deleted || ev.bp.DeletionTimestamp != nil
}

// expectGenerated checks what drover puts on a BindingPolicy of stage: the labels and the controller
// owner reference to the policy.
func expectGenerated(bp *controlv1alpha1.BindingPolicy, sbp *communityv1alpha1.StagedBindingPolicy, stage string) {
	GinkgoHelper()
	Expect(bp.Labels).To(HaveKeyWithValue(communityv1alpha1.LabelStagedBindingPolicy, sbp.Name))
	Expect(bp.Labels).To(HaveKeyWithValue(communityv1alpha1.LabelStage, stage))
	owner := metav1.GetControllerOf(bp)
	Expect(owner).NotTo(BeNil(), "BindingPolicy %s has no controller", bp.Name)
	Expect(owner.Kind).To(Equal("StagedBindingPolicy"))
	Expect(owner.Name).To(Equal(sbp.Name))
	Expect(owner.UID).To(Equal(sbp.UID))
}
