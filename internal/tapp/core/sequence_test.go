package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// world is an in-memory stand-in for the API server and kubelets: it executes plans the way the reconciler
// will, builds the post-action view, stores the derived status, then lets "kubelets" act.
type world struct {
	t        *testing.T
	app      *tkestackv1.TApp
	pods     Pods
	now      time.Time
	lostNode bool // pods on node-1 never finish terminating and their node is absent
	finish   map[int]corev1.PodPhase
	counts   map[string]int
	maxUnav  int // largest number of unavailable desired-running pods seen right after a pass
}

func newWorld(t *testing.T, app *tkestackv1.TApp) *world {
	return &world{t: t, app: app, pods: Pods{}, now: t0, finish: map[int]corev1.PodPhase{}, counts: map[string]int{}}
}

// pass runs one reconcile pass and returns its plan.
func (w *world) pass() *Plan {
	p := NewPass(w.app, Options{DeletePodAfterAppFinish: true})
	obs := Observation{Pods: w.pods.Clone(), Now: w.now, Nodes: map[string]*corev1.Node{}}
	if !w.lostNode {
		obs.Nodes["node-1"] = &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: "True"}}}}
	}
	plan := p.Plan(obs)
	view := obs.Pods.Clone()
	for _, a := range plan.GateWrites() {
		view[a.ID] = WithGate(view[a.ID], a.Gate.Status, w.now)
		w.counts["gate"]++
	}
	for _, a := range plan.Deletes() {
		if a.Action == ActionForceDelete {
			delete(view, a.ID)
			w.counts["force"]++
			continue
		}
		view[a.ID] = AfterGracefulDelete(view[a.ID], w.now)
		w.counts["delete"]++
	}
	for _, a := range plan.Creates() {
		pod := a.Desired.DeepCopy()
		pod.UID = types.UID(fmt.Sprintf("%s-%d", pod.Name, w.counts["create"]))
		pod.Spec.NodeName = "node-1"
		view[a.ID] = WithGate(AfterCreate(pod), corev1.ConditionTrue, w.now)
		w.counts["create"]++
	}
	for _, a := range plan.Updates() {
		switch {
		case a.Action == ActionRestamp: // on top of this pass's gate write, if any
			view[a.ID] = Restamp(view[a.ID], a.Template)
		case !a.InPlace:
			view[a.ID], _ = MergePod(view[a.ID], a.Desired)
		default:
			gated := WithGate(a.Pod, corev1.ConditionFalse, w.now)
			patched, _, err := StartInPlaceUpdate(gated, a.Desired, w.now)
			if err != nil {
				w.t.Fatal(err)
			}
			view[a.ID] = patched
		}
		w.counts["update"]++
	}
	status, _ := p.Status(Observation{Pods: view, Now: w.now}, plan.Issues)
	w.app.Status = status
	w.pods = view
	w.checkBudget(p)
	w.kubelet()
	w.now = w.now.Add(time.Minute)
	return plan
}

// checkBudget records how many desired-running ids are unavailable in the post-action view.
func (w *world) checkBudget(p *Pass) {
	unavailable := 0
	for id := 0; id < p.Desired.Replicas; id++ {
		if p.Desired.Class(id) != ClassRunning {
			continue
		}
		if ok, _ := Availability(w.pods[id], 0, w.now); !ok {
			unavailable++
		}
	}
	w.maxUnav = max(w.maxUnav, unavailable)
}

// kubelet lets time pass: terminating pods go away (unless their node is lost), pods start, report their
// spec images (new imageID, restartCount+1), finish when told to, and Ready follows the gate.
func (w *world) kubelet() {
	for id, pod := range w.pods {
		if pod.DeletionTimestamp != nil {
			if !w.lostNode {
				delete(w.pods, id)
			}
			continue
		}
		pod = pod.DeepCopy()
		if pod.Status.Phase == corev1.PodPending {
			pod.Status.Phase = corev1.PodRunning
		}
		w.reportImages(pod)
		if ph, ok := w.finish[id]; ok && pod.Status.Phase == corev1.PodRunning {
			pod.Status.Phase = ph
		}
		ready := corev1.ConditionFalse
		if g := GateCondition(pod); g != nil && g.Status == corev1.ConditionTrue && pod.Status.Phase == corev1.PodRunning {
			ready = corev1.ConditionTrue
		}
		setCond(pod, corev1.PodReady, ready)
		w.pods[id] = pod
	}
}

func (w *world) reportImages(pod *corev1.Pod) {
	for _, c := range pod.Spec.Containers {
		st := containerStatus(pod, c.Name, false)
		if st == nil {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: "id-" + c.Image, ContainerID: "cid-0"})
			continue
		}
		if st.Image != c.Image {
			st.Image, st.ImageID = c.Image, "id-"+c.Image
			st.RestartCount++
			st.ContainerID = fmt.Sprintf("cid-%d", st.RestartCount)
		}
	}
}

// settle runs passes until one plans nothing at all (no action, no gate write) and leaves the status
// unchanged, twice in a row (the kubelets act between passes), at most n passes. It returns the number of
// passes.
func (w *world) settle(n int) int {
	quietRuns := 0
	for i := 1; i <= n; i++ {
		before := w.app.Status.DeepCopy()
		plan := w.pass()
		quiet := len(plan.GateWrites())+len(plan.Deletes())+len(plan.Creates())+len(plan.Updates()) == 0
		if quiet && cmp.Equal(before.Statuses, w.app.Status.Statuses) && before.AppStatus == w.app.Status.AppStatus {
			quietRuns++
		} else {
			quietRuns = 0
		}
		if quietRuns == 2 {
			return i
		}
	}
	w.t.Fatalf("not settled after %d passes; statuses %v", n, w.app.Status.Statuses)
	return n
}

func (w *world) expect(counts map[string]int, statuses map[string]tkestackv1.InstanceStatus, app tkestackv1.AppStatus) {
	w.t.Helper()
	if diff := cmp.Diff(counts, w.counts); diff != "" {
		w.t.Errorf("cumulative writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(statuses, w.app.Status.Statuses); diff != "" {
		w.t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if w.app.Status.AppStatus != app {
		w.t.Errorf("app status %s, want %s", w.app.Status.AppStatus, app)
	}
	clear(w.counts)
}

func running(ids ...string) map[string]tkestackv1.InstanceStatus {
	m := map[string]tkestackv1.InstanceStatus{}
	for _, id := range ids {
		m[id] = tkestackv1.InstanceRunning
	}
	return m
}

func with(m map[string]tkestackv1.InstanceStatus, kv ...string) map[string]tkestackv1.InstanceStatus {
	for k, v := range pairs(kv...) {
		m[k] = tkestackv1.InstanceStatus(v)
	}
	return m
}

func TestSequenceLifecycle(t *testing.T) {
	w := newWorld(t, newApp(3).Pool("test", tplWith("nginx:1.9")).Obj())
	w.settle(8)
	w.expect(map[string]int{"create": 3}, running("0", "1", "2"), tkestackv1.AppRunning)

	// Kill 1: graceful delete, Killing, then Killed; it still counts in status.replicas.
	w.app.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": tkestackv1.InstanceKilled}
	w.pass()
	if w.app.Status.Statuses["1"] != tkestackv1.InstanceKilling {
		t.Errorf("killing: %v", w.app.Status.Statuses)
	}
	w.settle(8)
	w.expect(map[string]int{"delete": 1}, with(running("0", "2"), "1", "Killed"), tkestackv1.AppRunning)
	if w.app.Status.Replicas != 3 || w.app.Status.ReadyReplicas != 2 {
		t.Errorf("replicas %d ready %d", w.app.Status.Replicas, w.app.Status.ReadyReplicas)
	}

	// Restart 1 by removing the entry.
	w.app.Spec.Statuses = nil
	w.settle(8)
	w.expect(map[string]int{"create": 1}, running("0", "1", "2"), tkestackv1.AppRunning)

	// Scale up with a pre-assigned template, then scale down.
	w.app.Spec.Templates = map[string]string{"4": "test"}
	w.app.Spec.Replicas = 5
	w.settle(8)
	w.expect(map[string]int{"create": 2}, running("0", "1", "2", "3", "4"), tkestackv1.AppRunning)
	if img := w.pods[4].Spec.Containers[0].Image; img != "nginx:1.9" {
		t.Errorf("pre-assigned template not used: %s", img)
	}
	w.app.Spec.Replicas = 2
	w.pass()
	if w.app.Status.Statuses["3"] != tkestackv1.InstanceKilling || w.app.Status.Statuses["4"] != tkestackv1.InstanceKilling {
		t.Errorf("scale down: all removed ids terminate at once: %v", w.app.Status.Statuses)
	}
	w.settle(8)
	w.expect(map[string]int{"delete": 3}, running("0", "1"), tkestackv1.AppRunning)

	// Kill all.
	w.app.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"0": "Killed", "1": "Killed"}
	w.settle(8)
	w.expect(map[string]int{"delete": 2}, map[string]tkestackv1.InstanceStatus{"0": "Killed", "1": "Killed"}, tkestackv1.AppKilled)
	if w.app.Status.Replicas != 2 {
		t.Errorf("killed instances count: %d", w.app.Status.Replicas)
	}
}

func TestSequenceRollingUpdate(t *testing.T) {
	w := newWorld(t, newApp(4).Obj())
	w.settle(8)
	clear(w.counts)
	w.maxUnav = 0
	w.app.Spec.Template.Spec.Containers[0].Image = newImage
	order := []int{}
	for range 30 {
		plan := w.pass()
		for _, a := range plan.Updates() {
			order = append(order, a.ID)
		}
		if len(plan.GateWrites())+len(plan.Updates()) == 0 {
			break
		}
	}
	if diff := cmp.Diff([]int{0, 1, 2, 3}, order); diff != "" {
		t.Errorf("update order (-want +got):\n%s", diff)
	}
	if w.maxUnav > 1 {
		t.Errorf("budget exceeded: %d unavailable at once", w.maxUnav)
	}
	w.expect(map[string]int{"update": 4, "gate": 4}, running("0", "1", "2", "3"), tkestackv1.AppRunning)
	if w.app.Status.UpdatedReplicas != 4 || w.app.Status.AvailableReplicas != 4 {
		t.Errorf("updated %d available %d", w.app.Status.UpdatedReplicas, w.app.Status.AvailableReplicas)
	}
	for _, pod := range w.pods {
		if pod.Annotations[tkestackv1.InPlaceUpdateStateKey] != "true" || pod.Status.ContainerStatuses[0].RestartCount != 1 {
			t.Errorf("pod %s was not updated in place", pod.Name)
		}
	}
}

func TestSequenceRecreate(t *testing.T) {
	w := newWorld(t, newApp(3).Obj())
	w.settle(8)
	clear(w.counts)
	w.maxUnav = 0
	w.app.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	w.settle(30)
	w.expect(map[string]int{"delete": 3, "create": 3}, running("0", "1", "2"), tkestackv1.AppRunning)
	if w.maxUnav > 1 {
		t.Errorf("budget exceeded: %d unavailable at once", w.maxUnav)
	}
	for _, pod := range w.pods {
		if len(pod.Spec.Containers[0].Env) != 1 {
			t.Errorf("pod %s not recreated with the new template", pod.Name)
		}
	}
}

func TestSequenceForceUpdateAllAtOnce(t *testing.T) {
	w := newWorld(t, newApp(3).Pool("test", tplWith(oldImage)).Templates(pairs("0", "test", "1", "test", "2", "test")).Obj())
	w.settle(8)
	clear(w.counts)
	pool := w.app.Spec.TemplatePool["test"]
	pool.Spec.Containers[0].Image = newImage
	w.app.Spec.TemplatePool["test"] = pool
	plan := w.pass()
	if diff := cmp.Diff([]int{0, 1, 2}, ids(plan.Updates())); diff != "" {
		t.Errorf("force path updates (-want +got):\n%s", diff)
	}
	for _, st := range w.app.Status.Statuses {
		if st != tkestackv1.InstanceUpdating {
			t.Errorf("statuses during the update: %v", w.app.Status.Statuses)
			break
		}
	}
	w.settle(8)
	w.expect(map[string]int{"update": 3, "gate": 3}, running("0", "1", "2"), tkestackv1.AppRunning)
}

func TestSequenceBatch(t *testing.T) {
	app := newApp(3).Mutate(func(a *tkestackv1.TApp) { a.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }).Obj()
	w := newWorld(t, app)
	w.settle(8)
	clear(w.counts)
	w.finish[0], w.finish[1] = corev1.PodSucceeded, corev1.PodFailed
	w.settle(8)
	// Finished pods are kept for logs until the app finishes.
	w.expect(map[string]int{}, with(running("2"), "0", "Succ", "1", "Failed"), tkestackv1.AppRunning)
	if len(w.pods) != 3 {
		t.Errorf("finished pods deleted early: %d pods", len(w.pods))
	}
	w.finish[2] = corev1.PodSucceeded
	w.settle(8)
	w.expect(map[string]int{"delete": 3}, map[string]tkestackv1.InstanceStatus{"0": "Succ", "1": "Failed", "2": "Succ"}, tkestackv1.AppFailed)
	if len(w.pods) != 0 {
		t.Errorf("pods left after the app finished: %d", len(w.pods))
	}
	// A finished app with no pods makes no writes; restart 1 by clearing its status entry.
	if plan := w.pass(); len(plan.GateWrites())+len(plan.Deletes())+len(plan.Creates())+len(plan.Updates()) != 0 {
		t.Error("finished app not quiet")
	}
	delete(w.finish, 1)
	delete(w.app.Status.Statuses, "1")
	w.pass()
	w.expect(map[string]int{"create": 1}, map[string]tkestackv1.InstanceStatus{"0": "Succ", "1": "Pending", "2": "Succ"}, tkestackv1.AppRunning)
}

func TestSequenceMigrateThenRecreate(t *testing.T) {
	w := newWorld(t, newApp(2).Obj()) // restartPolicy Always: finished pods migrate
	w.settle(8)
	clear(w.counts)
	w.finish[0] = corev1.PodFailed
	w.pass() // the kubelet marks it Failed after this pass
	delete(w.finish, 0)
	w.pass()
	if w.app.Status.Statuses["0"] != tkestackv1.InstanceKilling {
		t.Errorf("migrating pod: %v", w.app.Status.Statuses)
	}
	w.settle(8)
	w.expect(map[string]int{"delete": 1, "create": 1}, running("0", "1"), tkestackv1.AppRunning)
}

func TestSequenceLostNode(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("forceDeletePod=%v", force), func(t *testing.T) {
			w := newWorld(t, newApp(2).Mutate(func(a *tkestackv1.TApp) { a.Spec.ForceDeletePod = force }).Obj())
			w.settle(8)
			clear(w.counts)
			w.lostNode = true
			w.app.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": "Killed"}
			for range 3 {
				w.pass()
			}
			if force {
				w.expect(map[string]int{"delete": 1, "force": 1}, with(running("0"), "1", "Killed"), tkestackv1.AppRunning)
			} else {
				w.expect(map[string]int{"delete": 1}, with(running("0"), "1", "Killing"), tkestackv1.AppRunning)
			}
		})
	}
}

func TestSequenceBatchDeleteEachFinishedPod(t *testing.T) {
	app := newApp(2).Mutate(func(a *tkestackv1.TApp) {
		a.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		a.Spec.DeletePodAfterAppFinish = ptr.To(false)
	}).Obj()
	w := newWorld(t, app)
	w.settle(8)
	clear(w.counts)
	w.finish[0] = corev1.PodSucceeded
	w.pass() // the kubelet finishes 0 after this pass
	w.pass() // status Succ recorded
	if _, ok := w.pods[0]; !ok || w.app.Status.Statuses["0"] != tkestackv1.InstanceSucc {
		t.Fatalf("finished pod must be kept until its status is recorded: %v", w.app.Status.Statuses)
	}
	w.settle(8)
	w.expect(map[string]int{"delete": 1}, with(running("1"), "0", "Succ"), tkestackv1.AppRunning)
}

// TestSequenceSeedRepoint: applying the seed's "different templates" manifest over the single-template one
// changes no pod, because identical templates hash alike.
func TestSequenceSeedRepoint(t *testing.T) {
	w := newWorld(t, newApp(3).Obj())
	w.settle(8)
	clear(w.counts)
	w.app.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"test": tplWith(oldImage)}
	w.app.Spec.Templates = map[string]string{"1": "test"}
	w.app.Spec.DefaultTemplateName = "test"
	w.settle(8)
	w.expect(map[string]int{}, running("0", "1", "2"), tkestackv1.AppRunning)
}

// TestSequenceUpstreamPods: pods written by upstream TApp (decimal hashes) are re-stamped when they run the
// template's images, and recreated under the budget otherwise.
func TestSequenceUpstreamPods(t *testing.T) {
	w := newWorld(t, newApp(2).Obj())
	w.settle(8)
	clear(w.counts)
	for id, pod := range w.pods {
		pod = pod.DeepCopy()
		pod.Labels[tkestackv1.TAppHashKey], pod.Labels[tkestackv1.TAppUniqHashKey] = "123456", "789"
		if id == 1 {
			pod.Spec.Containers[0].Image = "nginx:1.6"
		}
		w.pods[id] = pod
	}
	w.kubelet() // pod 1 runs the older image: the template changed while no controller ran
	w.settle(12)
	// Pod 0 is restamped, pod 1 (only its image differs) updated in place, as upstream would have: no pod
	// is deleted or created.
	w.expect(map[string]int{"update": 2, "gate": 1}, running("0", "1"), tkestackv1.AppRunning)
}
