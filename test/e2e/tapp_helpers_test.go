package e2e

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/localcluster"
)

// Helpers of the TApp e2e specs (tapp_test.go). Pods run on kwok nodes; drover's kwok stages
// (internal/localcluster/stages) play the kubelet: Ready honours readiness gates, an in-place image change is
// reported with a new imageID and restartCount+1, and containers exit as the kwok.drover.dev/exit-code
// annotation says.

const (
	// tappTimeout bounds every wait of the TApp specs; the lost-node spec waits for kube-controller-manager's
	// node-monitor grace period (about 50s) on top.
	tappTimeout = 3 * time.Minute
	// tappPoll is the polling interval of the waits.
	tappPoll = 200 * time.Millisecond
	// tutorialDir holds the tutorial's manifests, verbatim.
	tutorialDir = "internal/tapp/testdata/tapp"
	// tappContainer is the container name of the tutorial's templates.
	tappContainer = "nginx"
)

// kubectl runs bin/k8s/kubectl against the e2e cluster and returns its combined output.
func kubectl(args ...string) (string, error) {
	root, err := localcluster.FindRepoRoot("")
	if err != nil {
		return "", err
	}
	full := append([]string{"--kubeconfig=" + cluster.Kubeconfig}, args...)
	cmd := exec.CommandContext(suiteCtx, filepath.Join(root, "bin", "k8s", "kubectl"), full...)
	out, err := cmd.CombinedOutput()
	GinkgoWriter.Printf("$ kubectl %s\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// mustKubectl runs kubectl and fails the spec when it fails.
func mustKubectl(args ...string) string {
	GinkgoHelper()
	out, err := kubectl(args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), out)
	return out
}

// applyTutorial applies one of the tutorial's manifests, unchanged, in ns (kubectl apply, strict field
// validation: kubectl's default).
func applyTutorial(ns, file string) {
	GinkgoHelper()
	root, err := localcluster.FindRepoRoot("")
	Expect(err).NotTo(HaveOccurred())
	mustKubectl("apply", "--namespace="+ns, "--validate=strict", "-f", filepath.Join(root, tutorialDir, file))
}

// getTApp reads a TApp.
func getTApp(g Gomega, ns, name string) *tkestackv1.TApp {
	var t tkestackv1.TApp
	g.ExpectWithOffset(1, k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, &t)).To(Succeed())
	return &t
}

// createTApp creates a TApp (through the webhooks).
func createTApp(t *tkestackv1.TApp) {
	GinkgoHelper()
	Expect(k8sClient.Create(suiteCtx, t)).To(Succeed())
}

// updateTApp changes a TApp's spec, retrying on conflicts.
func updateTApp(ns, name string, change func(*tkestackv1.TApp)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var t tkestackv1.TApp
		if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, &t); err != nil {
			return err
		}
		change(&t)
		return k8sClient.Update(suiteCtx, &t)
	})).To(Succeed())
}

// newTApp returns a TApp whose default template runs one container named tappContainer with image, labelled
// app=<name>.
func newTApp(ns, name string, replicas int32, image string) *tkestackv1.TApp {
	return &tkestackv1.TApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: tkestackv1.TAppSpec{
			Replicas: replicas,
			Template: tappPodTemplate(name, image),
		},
	}
}

// tappPodTemplate is a pod template labelled app=<app> with one container.
func tappPodTemplate(app, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: tappContainer, Image: image}}},
	}
}

// tappPods returns the pods controlled by the TApp, keyed by instance id.
func tappPods(g Gomega, ns, name string) map[string]*corev1.Pod {
	t := getTApp(g, ns, name)
	var pods corev1.PodList
	g.ExpectWithOffset(1, k8sClient.List(suiteCtx, &pods, client.InNamespace(ns), client.HasLabels{tkestackv1.TAppInstanceKey})).To(Succeed())
	out := map[string]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == t.UID {
			out[p.Labels[tkestackv1.TAppInstanceKey]] = p
		}
	}
	return out
}

// podConditionStatus returns the status of a pod condition ("" when absent).
func podConditionStatus(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// containerStatus returns the status of a container ("" name: the first).
func containerStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range p.Status.ContainerStatuses {
		if name == "" || cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

// containerImage returns the spec image of a container.
func containerImage(p *corev1.Pod, name string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

// podAvailable is what the e2e specs call available: not terminating, Running, Ready True and, when the pod has
// the in-place readiness gate, its condition True.
func podAvailable(p *corev1.Pod) bool {
	if p == nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	if podConditionStatus(p, corev1.PodReady) != corev1.ConditionTrue {
		return false
	}
	for _, gate := range p.Spec.ReadinessGates {
		if podConditionStatus(p, gate.ConditionType) != corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// onKwokNode checks that the pod is bound to a node kwok manages (annotation kwok.x-k8s.io/node=fake).
func onKwokNode(g Gomega, p *corev1.Pod) {
	g.ExpectWithOffset(1, p.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not scheduled", p.Name)
	var n corev1.Node
	g.ExpectWithOffset(1, k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Spec.NodeName}, &n)).To(Succeed())
	g.ExpectWithOffset(1, n.Annotations).To(HaveKeyWithValue(localcluster.AnnotationKwokNode, localcluster.KwokNodeValue),
		"pod %s runs on %s, which is not a kwok node", p.Name, n.Name)
}

// expectInstancesRunning checks, inside an Eventually, that the TApp has exactly the pods of images (id →
// image of tappContainer), each Running, Ready, gate True, on a kwok node, and that its status says so:
// observedGeneration current, every listed id Running, appStatus Running, and the ready/updated/available
// counts equal to the number of running ids. Ids in extra must have the given status and no pod.
func expectInstancesRunning(g Gomega, ns, name string, images map[string]string, extra map[string]tkestackv1.InstanceStatus) map[string]*corev1.Pod {
	pods := tappPods(g, ns, name)
	g.Expect(sortedKeys(pods)).To(Equal(sortedKeys(images)), "pods of TApp %s/%s", ns, name)
	for id, image := range images {
		p := pods[id]
		g.Expect(p.Name).To(Equal(name+"-"+id), "pod of instance %s", id)
		g.Expect(containerImage(p, tappContainer)).To(Equal(image), "spec image of %s", p.Name)
		g.Expect(containerStatus(p, tappContainer).Image).To(Equal(image), "image reported for %s", p.Name)
		g.Expect(podAvailable(p)).To(BeTrue(), "pod %s is Running, Ready, gate True (phase %s, conditions %v)",
			p.Name, p.Status.Phase, p.Status.Conditions)
		onKwokNode(g, p)
	}
	t := getTApp(g, ns, name)
	g.Expect(t.Status.ObservedGeneration).To(Equal(t.Generation), "status of generation %d", t.Generation)
	want := map[string]tkestackv1.InstanceStatus{}
	for id := range images {
		want[id] = tkestackv1.InstanceRunning
	}
	for id, s := range extra {
		want[id] = s
		g.Expect(pods).NotTo(HaveKey(id))
	}
	g.Expect(t.Status.Statuses).To(Equal(want), "status.statuses of %s", name)
	g.Expect(t.Status.AppStatus).To(Equal(tkestackv1.AppRunning))
	g.Expect(t.Status.ReadyReplicas).To(BeEquivalentTo(len(images)))
	g.Expect(t.Status.UpdatedReplicas).To(BeEquivalentTo(len(images)))
	g.Expect(t.Status.AvailableReplicas).To(BeEquivalentTo(len(images)))
	g.Expect(t.Status.Replicas).To(BeEquivalentTo(len(want)))
	return pods
}

// eventuallyRunning waits for expectInstancesRunning and returns the pods.
func eventuallyRunning(ns, name string, images map[string]string, extra map[string]tkestackv1.InstanceStatus) map[string]*corev1.Pod {
	GinkgoHelper()
	var pods map[string]*corev1.Pod
	Eventually(func(g Gomega) {
		pods = expectInstancesRunning(g, ns, name, images, extra)
	}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
	return pods
}

// sameImages returns id → image for ids.
func sameImages(image string, ids ...string) map[string]string {
	m := map[string]string{}
	for _, id := range ids {
		m[id] = image
	}
	return m
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// uids returns id → pod UID.
func uids(pods map[string]*corev1.Pod) map[string]types.UID {
	m := map[string]types.UID{}
	for id, p := range pods {
		m[id] = p.UID
	}
	return m
}

// restarts returns id → restartCount of tappContainer.
func restarts(pods map[string]*corev1.Pod) map[string]int32 {
	m := map[string]int32{}
	for id, p := range pods {
		m[id] = containerStatus(p, tappContainer).RestartCount
	}
	return m
}

// conditionOf returns the TApp condition of a type, or nil.
func conditionOf(t *tkestackv1.TApp, condType string) *metav1.Condition {
	for i := range t.Status.Conditions {
		if t.Status.Conditions[i].Type == condType {
			return &t.Status.Conditions[i]
		}
	}
	return nil
}

// tappEvents returns the reasons and notes of the events regarding the TApp.
func tappEvents(g Gomega, ns, name string) []eventsv1.Event {
	var list eventsv1.EventList
	g.ExpectWithOffset(1, k8sClient.List(suiteCtx, &list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "TApp" && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// eventReasons returns the distinct reasons of events.
func eventReasons(events []eventsv1.Event) []string {
	var r []string
	for _, e := range events {
		if !slices.Contains(r, e.Reason) {
			r = append(r, e.Reason)
		}
	}
	sort.Strings(r)
	return r
}

// availabilityTracker watches a set of pods by name and records, from the ordered watch stream, the largest
// number of them that were unavailable at the same time and the order in which they became unavailable.
type availabilityTracker struct {
	mu          sync.Mutex
	names       []string
	pods        map[string]*corev1.Pod
	unavailable map[string]bool
	max         int
	starts      []string
	stop        context.CancelFunc
	done        chan struct{}
	err         error
}

// trackAvailability starts a tracker for the pods of names in ns; every one of them must be available now.
// Stop it with Stop.
func trackAvailability(ns string, names ...string) *availabilityTracker {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(cluster.Config)
	Expect(err).NotTo(HaveOccurred())
	list, err := cs.CoreV1().Pods(ns).List(suiteCtx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	tr := &availabilityTracker{names: names, pods: map[string]*corev1.Pod{}, unavailable: map[string]bool{}, done: make(chan struct{})}
	for i := range list.Items {
		if slices.Contains(names, list.Items[i].Name) {
			tr.pods[list.Items[i].Name] = &list.Items[i]
		}
	}
	for _, n := range names {
		Expect(podAvailable(tr.pods[n])).To(BeTrue(), "pod %s must be available before tracking", n)
	}
	ctx, cancel := context.WithCancel(suiteCtx)
	tr.stop = cancel
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer close(tr.done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					tr.mu.Lock()
					tr.err = fmt.Errorf("the pod watch ended early")
					tr.mu.Unlock()
					return
				}
				tr.observe(ev)
			}
		}
	}()
	DeferCleanup(tr.Stop)
	return tr
}

func (tr *availabilityTracker) observe(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok || !slices.Contains(tr.names, p.Name) {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if ev.Type == watch.Deleted {
		delete(tr.pods, p.Name)
	} else {
		tr.pods[p.Name] = p
	}
	n := 0
	for _, name := range tr.names {
		un := !podAvailable(tr.pods[name])
		if un {
			n++
			if !tr.unavailable[name] && !slices.Contains(tr.starts, name) {
				tr.starts = append(tr.starts, name)
			}
		}
		tr.unavailable[name] = un
	}
	tr.max = max(tr.max, n)
}

// Stop ends the watch.
func (tr *availabilityTracker) Stop() {
	tr.stop()
	<-tr.done
}

// Result returns the largest number of simultaneously unavailable pods and the order in which pods first
// became unavailable. A pod counts once: its readiness can flap after an update (kwok, like a kubelet,
// recomputes Ready when the restarted container and the gate change, in either order), and the specs catch a
// repeated update through restart counts and UIDs instead.
func (tr *availabilityTracker) Result() (maxUnavailable int, starts []string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	Expect(tr.err).NotTo(HaveOccurred())
	return tr.max, slices.Clone(tr.starts)
}

// newKwokNode creates a fake node that kwok manages, outside the NodePools, with extra labels; the spec's
// cleanup force-deletes the pods left on it and deletes it.
func newKwokNode(name string, labels map[string]string) *corev1.Node {
	GinkgoHelper()
	node := localcluster.FakeNode(localcluster.NodeSpec{Name: name, Zone: "zone-e2e"})
	delete(node.Labels, localcluster.LabelNodePool)
	for k, v := range labels {
		node.Labels[k] = v
	}
	Expect(k8sClient.Create(suiteCtx, node)).To(Succeed())
	DeferCleanup(func() {
		var pods corev1.PodList
		Expect(k8sClient.List(suiteCtx, &pods, client.MatchingFields{"spec.nodeName": name})).To(Succeed())
		for i := range pods.Items {
			Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, &pods.Items[i], client.GracePeriodSeconds(0)))).To(Succeed())
		}
		Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, node))).To(Succeed())
	})
	Eventually(func(g Gomega) {
		var n corev1.Node
		g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, &n)).To(Succeed())
		g.Expect(localcluster.NodeReady(&n)).To(BeTrue())
	}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed(), "kwok makes node %s Ready", name)
	return node
}

// loseNode makes a node lost, the way a local cluster can: its pods get the annotation
// kwok.drover.dev/disregard, which drover's kwok stages honour by leaving them alone as a gone kubelet would
// (no status change, no removal after a deletion), and the node's Lease is given to another holder for an
// hour, so that kwok stops renewing it. kube-controller-manager then sees no heartbeat and, after its
// node-monitor grace period (about 50s), marks the node's Ready condition Unknown, taints it unreachable and
// marks its pods not Ready, as for a real lost node. (The Lease alone is not enough: kwok v0.8.0 does not
// reliably stop playing the pods of a node whose Lease it does not hold.)
func loseNode(name string) {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(k8sClient.List(suiteCtx, &pods, client.MatchingFields{"spec.nodeName": name})).To(Succeed())
	for i := range pods.Items {
		p := &pods.Items[i]
		patch := client.MergeFrom(p.DeepCopy())
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, localcluster.AnnotationKwokDisregard, "true")
		Expect(k8sClient.Patch(suiteCtx, p, patch)).To(Succeed())
	}
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var lease coordinationv1.Lease
		if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: name}, &lease); err != nil {
			return err
		}
		lease.Spec.HolderIdentity = ptr.To("e2e-node-lost")
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		return k8sClient.Update(suiteCtx, &lease)
	})).To(Succeed())
	Eventually(func(g Gomega) {
		var n corev1.Node
		g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, &n)).To(Succeed())
		ready := corev1.ConditionStatus("")
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status
			}
		}
		g.Expect(ready).To(BeElementOf(corev1.ConditionUnknown, corev1.ConditionFalse), "node %s Ready condition", name)
	}).WithTimeout(tappTimeout).WithPolling(time.Second).Should(Succeed(), "kube-controller-manager marks node %s not Ready", name)
}

// deleteIgnoringNotFound deletes obj; NotFound is fine.
func deleteIgnoringNotFound(obj client.Object, opts ...client.DeleteOption) {
	GinkgoHelper()
	err := k8sClient.Delete(suiteCtx, obj, opts...)
	if !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}
