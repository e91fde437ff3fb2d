package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/tapp"
	"github.com/drover-dev/drover/internal/testutil"
)

const seedTApp = "example-tapp"

// applySeed creates the objects of a seed tutorial manifest (internal/tapp/testdata/tapp) verbatim in a
// namespace, with strict field validation, as `kubectl apply -n <ns>` does.
func applySeed(ctx context.Context, file, ns string) {
	data, err := os.ReadFile(filepath.Join(repoRoot(), "internal", "tapp", "testdata", "tapp", file))
	Expect(err).NotTo(HaveOccurred())
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		Expect(err).NotTo(HaveOccurred())
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		raw, err := yaml.YAMLToJSON(doc)
		Expect(err).NotTo(HaveOccurred())
		obj := &unstructured.Unstructured{}
		Expect(obj.UnmarshalJSON(raw)).To(Succeed())
		obj.SetNamespace(ns)
		Expect(k8sClient.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed(), file)
	}
}

// tappKubelet plays the kubelet of every pod of a namespace once, as envtest has none: pods that are not
// terminating run, report the images of their spec (a changed image with a new imageID and restartCount+1,
// which is how a kubelet reports an in-place image update), and are Ready iff the in-place gate is True,
// as a kubelet derives Ready from readiness gates. Lost races with the controller are retried by the next
// sweep.
func tappKubelet(ctx context.Context, ns string) {
	list := &corev1.PodList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.DeletionTimestamp != nil {
			continue
		}
		want := pod.DeepCopy()
		want.Status.Phase = corev1.PodRunning
		for _, c := range pod.Spec.Containers {
			reportImage(want, c)
		}
		ready := corev1.ConditionFalse
		for _, cond := range pod.Status.Conditions {
			if cond.Type == tkestackv1.InPlaceUpdateReady && cond.Status == corev1.ConditionTrue {
				ready = corev1.ConditionTrue
			}
		}
		setPodCondition(want, corev1.PodReady, ready)
		if equality.Semantic.DeepEqual(pod.Status, want.Status) {
			continue
		}
		if err := k8sClient.Status().Update(ctx, want); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
}

func reportImage(pod *corev1.Pod, c corev1.Container) {
	for i := range pod.Status.ContainerStatuses {
		st := &pod.Status.ContainerStatuses[i]
		if st.Name != c.Name {
			continue
		}
		if st.Image != c.Image {
			st.Image, st.ImageID = c.Image, "docker-pullable://"+c.Image+"@sha256:fake"
			st.RestartCount++
			st.ContainerID = fmt.Sprintf("containerd://%s-%d", c.Name, st.RestartCount)
		}
		return
	}
	pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: "docker-pullable://" + c.Image + "@sha256:fake",
		ContainerID: "containerd://" + c.Name + "-0", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
	})
}

func setPodCondition(pod *corev1.Pod, typ corev1.PodConditionType, status corev1.ConditionStatus) {
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == typ {
			if c.Status != status {
				c.Status, c.LastTransitionTime = status, metav1.Now()
			}
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: typ, Status: status, LastTransitionTime: metav1.Now()})
}

func podCondition(pod *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// tappNode creates a Node whose Ready condition has the given status, as a kubelet reports it, and deletes
// it after the spec. Nodes are cluster-scoped: callers name them after the spec's namespace.
func tappNode(ctx context.Context, name string, ready corev1.ConditionStatus) {
	node := testutil.MakeNode(name).Obj()
	Expect(k8sClient.Create(ctx, node)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, node))).To(Succeed()) })
	setNodeReady(ctx, name, ready)
}

// setNodeReady sets a Node's Ready condition through the status subresource, as a kubelet (True) or the
// node lifecycle controller (Unknown) would.
func setNodeReady(ctx context.Context, name string, ready corev1.ConditionStatus) {
	Eventually(func() error {
		node := &corev1.Node{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		node.Status.Conditions = testutil.MakeNode(name).Condition(corev1.NodeReady, ready).Obj().Status.Conditions
		return k8sClient.Status().Update(ctx, node)
	}).Should(Succeed())
}

// bindPod binds a pod to a node through the binding subresource, as the scheduler does.
func bindPod(ctx context.Context, ns, pod, node string) {
	Expect(k8sClient.SubResource("binding").Create(ctx,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}},
		&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}})).To(Succeed())
}

var _ = Describe("TApp", func() {
	var ctx context.Context
	BeforeEach(func() { ctx = context.Background() })

	newNamespace := func() string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tapp-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		return ns.Name
	}
	getTApp := func(ns, name string) *tkestackv1.TApp {
		app := &tkestackv1.TApp{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app)).To(Succeed())
		return app
	}
	status := func(ns, name string) func() tkestackv1.TAppStatus {
		return func() tkestackv1.TAppStatus { return getTApp(ns, name).Status }
	}
	updateTApp := func(ns, name string, mutate func(*tkestackv1.TApp)) {
		Eventually(func() error {
			app := getTApp(ns, name)
			mutate(app)
			return k8sClient.Update(ctx, app)
		}).Should(Succeed())
	}
	pods := func(ns string) map[string]*corev1.Pod {
		list := &corev1.PodList{}
		Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		out := map[string]*corev1.Pod{}
		for i := range list.Items {
			out[list.Items[i].Name] = &list.Items[i]
		}
		return out
	}
	podNames := func(ns string) func() []string {
		return func() []string {
			var names []string
			for name := range pods(ns) {
				names = append(names, name)
			}
			slices.Sort(names)
			return names
		}
	}
	images := func(ns string) func() map[string]string {
		return func() map[string]string {
			out := map[string]string{}
			for name, pod := range pods(ns) {
				out[name] = pod.Spec.Containers[0].Image
			}
			return out
		}
	}
	// running waits, playing the kubelet, until every listed instance is Running and available.
	running := func(ns, name string, ids ...string) {
		Eventually(func(g Gomega) {
			tappKubelet(ctx, ns)
			st := getTApp(ns, name).Status
			for _, id := range ids {
				g.Expect(st.Statuses).To(HaveKeyWithValue(id, tkestackv1.InstanceRunning))
			}
			g.Expect(st.AvailableReplicas).To(BeNumerically("==", len(ids)))
		}).Should(Succeed())
	}
	condition := func(ns, name, typ string) func() string {
		return func() string {
			app := getTApp(ns, name)
			c := apimeta.FindStatusCondition(app.Status.Conditions, typ)
			if c == nil || c.ObservedGeneration != app.Generation {
				return ""
			}
			return string(c.Status) + "/" + c.Reason
		}
	}
	eventReasons := func(ns string) func() []string {
		return func() []string {
			list := &eventsv1.EventList{}
			Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, e := range list.Items {
				if e.Regarding.Kind == "TApp" {
					out = append(out, e.Reason)
				}
			}
			return out
		}
	}

	eventNotes := func(ns, reason string) func() []string {
		return func() []string {
			list := &eventsv1.EventList{}
			Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, e := range list.Items {
				if e.Regarding.Kind == "TApp" && e.Reason == reason {
					out = append(out, e.Note)
				}
			}
			return out
		}
	}
	// podUID returns the UID of a pod, "" when it does not exist.
	podUID := func(ns, name string) func() types.UID {
		return func() types.UID {
			if pod, ok := pods(ns)[name]; ok {
				return pod.UID
			}
			return ""
		}
	}
	instanceStatus := func(ns, name, id string) func() tkestackv1.InstanceStatus {
		return func() tkestackv1.InstanceStatus { return status(ns, name)().Statuses[id] }
	}

	It("runs the tutorial's first example: create, run, kill, restart, in-place update and scale", func() {
		ns := newNamespace()
		applySeed(ctx, "01-create-same-template.yaml", ns)

		By("creating one pod per instance, named <tapp>-<id>, labelled and gated")
		Eventually(podNames(ns)).Should(Equal([]string{"example-tapp-0", "example-tapp-1", "example-tapp-2"}))
		app := getTApp(ns, seedTApp)
		Expect(app.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app": seedTApp}))
		Eventually(func(g Gomega) {
			for name, pod := range pods(ns) {
				g.Expect(pod.Labels).To(HaveKeyWithValue("app", seedTApp))
				g.Expect(pod.Labels).To(HaveKeyWithValue(tkestackv1.TAppInstanceKey, name[len(seedTApp)+1:]))
				g.Expect(pod.Labels).To(HaveKeyWithValue(tkestackv1.TAppHashKey, HavePrefix("v1-")))
				g.Expect(pod.Labels).To(HaveKeyWithValue(tkestackv1.TAppUniqHashKey, HavePrefix("v1-")))
				g.Expect(pod.Spec.ReadinessGates).To(ContainElement(corev1.PodReadinessGate{ConditionType: tkestackv1.InPlaceUpdateReady}))
				g.Expect(podCondition(pod, tkestackv1.InPlaceUpdateReady)).To(Equal(corev1.ConditionTrue))
				ref := metav1.GetControllerOf(pod)
				g.Expect(ref).NotTo(BeNil())
				g.Expect(ref.UID).To(Equal(app.UID))
			}
		}).Should(Succeed())
		Eventually(func() map[string]tkestackv1.InstanceStatus { return status(ns, seedTApp)().Statuses }).Should(Equal(
			map[string]tkestackv1.InstanceStatus{"0": "Pending", "1": "Pending", "2": "Pending"}))

		By("reporting Running and ready instances once the pods run")
		running(ns, seedTApp, "0", "1", "2")
		Eventually(status(ns, seedTApp)).Should(And(
			HaveField("ReadyReplicas", BeEquivalentTo(3)), HaveField("Replicas", BeEquivalentTo(3)),
			HaveField("AppStatus", tkestackv1.AppRunning), HaveField("ScaleLabelSelector", "app="+seedTApp)))
		Eventually(condition(ns, seedTApp, tkestackv1.TAppAvailable)).Should(Equal("True/MinimumReplicasAvailable"))
		Eventually(condition(ns, seedTApp, tkestackv1.TAppProgressing)).Should(Equal("False/RolloutComplete"))

		By("making no write at steady state, whatever triggers a pass")
		versions := func() []string {
			out := []string{getTApp(ns, seedTApp).ResourceVersion}
			for _, name := range podNames(ns)() {
				out = append(out, pods(ns)[name].ResourceVersion)
			}
			return out
		}
		passes := reconcileTotal(tapp.ControllerName)
		before := versions()
		// A metadata-only patch (an update would re-serialise the spec and bump the generation); the versions
		// taken before it, with the TApp's as the patch left it, catch any write of the pass it triggers.
		touched := getTApp(ns, seedTApp)
		Expect(k8sClient.Patch(ctx, touched, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"touched":"yes"}}}`)))).To(Succeed())
		before[0] = touched.ResourceVersion
		Eventually(func() float64 { return reconcileTotal(tapp.ControllerName) }).Should(BeNumerically(">", passes),
			"the patch triggers a pass")
		Consistently(versions, "2s", "200ms").Should(Equal(before))

		By("killing instance 1 through spec.statuses")
		updateTApp(ns, seedTApp, func(a *tkestackv1.TApp) {
			a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": tkestackv1.InstanceKilled}
		})
		Eventually(podNames(ns)).Should(Equal([]string{"example-tapp-0", "example-tapp-2"}))
		Eventually(status(ns, seedTApp)).Should(And(
			HaveField("Statuses", HaveKeyWithValue("1", tkestackv1.InstanceKilled)),
			HaveField("Replicas", BeEquivalentTo(3)), HaveField("ReadyReplicas", BeEquivalentTo(2))))

		By("restarting it by removing the entry")
		updateTApp(ns, seedTApp, func(a *tkestackv1.TApp) { a.Spec.Statuses = nil })
		Eventually(podNames(ns)).Should(HaveLen(3))
		running(ns, seedTApp, "0", "1", "2")

		By("updating the image in place, one instance at a time")
		updateTApp(ns, seedTApp, func(a *tkestackv1.TApp) { a.Spec.Template.Spec.Containers[0].Image = "nginx:1.8" })
		Eventually(func(g Gomega) {
			pod := pods(ns)["example-tapp-0"]
			g.Expect(pod.Spec.Containers[0].Image).To(Equal("nginx:1.8"))
			g.Expect(podCondition(pod, tkestackv1.InPlaceUpdateReady)).To(Equal(corev1.ConditionFalse))
			g.Expect(pod.Annotations).To(HaveKeyWithValue(tkestackv1.InPlaceUpdateStateKey, "true"))
			g.Expect(pod.Annotations).To(HaveKey(tkestackv1.InPlaceUpdateRecordKey))
		}).Should(Succeed())
		Eventually(func() tkestackv1.InstanceStatus { return status(ns, seedTApp)().Statuses["0"] }).Should(Equal(tkestackv1.InstanceUpdating))
		Consistently(images(ns), "1s", "100ms").Should(Equal(map[string]string{
			"example-tapp-0": "nginx:1.8", "example-tapp-1": "nginx:1.7.9", "example-tapp-2": "nginx:1.7.9"}))

		worst := 0
		Eventually(func(g Gomega) {
			tappKubelet(ctx, ns)
			unavailable := 0
			for _, pod := range pods(ns) {
				if podCondition(pod, corev1.PodReady) != corev1.ConditionTrue || podCondition(pod, tkestackv1.InPlaceUpdateReady) != corev1.ConditionTrue {
					unavailable++
				}
			}
			worst = max(worst, unavailable)
			st := getTApp(ns, seedTApp).Status
			g.Expect(st.UpdatedReplicas).To(BeEquivalentTo(3))
			g.Expect(st.AvailableReplicas).To(BeEquivalentTo(3))
		}).Should(Succeed())
		Expect(worst).To(BeNumerically("<=", 1), "maxUnavailable 1 exceeded")
		for name, pod := range pods(ns) {
			Expect(pod.Spec.Containers[0].Image).To(Equal("nginx:1.8"), name)
			Expect(pod.Status.ContainerStatuses[0].RestartCount).To(BeEquivalentTo(1), name) // updated in place, not recreated
		}
		Eventually(condition(ns, seedTApp, tkestackv1.TAppProgressing)).Should(Equal("False/RolloutComplete"))

		By("scaling through the scale subresource")
		scaleTo := func(n int32) {
			scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: n}}
			Expect(k8sClient.SubResource("scale").Update(ctx, getTApp(ns, seedTApp), client.WithSubResourceBody(scale))).To(Succeed())
		}
		scaleTo(5)
		Eventually(podNames(ns)).Should(HaveLen(5))
		Expect(images(ns)()).To(HaveKeyWithValue("example-tapp-4", "nginx:1.8"))
		running(ns, seedTApp, "0", "1", "2", "3", "4")
		scale := &autoscalingv1.Scale{}
		Expect(k8sClient.SubResource("scale").Get(ctx, getTApp(ns, seedTApp), scale)).To(Succeed())
		Expect(scale.Status.Replicas).To(BeEquivalentTo(5))
		Expect(scale.Status.Selector).To(Equal("app=" + seedTApp))
		scaleTo(2)
		Eventually(podNames(ns)).Should(Equal([]string{"example-tapp-0", "example-tapp-1"}))
		Eventually(func() map[string]tkestackv1.InstanceStatus { return status(ns, seedTApp)().Statuses }).Should(Equal(
			map[string]tkestackv1.InstanceStatus{"0": "Running", "1": "Running"}))

		By("reporting every write as an event on the TApp")
		Eventually(eventReasons(ns)).Should(ContainElements(tkestackv1.ReasonSuccessfulCreate, tkestackv1.ReasonSuccessfulDelete,
			tkestackv1.ReasonSuccessfulUpdate, tkestackv1.ReasonInPlaceUpdateCompleted))
	})

	It("applies every seed manifest verbatim and behaves as the tutorial says", func() {
		for _, file := range []string{"02-create-different-templates.yaml", "03-update-specified-pod.yaml",
			"04-rolling-update.yaml", "05-kill-pod.yaml", "06-service-name.yaml", "07-auto-delete-unused-template.yaml"} {
			ns := newNamespace()
			By(file)
			applySeed(ctx, file, ns)
			switch file {
			case "03-update-specified-pod.yaml", "04-rolling-update.yaml":
				Eventually(images(ns)).Should(HaveKeyWithValue("example-tapp-1", "nginx:1.7.9"))
				Eventually(images(ns)).Should(HaveKeyWithValue("example-tapp-0", "nginx:latest"))
			case "05-kill-pod.yaml":
				Eventually(podNames(ns)).Should(Equal([]string{"example-tapp-0", "example-tapp-2"}))
				Eventually(func() tkestackv1.InstanceStatus { return status(ns, seedTApp)().Statuses["1"] }).Should(Equal(tkestackv1.InstanceKilled))
				Consistently(podNames(ns), "1s", "100ms").Should(HaveLen(2))
			case "06-service-name.yaml":
				Eventually(podNames(ns)).Should(HaveLen(3))
				for name, pod := range pods(ns) {
					Expect(pod.Spec.Hostname).To(Equal(name))
					Expect(pod.Spec.Subdomain).To(Equal("nginx"))
				}
			case "07-auto-delete-unused-template.yaml":
				Eventually(func() []string {
					var names []string
					for name := range getTApp(ns, seedTApp).Spec.TemplatePool {
						names = append(names, name)
					}
					slices.Sort(names)
					return names
				}).Should(Equal([]string{"test1", "test3", "test4"}))
				Eventually(images(ns)).Should(Equal(map[string]string{
					"example-tapp-0": "nginx:1.7.7", "example-tapp-1": "nginx:1.7.9", "example-tapp-2": "nginx:1.7.7"}))
				Eventually(eventReasons(ns)).Should(ContainElement(tkestackv1.ReasonTemplatesPruned))
			default:
				Eventually(podNames(ns)).Should(HaveLen(3))
			}
			running(ns, seedTApp, slices.DeleteFunc([]string{"0", "1", "2"}, func(id string) bool {
				return file == "05-kill-pod.yaml" && id == "1"
			})...)
		}
	})

	It("creates the PVCs of volumeClaimTemplates before the pods, named <claim>-<tapp>-<id>", func() {
		ns := newNamespace()
		lbls := map[string]string{"app": "db"}
		app := testutil.MakeTApp("db", ns).Replicas(2).Template(testutil.PodTemplate(lbls, "postgres:16")).
			VolumeClaim("data", "1Gi").Obj()
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(podNames(ns)).Should(Equal([]string{"db-0", "db-1"}))
		for _, id := range []string{"0", "1"} {
			pvc := &corev1.PersistentVolumeClaim{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-" + id}, pvc)).To(Succeed())
			Expect(pvc.Labels).To(HaveKeyWithValue("app", "db"))
			ref := metav1.GetControllerOf(pvc)
			Expect(ref).NotTo(BeNil())
			Expect(ref.UID).To(Equal(getTApp(ns, "db").UID))
			pod := pods(ns)["db-"+id]
			Expect(pod.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.PersistentVolumeClaim.ClaimName", "data-db-"+id)))
		}

		By("removing the TApp ownerReference when whenDeleted becomes Retain")
		updateTApp(ns, "db", func(a *tkestackv1.TApp) {
			a.Spec.PersistentVolumeClaimRetentionPolicy = &tkestackv1.PersistentVolumeClaimRetentionPolicy{
				WhenDeleted: tkestackv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  tkestackv1.DeletePersistentVolumeClaimRetentionPolicyType,
			}
		})
		Eventually(func() []metav1.OwnerReference {
			pvc := &corev1.PersistentVolumeClaim{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-1"}, pvc)).To(Succeed())
			return pvc.OwnerReferences
		}).Should(BeEmpty())

		By("deleting the PVCs of removed ids under whenScaled: Delete, once their pod is gone")
		updateTApp(ns, "db", func(a *tkestackv1.TApp) { a.Spec.Replicas = 1 })
		Eventually(func() bool {
			pvc := &corev1.PersistentVolumeClaim{}
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-1"}, pvc)
			return apierrors.IsNotFound(err) || (err == nil && pvc.DeletionTimestamp != nil) // pvc-protection may hold it
		}).Should(BeTrue())
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, pvc)).To(Succeed())
		Expect(pvc.DeletionTimestamp).To(BeNil())
	})

	It("reports a name taken by a pod it does not own and never touches that pod", func() {
		ns := newNamespace()
		foreign := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		app := testutil.MakeTApp("web", ns).Replicas(2).Template(testutil.PodTemplate(map[string]string{"app": "web"}, "nginx:1.7.9")).Obj()
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(condition(ns, "web", tkestackv1.TAppReplicaFailure)).Should(Equal("True/PodNameConflict"))
		Eventually(eventReasons(ns)).Should(ContainElement(tkestackv1.ReasonPodNameConflict))
		Expect(podNames(ns)()).To(Equal([]string{"web-0", "web-1"}))
		cur := pods(ns)["web-1"]
		Expect(metav1.GetControllerOf(cur)).To(BeNil())
		Expect(cur.ResourceVersion).To(Equal(foreign.ResourceVersion))

		By("creating the instance once the name is free")
		Expect(k8sClient.Delete(ctx, cur)).To(Succeed())
		Eventually(func() *metav1.OwnerReference {
			pod, ok := pods(ns)["web-1"]
			if !ok {
				return nil
			}
			return metav1.GetControllerOf(pod)
		}).ShouldNot(BeNil())
		Eventually(condition(ns, "web", tkestackv1.TAppReplicaFailure)).Should(Equal("False/NoFailures"))
	})

	It("releases an owned pod that stops matching the selector, keeps it, and adopts it back", func() {
		ns := newNamespace()
		app := testutil.MakeTApp("web", ns).Replicas(2).Template(testutil.PodTemplate(map[string]string{"app": "web"}, "nginx:1.7.9")).Obj()
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(podNames(ns)).Should(Equal([]string{"web-0", "web-1"}))
		running(ns, "web", "0", "1")
		owner := getTApp(ns, "web").UID
		released := pods(ns)["web-0"]
		Expect(metav1.GetControllerOf(released).UID).To(Equal(owner))
		relabel := func(value string) {
			Eventually(func() error {
				pod := &corev1.Pod{}
				if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-0"}, pod); err != nil {
					return err
				}
				pod.Labels["app"] = value
				return k8sClient.Update(ctx, pod)
			}).Should(Succeed())
		}

		By("removing the controller reference once web-0 no longer matches app=web")
		relabel("detached")
		Eventually(func() []metav1.OwnerReference { return pods(ns)["web-0"].OwnerReferences }).Should(BeEmpty())
		Eventually(eventNotes(ns, tkestackv1.ReasonReleased)).Should(ConsistOf(
			"Released pod web-0: it no longer matches the selector"))

		By("keeping the released pod and not recreating instance 0 while the pod holds its name")
		Eventually(condition(ns, "web", tkestackv1.TAppReplicaFailure)).Should(Equal("True/PodNameConflict"))
		Eventually(status(ns, "web")).Should(And(
			HaveField("Statuses", Equal(map[string]tkestackv1.InstanceStatus{"0": tkestackv1.InstanceNotCreated, "1": tkestackv1.InstanceRunning})),
			HaveField("AvailableReplicas", BeEquivalentTo(1))))
		Eventually(eventReasons(ns)).Should(ContainElement(tkestackv1.ReasonPodNameConflict))
		Consistently(func(g Gomega) {
			g.Expect(podNames(ns)()).To(Equal([]string{"web-0", "web-1"}))
			pod := pods(ns)["web-0"]
			g.Expect(pod.UID).To(Equal(released.UID))
			g.Expect(pod.DeletionTimestamp).To(BeNil())
			g.Expect(pod.OwnerReferences).To(BeEmpty())
			g.Expect(pod.Labels).To(HaveKeyWithValue("app", "detached"))
		}, "2s", "200ms").Should(Succeed())

		By("adopting the same pod again once it matches the selector")
		relabel("web")
		Eventually(func() types.UID {
			if ref := metav1.GetControllerOf(pods(ns)["web-0"]); ref != nil {
				return ref.UID
			}
			return ""
		}).Should(Equal(owner))
		Expect(pods(ns)["web-0"].UID).To(Equal(released.UID))
		Eventually(eventNotes(ns, tkestackv1.ReasonAdopted)).Should(ConsistOf("Adopted pod web-0"))
		Eventually(condition(ns, "web", tkestackv1.TAppReplicaFailure)).Should(Equal("False/NoFailures"))
		running(ns, "web", "0", "1")
		Expect(podNames(ns)()).To(Equal([]string{"web-0", "web-1"}))
	})

	It("counts a Ready pod as available only minReadySeconds later, requeueing on its own", func() {
		const minReady = 5 * time.Second
		ns := newNamespace()
		app := testutil.MakeTApp("slow", ns).Replicas(1).Template(testutil.PodTemplate(map[string]string{"app": "slow"}, "nginx:1.7.9")).Obj()
		app.Spec.MinReadySeconds = int32(minReady / time.Second)
		Expect(k8sClient.Create(ctx, app)).To(Succeed())

		By("running the pod and turning it Ready")
		Eventually(func(g Gomega) {
			tappKubelet(ctx, ns)
			pod, ok := pods(ns)["slow-0"]
			g.Expect(ok).To(BeTrue())
			g.Expect(podCondition(pod, corev1.PodReady)).To(Equal(corev1.ConditionTrue))
		}).Should(Succeed())
		pod := pods(ns)["slow-0"]
		since := pod.CreationTimestamp.Time
		for _, c := range pod.Status.Conditions {
			if (c.Type == corev1.PodReady || c.Type == tkestackv1.InPlaceUpdateReady) && c.LastTransitionTime.After(since) {
				since = c.LastTransitionTime.Time
			}
		}
		availableAt := since.Add(minReady)

		By("reporting it Ready but not available at first")
		var first tkestackv1.TAppStatus
		var readAt time.Time
		Eventually(func(g Gomega) {
			readAt = time.Now() // the status read below was written before this instant
			first = status(ns, "slow")()
			g.Expect(first.Statuses).To(HaveKeyWithValue("0", tkestackv1.InstanceRunning))
			g.Expect(first.ReadyReplicas).To(BeEquivalentTo(1))
		}).Should(Succeed())
		Expect(readAt).To(BeTemporally("<", availableAt), "the test machine is too slow to see the window before the pod counts as available")
		Expect(first.AvailableReplicas).To(BeZero(), "available %v before minReadySeconds elapsed", time.Until(availableAt))
		if wait := time.Until(availableAt) - 500*time.Millisecond; wait > 0 {
			Consistently(func() int32 { return status(ns, "slow")().AvailableReplicas }, wait, "100ms").Should(BeZero())
		}

		By("counting it available once minReadySeconds elapsed, without any further event")
		Eventually(func() int32 { return status(ns, "slow")().AvailableReplicas }, 15*time.Second).Should(BeEquivalentTo(1))
		Expect(time.Now()).To(BeTemporally(">=", availableAt))
		Expect(pods(ns)["slow-0"].ResourceVersion).To(Equal(pod.ResourceVersion), "the pod changed: a pod event could have caused the pass")
	})

	It("force-deletes a terminating pod on a lost node and recreates the instance when forceDeletePod is set", func() {
		ns := newNamespace()
		app := testutil.MakeTApp("lost", ns).Replicas(2).Template(testutil.PodTemplate(map[string]string{"app": "lost"}, "nginx:1.7.9")).
			ForceDeletePod(true).Obj()
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(podNames(ns)).Should(Equal([]string{"lost-0", "lost-1"}))
		nodeA, nodeB := ns+"-a", ns+"-b"
		tappNode(ctx, nodeA, corev1.ConditionTrue)
		tappNode(ctx, nodeB, corev1.ConditionTrue)
		bindPod(ctx, ns, "lost-0", nodeA)
		bindPod(ctx, ns, "lost-1", nodeB)
		running(ns, "lost", "0", "1")

		By("leaving a terminating pod on a Ready node alone")
		old0 := pods(ns)["lost-0"]
		Expect(old0.Spec.NodeName).To(Equal(nodeA))
		Expect(k8sClient.Delete(ctx, old0)).To(Succeed()) // bound and running: it stays Terminating (no kubelet)
		Eventually(instanceStatus(ns, "lost", "0")).Should(Equal(tkestackv1.InstanceKilling))
		Consistently(podUID(ns, "lost-0"), "2s", "200ms").Should(Equal(old0.UID))

		By("force-deleting it once its node's Ready condition turns Unknown, then recreating the instance")
		setNodeReady(ctx, nodeA, corev1.ConditionUnknown)
		Eventually(podUID(ns, "lost-0")).ShouldNot(Or(Equal(old0.UID), BeEmpty()))
		Expect(pods(ns)["lost-0"].DeletionTimestamp).To(BeNil())
		Eventually(eventNotes(ns, tkestackv1.ReasonSuccessfulDelete)).Should(ContainElement(
			"Deleted pod lost-0 with grace period 0: its node " + nodeA + " is lost"))

		By("force-deleting a terminating pod once its node is deleted")
		old1 := pods(ns)["lost-1"]
		Expect(k8sClient.Delete(ctx, old1)).To(Succeed())
		Eventually(instanceStatus(ns, "lost", "1")).Should(Equal(tkestackv1.InstanceKilling))
		Consistently(podUID(ns, "lost-1"), "1s", "200ms").Should(Equal(old1.UID))
		Expect(k8sClient.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeB}})).To(Succeed())
		Eventually(podUID(ns, "lost-1")).ShouldNot(Or(Equal(old1.UID), BeEmpty()))
		Eventually(eventNotes(ns, tkestackv1.ReasonSuccessfulDelete)).Should(ContainElement(
			"Deleted pod lost-1 with grace period 0: its node " + nodeB + " is lost"))
		running(ns, "lost", "0", "1")
	})

	It("leaves a terminating pod on a lost node Terminating when forceDeletePod is not set", func() {
		ns := newNamespace()
		app := testutil.MakeTApp("fenced", ns).Replicas(1).Template(testutil.PodTemplate(map[string]string{"app": "fenced"}, "nginx:1.7.9")).Obj()
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(podNames(ns)).Should(Equal([]string{"fenced-0"}))
		node := ns + "-node"
		tappNode(ctx, node, corev1.ConditionTrue)
		bindPod(ctx, ns, "fenced-0", node)
		running(ns, "fenced", "0")

		By("losing the node and deleting its pod, as taint-based eviction would")
		setNodeReady(ctx, node, corev1.ConditionFalse)
		old := pods(ns)["fenced-0"]
		Expect(k8sClient.Delete(ctx, old)).To(Succeed())
		Eventually(instanceStatus(ns, "fenced", "0")).Should(Equal(tkestackv1.InstanceKilling))
		Consistently(func(g Gomega) {
			pod, ok := pods(ns)["fenced-0"]
			g.Expect(ok).To(BeTrue())
			g.Expect(pod.UID).To(Equal(old.UID))
			g.Expect(pod.DeletionTimestamp).NotTo(BeNil())
		}, "3s", "200ms").Should(Succeed())
		Expect(eventNotes(ns, tkestackv1.ReasonSuccessfulDelete)()).To(BeEmpty())

		By("force-deleting it and recreating the instance as soon as forceDeletePod is set")
		updateTApp(ns, "fenced", func(a *tkestackv1.TApp) { a.Spec.ForceDeletePod = true })
		Eventually(podUID(ns, "fenced-0")).ShouldNot(Or(Equal(old.UID), BeEmpty()))
		Eventually(eventNotes(ns, tkestackv1.ReasonSuccessfulDelete)).Should(ConsistOf(
			"Deleted pod fenced-0 with grace period 0: its node " + node + " is lost"))
		running(ns, "fenced", "0")
	})

	It("takes a create refused in a terminating namespace for no failure", func() {
		ns := newNamespace()
		app := testutil.MakeTApp("doomed", ns).Replicas(1).Template(testutil.PodTemplate(map[string]string{"app": "doomed"}, "nginx:1.7.9")).Obj()
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		running(ns, "doomed", "0")
		Eventually(condition(ns, "doomed", tkestackv1.TAppReplicaFailure)).Should(Equal("False/NoFailures"))
		errorsBefore := reconcileErrors(tapp.ControllerName)

		By("deleting the namespace, whose pods go before the TApp")
		// envtest runs no namespace controller: the namespace stays Terminating, and the test removes the pod.
		Expect(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(k8sClient.Delete(ctx, pods(ns)["doomed-0"])).To(Succeed()) // unscheduled: gone at once
		Eventually(instanceStatus(ns, "doomed", "0")).Should(Equal(tkestackv1.InstanceNotCreated))
		Consistently(func(g Gomega) {
			g.Expect(podNames(ns)()).To(BeEmpty())
			g.Expect(condition(ns, "doomed", tkestackv1.TAppReplicaFailure)()).To(Equal("False/NoFailures"))
			g.Expect(reconcileErrors(tapp.ControllerName)).To(Equal(errorsBefore))
		}, "3s", "200ms").Should(Succeed())
	})

	It("rejects bad input with field paths", func() {
		ns := newNamespace()
		base := func() *testutil.TAppWrapper {
			return testutil.MakeTApp("bad", ns).Replicas(2).Template(testutil.PodTemplate(map[string]string{"app": "bad"}, "nginx"))
		}
		cases := map[string]struct {
			app  *tkestackv1.TApp
			path string
		}{
			"a zero rolling budget":    {base().MaxUnavailable(intstr.FromString("0%")).Obj(), "spec.updateStrategy.maxUnavailable"},
			"a force budget over 100%": {base().ForceMaxUnavailable(intstr.FromString("101%")).Obj(), "spec.updateStrategy.forceUpdate.maxUnavailable"},
			"a non-canonical id":       {base().InstanceTemplate("01", "default").Obj(), "spec.templates[01]"},
			"an unresolvable template": {base().InstanceTemplate("1", "missing").Obj(), "spec.templates[1]"},
			"a selector matching no template": {
				base().Selector(map[string]string{"app": "other"}).Obj(), "spec.template.metadata.labels"},
			"more instances than a TApp can hold": {base().Replicas(tkestackv1.MaxReplicas + 1).Obj(), "spec.replicas"},
		}
		for name, tc := range cases {
			err := k8sClient.Create(ctx, tc.app)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", name, err)
			Expect(causeFields(err)).To(ContainElement(HavePrefix(tc.path)), name)
		}

		By("keeping the selector immutable")
		Expect(k8sClient.Create(ctx, base().Obj())).To(Succeed())
		app := getTApp(ns, "bad")
		app.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bad", "x": "y"}}
		err := k8sClient.Update(ctx, app)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ContainElement("spec.selector"))

		By("bounding replicas through the scale subresource too")
		Eventually(func() error { // a conflict (the controller writes status) is retried; Invalid is the answer
			scale := &autoscalingv1.Scale{}
			if err := k8sClient.SubResource("scale").Get(ctx, getTApp(ns, "bad"), scale); err != nil {
				return err
			}
			scale.Spec.Replicas = tkestackv1.MaxReplicas + 1
			return k8sClient.SubResource("scale").Update(ctx, getTApp(ns, "bad"), client.WithSubResourceBody(scale))
		}).Should(Satisfy(apierrors.IsInvalid))
	})
})
