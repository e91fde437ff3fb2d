package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/localcluster"
)

// The TApp specs run the tutorial's operations, in its order, on the local cluster with the real manager, and
// then the behaviours the tutorial does not show: in-place update vs recreate, rolling and force budgets, serviceName,
// autoDeleteUnusedTemplate, HPA, PVCs, a lost node and batch completion. Each spec has its own namespace.
var _ = Describe("TApp", func() {
	It("walks through the tutorial: create, different templates, update a specified pod, rolling update, kill and restart, scale, delete", func() {
		ns := newNamespace("tapp-tutorial")
		const name = "example-tapp"
		pod := func(id string) string { return name + "-" + id }

		By("2.1 creating the app with one template: three pods Running and Ready on kwok nodes")
		applyTutorial(ns, "01-create-same-template.yaml")
		pods := eventuallyRunning(ns, name, sameImages("nginx:1.7.9", "0", "1", "2"), nil)
		created := uids(pods)
		t := getTApp(Default, ns, name)
		Expect(t.Spec.Selector).NotTo(BeNil())
		Expect(t.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app": name}), "selector defaulted from the template labels")
		Expect(t.Spec.DefaultTemplateName).To(Equal(tkestackv1.DefaultTemplateName))
		Expect(t.Status.ScaleLabelSelector).To(Equal("app=" + name))
		Eventually(func(g Gomega) {
			t := getTApp(g, ns, name)
			g.Expect(conditionOf(t, tkestackv1.TAppAvailable)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(conditionOf(t, tkestackv1.TAppProgressing)).To(HaveField("Status", metav1.ConditionFalse))
			g.Expect(conditionOf(t, tkestackv1.TAppReplicaFailure)).To(HaveField("Status", metav1.ConditionFalse))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
		for id, p := range pods {
			Expect(p.Labels).To(HaveKeyWithValue(tkestackv1.TAppInstanceKey, id))
			Expect(p.Labels).To(HaveKeyWithValue("app", name))
			Expect(p.Labels[tkestackv1.TAppHashKey]).To(HavePrefix("v1-"))
			Expect(p.Labels[tkestackv1.TAppUniqHashKey]).To(HavePrefix("v1-"))
			Expect(p.Spec.ReadinessGates).To(ContainElement(corev1.PodReadinessGate{ConditionType: tkestackv1.InPlaceUpdateReady}))
			Expect(metav1.GetControllerOf(p)).To(HaveField("UID", t.UID))
			cs := containerStatus(p, tappContainer)
			Expect(cs.ImageID).NotTo(BeEmpty(), "the kwok kubelet reports an imageID")
			Expect(cs.RestartCount).To(BeZero())
		}
		out := mustKubectl("get", "tapp", name, "--namespace="+ns)
		Expect(out).To(ContainSubstring("DESIRED"))
		Expect(out).To(MatchRegexp(`example-tapp\s+3\s+3\s+3\s+3\s+Running`), "printer columns DESIRED CURRENT READY AVAILABLE STATUS")

		By("2.1 pointing instance 1 and the default at identical templates: no pod changes")
		applyTutorial(ns, "02-create-different-templates.yaml")
		Eventually(func(g Gomega) {
			t := getTApp(g, ns, name)
			g.Expect(t.Spec.DefaultTemplateName).To(Equal("test"))
			g.Expect(t.Status.ObservedGeneration).To(Equal(t.Generation))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
		Consistently(func(g Gomega) {
			pods := expectInstancesRunning(g, ns, name, sameImages("nginx:1.7.9", "0", "1", "2"), nil)
			g.Expect(uids(pods)).To(Equal(created))
			g.Expect(restarts(pods)).To(Equal(map[string]int32{"0": 0, "1": 0, "2": 0}))
		}).WithTimeout(3 * time.Second).WithPolling(tappPoll).Should(Succeed())

		By("2.3 updating the default template's image: instances 0 and 2 in place, one at a time, lowest id first")
		tr := trackAvailability(ns, pod("0"), pod("1"), pod("2"))
		applyTutorial(ns, "03-update-specified-pod.yaml")
		pods = eventuallyRunning(ns, name, map[string]string{"0": "nginx:latest", "1": "nginx:1.7.9", "2": "nginx:latest"}, nil)
		tr.Stop()
		maxUnavailable, starts := tr.Result()
		Expect(maxUnavailable).To(Equal(1), "maxUnavailable 1 (the default)")
		Expect(starts).To(Equal([]string{pod("0"), pod("2")}))
		Expect(eventReasons(tappEvents(Default, ns, name))).NotTo(ContainElement(tkestackv1.ReasonFailedUpdate),
			"no in-place patch failed, so no gate went False a second time")
		Expect(uids(pods)).To(Equal(created), "updated in place: same pods")
		Expect(restarts(pods)).To(Equal(map[string]int32{"0": 1, "1": 0, "2": 1}))
		for _, id := range []string{"0", "2"} {
			Expect(containerStatus(pods[id], tappContainer).ImageID).NotTo(Equal(containerStatus(pods["1"], tappContainer).ImageID))
			Expect(pods[id].Annotations).To(HaveKeyWithValue(tkestackv1.InPlaceUpdateStateKey, tkestackv1.InPlaceUpdateStateValue))
		}
		Expect(pods["1"].Annotations).NotTo(HaveKey(tkestackv1.InPlaceUpdateStateKey))
		Expect(getTApp(Default, ns, name).Spec.DefaultTemplateName).To(Equal(tkestackv1.DefaultTemplateName),
			"apply removed defaultTemplateName; the webhook defaults it again")

		By("2.3 rolling update to template test2: instance 2 in place")
		tr = trackAvailability(ns, pod("0"), pod("1"), pod("2"))
		applyTutorial(ns, "04-rolling-update.yaml")
		pods = eventuallyRunning(ns, name, map[string]string{"0": "nginx:latest", "1": "nginx:1.7.9", "2": "nginx:1.7.9"}, nil)
		tr.Stop()
		maxUnavailable, starts = tr.Result()
		Expect(maxUnavailable).To(Equal(1))
		Expect(starts).To(Equal([]string{pod("2")}))
		Expect(uids(pods)).To(Equal(created))
		Expect(restarts(pods)).To(Equal(map[string]int32{"0": 1, "1": 0, "2": 2}))

		By("2.4 killing instance 1: its pod is deleted, its status is Killed and it still counts")
		applyTutorial(ns, "05-kill-pod.yaml")
		pods = eventuallyRunning(ns, name, map[string]string{"0": "nginx:latest", "2": "nginx:latest"},
			map[string]tkestackv1.InstanceStatus{"1": tkestackv1.InstanceKilled})
		Expect(restarts(pods)).To(Equal(map[string]int32{"0": 1, "2": 3}), "instance 2 went back to the default template in place")
		Expect(getTApp(Default, ns, name).Status.Replicas).To(BeEquivalentTo(3))

		By("2.4 running instance 1 again by deleting spec.statuses")
		mustKubectl("patch", "tapp", name, "--namespace="+ns, "--type=json", `-p=[{"op":"remove","path":"/spec/statuses"}]`)
		pods = eventuallyRunning(ns, name, map[string]string{"0": "nginx:latest", "1": "nginx:1.7.9", "2": "nginx:latest"}, nil)
		Expect(pods["1"].UID).NotTo(Equal(created["1"]), "a new pod for instance 1")
		Expect(pods["0"].UID).To(Equal(created["0"]))

		By("2.5 scaling up with kubectl scale: the new instances use the default template")
		mustKubectl("scale", "tapp/"+name, "--namespace="+ns, "--replicas=5")
		eventuallyRunning(ns, name, map[string]string{"0": "nginx:latest", "1": "nginx:1.7.9", "2": "nginx:latest",
			"3": "nginx:latest", "4": "nginx:latest"}, nil)
		scale := &autoscalingv1.Scale{}
		Expect(k8sClient.SubResource("scale").Get(suiteCtx, getTApp(Default, ns, name), scale)).To(Succeed())
		Expect(scale.Spec.Replicas).To(BeEquivalentTo(5))
		Expect(scale.Status.Replicas).To(BeEquivalentTo(5))
		Expect(scale.Status.Selector).To(Equal("app=" + name))

		By("2.5 scaling down with kubectl scale --resource-version: a stale version is refused, the current one works")
		out, err := kubectl("scale", "tapp/"+name, "--namespace="+ns, "--replicas=3", "--resource-version=1")
		Expect(err).To(HaveOccurred(), "a stale resourceVersion precondition must fail")
		Expect(out).To(ContainSubstring("Expected resource version to be 1"))
		Eventually(func() error {
			rv := getTApp(Default, ns, name).ResourceVersion
			_, err := kubectl("scale", "tapp/"+name, "--namespace="+ns, "--replicas=3", "--resource-version="+rv)
			return err
		}).WithTimeout(tappTimeout).WithPolling(time.Second).Should(Succeed())
		eventuallyRunning(ns, name, map[string]string{"0": "nginx:latest", "1": "nginx:1.7.9", "2": "nginx:latest"}, nil)

		By("2.2 describing the app")
		out = mustKubectl("describe", "tapp", name, "--namespace="+ns)
		Expect(out).To(ContainSubstring("App Status:"))

		By("2.6 deleting the app: the garbage collector removes its pods")
		mustKubectl("delete", "tapp", name, "--namespace="+ns)
		Eventually(func(g Gomega) {
			var list corev1.PodList
			g.Expect(k8sClient.List(suiteCtx, &list, client.InNamespace(ns), client.MatchingLabels{"app": name})).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
	})

	It("updates an image in place as a kubelet reports it, and recreates pods when anything else changes", func() {
		ns := newNamespace("tapp-inplace")
		const name = "web"
		v1, v2 := "registry.example/drover-e2e/web:v1", "registry.example/drover-e2e/web:v2"
		createTApp(newTApp(ns, name, 2, v1))
		before := eventuallyRunning(ns, name, sameImages(v1, "0", "1"), nil)

		By("changing the image: gate False, patch, the kwok kubelet reports the new image, gate True again")
		tr := trackAvailability(ns, name+"-0", name+"-1")
		updateTApp(ns, name, func(t *tkestackv1.TApp) { t.Spec.Template.Spec.Containers[0].Image = v2 })
		after := eventuallyRunning(ns, name, sameImages(v2, "0", "1"), nil)
		tr.Stop()
		maxUnavailable, starts := tr.Result()
		Expect(maxUnavailable).To(Equal(1))
		Expect(starts).To(Equal([]string{name + "-0", name + "-1"}))
		for _, id := range []string{"0", "1"} {
			old, cur := containerStatus(before[id], tappContainer), containerStatus(after[id], tappContainer)
			Expect(after[id].UID).To(Equal(before[id].UID), "same pod")
			Expect(cur.RestartCount).To(Equal(old.RestartCount + 1))
			Expect(cur.ImageID).NotTo(BeEmpty())
			Expect(cur.ImageID).NotTo(Equal(old.ImageID))
			Expect(cur.ContainerID).NotTo(Equal(old.ContainerID))
			Expect(after[id].Annotations).To(HaveKeyWithValue(tkestackv1.InPlaceUpdateStateKey, tkestackv1.InPlaceUpdateStateValue))
			Expect(after[id].Annotations).To(HaveKey(tkestackv1.InPlaceUpdateRecordKey))
			Expect(podConditionStatus(after[id], tkestackv1.InPlaceUpdateReady)).To(Equal(corev1.ConditionTrue))
		}
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(tappEvents(g, ns, name))).To(ContainElements(
				tkestackv1.ReasonSuccessfulCreate, tkestackv1.ReasonSuccessfulUpdate, tkestackv1.ReasonInPlaceUpdateCompleted))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())

		By("adding an environment variable: the pods are recreated, one at a time")
		tr = trackAvailability(ns, name+"-0", name+"-1")
		updateTApp(ns, name, func(t *tkestackv1.TApp) {
			t.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "blue"}}
		})
		Eventually(func(g Gomega) {
			pods := expectInstancesRunning(g, ns, name, sameImages(v2, "0", "1"), nil)
			for id, p := range pods {
				g.Expect(p.UID).NotTo(Equal(after[id].UID), "pod %s is a new pod", p.Name)
				g.Expect(p.Spec.Containers[0].Env).To(ConsistOf(corev1.EnvVar{Name: "MODE", Value: "blue"}))
				g.Expect(containerStatus(p, tappContainer).RestartCount).To(BeZero())
			}
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
		tr.Stop()
		maxUnavailable, starts = tr.Result()
		Expect(maxUnavailable).To(Equal(1), "a recreate consumes the rolling budget too")
		Expect(starts).To(Equal([]string{name + "-0", name + "-1"}))
	})

	It("rolls a template change over the default instances within maxUnavailable, lowest ids first", func() {
		ns := newNamespace("tapp-rolling")
		const name = "roll"
		v1, v2 := "registry.example/drover-e2e/roll:v1", "registry.example/drover-e2e/roll:v2"
		t := newTApp(ns, name, 4, v1)
		t.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("50%"))
		createTApp(t)
		eventuallyRunning(ns, name, sameImages(v1, "0", "1", "2", "3"), nil)

		tr := trackAvailability(ns, name+"-0", name+"-1", name+"-2", name+"-3")
		updateTApp(ns, name, func(t *tkestackv1.TApp) { t.Spec.Template.Spec.Containers[0].Image = v2 })
		eventuallyRunning(ns, name, sameImages(v2, "0", "1", "2", "3"), nil)
		tr.Stop()
		maxUnavailable, starts := tr.Result()
		Expect(maxUnavailable).To(Equal(2), "50% of 4: two at a time, never more")
		Expect(starts).To(HaveLen(4))
		Expect(starts[:2]).To(ConsistOf(name+"-0", name+"-1"), "lowest ids first")
		Expect(starts[2:]).To(ConsistOf(name+"-2", name+"-3"))
		Eventually(func(g Gomega) {
			g.Expect(conditionOf(getTApp(g, ns, name), tkestackv1.TAppProgressing)).To(HaveField("Status", metav1.ConditionFalse))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
	})

	It("force-updates the instances of a changed pool template all at once, and only them", func() {
		ns := newNamespace("tapp-force")
		const name = "canary"
		v1, c1, c2 := "registry.example/drover-e2e/app:v1", "registry.example/drover-e2e/app:c1", "registry.example/drover-e2e/app:c2"
		t := newTApp(ns, name, 3, v1)
		t.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"canary": tappPodTemplate(name, c1)}
		t.Spec.Templates = map[string]string{"1": "canary", "2": "canary"}
		createTApp(t)
		before := eventuallyRunning(ns, name, map[string]string{"0": v1, "1": c1, "2": c1}, nil)

		tr := trackAvailability(ns, name+"-0", name+"-1", name+"-2")
		updateTApp(ns, name, func(t *tkestackv1.TApp) {
			tpl := t.Spec.TemplatePool["canary"]
			tpl.Spec.Containers[0].Image = c2
			t.Spec.TemplatePool["canary"] = tpl
		})
		after := eventuallyRunning(ns, name, map[string]string{"0": v1, "1": c2, "2": c2}, nil)
		tr.Stop()
		maxUnavailable, starts := tr.Result()
		Expect(maxUnavailable).To(Equal(2), "force budget 100%: both pool instances at once, although maxUnavailable is 1")
		Expect(starts).To(ConsistOf(name+"-1", name+"-2"), "instance 0 is never touched")
		Expect(uids(after)).To(Equal(uids(before)))
		Expect(restarts(after)).To(Equal(map[string]int32{"0": 0, "1": 1, "2": 1}))
	})

	It("gives instances stable hostnames under serviceName (tutorial 2.7)", func() {
		ns := newNamespace("tapp-service")
		const name = "example-tapp"
		applyTutorial(ns, "06-service-name.yaml")
		pods := eventuallyRunning(ns, name, sameImages("nginx:1.7.9", "0", "1", "2"), nil)
		for id, p := range pods {
			Expect(p.Spec.Hostname).To(Equal(name + "-" + id))
			Expect(p.Spec.Subdomain).To(Equal("nginx"))
		}
		By("the EndpointSlice controller publishing each Ready pod under its hostname")
		Eventually(func(g Gomega) {
			var eps discoveryv1.EndpointSliceList
			g.Expect(k8sClient.List(suiteCtx, &eps, client.InNamespace(ns),
				client.MatchingLabels{discoveryv1.LabelServiceName: "nginx"})).To(Succeed())
			var hosts []string
			for _, s := range eps.Items {
				for _, e := range s.Endpoints {
					g.Expect(e.Conditions.Ready).To(HaveValue(BeTrue()), "endpoint %v", e.Hostname)
					hosts = append(hosts, ptr.Deref(e.Hostname, ""))
				}
			}
			g.Expect(hosts).To(ConsistOf(name+"-0", name+"-1", name+"-2"))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
	})

	It("deletes unused pool templates (tutorial 2.8)", func() {
		ns := newNamespace("tapp-prune")
		const name = "example-tapp"
		applyTutorial(ns, "07-auto-delete-unused-template.yaml")
		Eventually(func(g Gomega) {
			g.Expect(sortedKeys(getTApp(g, ns, name).Spec.TemplatePool)).To(Equal([]string{"test1", "test3", "test4"}))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
		eventuallyRunning(ns, name, map[string]string{"0": "nginx:1.7.7", "1": "nginx:1.7.9", "2": "nginx:1.7.7"}, nil)
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(tappEvents(g, ns, name))).To(ContainElement(tkestackv1.ReasonTemplatesPruned))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
	})

	// Without a metrics server an HPA cannot compute a metric, but kube-controller-manager's HPA controller
	// enforces minReplicas and maxReplicas through the scale subresource before it looks at metrics. So this
	// asserts: the HPA controller reads the TApp's scale (AbleToScale True), drives spec.replicas to its bounds,
	// and reports (honestly) that it cannot get the metric (ScalingActive False).
	It("is scaled by a HorizontalPodAutoscaler through the scale subresource", func() {
		ns := newNamespace("tapp-hpa")
		const name = "autoscaled"
		image := "registry.example/drover-e2e/app:v1"
		t := newTApp(ns, name, 2, image)
		t.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		createTApp(t)
		eventuallyRunning(ns, name, sameImages(image, "0", "1"), nil)

		By("an HPA with minReplicas 3 scaling the TApp up from 2")
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: tkestackv1.GroupVersion.String(), Kind: "TApp", Name: name},
				MinReplicas:    ptr.To[int32](3),
				MaxReplicas:    5,
				Metrics: []autoscalingv2.MetricSpec{{
					Type: autoscalingv2.ResourceMetricSourceType,
					Resource: &autoscalingv2.ResourceMetricSource{
						Name:   corev1.ResourceCPU,
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
					},
				}},
			},
		}
		Expect(k8sClient.Create(suiteCtx, hpa)).To(Succeed())
		eventuallyRunning(ns, name, sameImages(image, "0", "1", "2"), nil)
		Expect(getTApp(Default, ns, name).Spec.Replicas).To(BeEquivalentTo(3))
		Eventually(func(g Gomega) {
			var got autoscalingv2.HorizontalPodAutoscaler
			g.Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(hpa), &got)).To(Succeed())
			g.Expect(got.Status.CurrentReplicas).To(BeEquivalentTo(3))
			conds := map[autoscalingv2.HorizontalPodAutoscalerConditionType]autoscalingv2.HorizontalPodAutoscalerCondition{}
			for _, c := range got.Status.Conditions {
				conds[c.Type] = c
			}
			g.Expect(conds).To(HaveKey(autoscalingv2.AbleToScale))
			g.Expect(conds[autoscalingv2.AbleToScale].Status).To(Equal(corev1.ConditionTrue), "the HPA read the TApp's scale: %v", conds)
			g.Expect(conds).To(HaveKey(autoscalingv2.ScalingActive))
			g.Expect(conds[autoscalingv2.ScalingActive].Status).To(Equal(corev1.ConditionFalse), "no metrics server here: %v", conds)
			GinkgoWriter.Printf("HPA conditions: %v\n", got.Status.Conditions)
		}).WithTimeout(tappTimeout).WithPolling(time.Second).Should(Succeed())

		By("lowering maxReplicas to 2: the HPA scales the TApp down")
		Expect(retryUpdate(hpa, func() { hpa.Spec.MinReplicas = ptr.To[int32](1); hpa.Spec.MaxReplicas = 2 })).To(Succeed())
		eventuallyRunning(ns, name, sameImages(image, "0", "1"), nil)
		Expect(getTApp(Default, ns, name).Spec.Replicas).To(BeEquivalentTo(2))
	})

	// kube-controller-manager runs no volume provisioner here, so claims stay Pending and pods that use them
	// cannot be scheduled until a PersistentVolume exists. The first spec asserts the PVC objects (names,
	// labels, owner references, pod volumes) and then binds them to pre-created PersistentVolumes so the pods run;
	// the second asserts both retention settings on the PVC objects alone.
	It("creates <claim>-<tapp>-<id> PVCs from volumeClaimTemplates; with volumes the pods run", func() {
		ns := newNamespace("tapp-pvc")
		const name = "db"
		image := "registry.example/drover-e2e/db:v1"
		class := "e2e-" + ns
		t := newTApp(ns, name, 2, image)
		t.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		t.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimTemplate("data", class)}
		createTApp(t)
		tappUID := getTApp(Default, ns, name).UID

		By("creating one PVC per instance before its pod; the pods wait for their claims")
		Eventually(func(g Gomega) {
			for _, id := range []string{"0", "1"} {
				var pvc corev1.PersistentVolumeClaim
				g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "data-" + name + "-" + id}, &pvc)).To(Succeed())
				g.Expect(pvc.Labels).To(Equal(map[string]string{"tier": "storage", "app": name}), "claim labels + selector")
				g.Expect(metav1.GetControllerOf(&pvc)).To(HaveField("UID", tappUID), "whenDeleted Delete: owned by the TApp")
				g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimPending), "no provisioner")
			}
			pods := tappPods(g, ns, name)
			g.Expect(pods).To(HaveLen(2))
			for id, p := range pods {
				g.Expect(p.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.PersistentVolumeClaim.ClaimName", "data-"+name+"-"+id)))
				g.Expect(p.Status.Phase).To(Equal(corev1.PodPending))
				g.Expect(podConditionStatus(p, corev1.PodScheduled)).To(Equal(corev1.ConditionFalse), "unschedulable: unbound claim")
			}
			g.Expect(getTApp(g, ns, name).Status.Statuses).To(Equal(map[string]tkestackv1.InstanceStatus{
				"0": tkestackv1.InstancePending, "1": tkestackv1.InstancePending}))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())

		By("binding the claims to PersistentVolumes: the pods are scheduled and run")
		for _, id := range []string{"0", "1"} {
			createBoundPV(fmt.Sprintf("%s-%s", ns, id), class, ns, "data-"+name+"-"+id)
		}
		eventuallyRunning(ns, name, sameImages(image, "0", "1"), nil)

		By("scaling down: the PVC of instance 1 stays (whenScaled Retain)")
		updateTApp(ns, name, func(t *tkestackv1.TApp) { t.Spec.Replicas = 1 })
		eventuallyRunning(ns, name, sameImages(image, "0"), nil)
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "data-" + name + "-1"}, &corev1.PersistentVolumeClaim{})).To(Succeed())
		}).WithTimeout(3 * time.Second).WithPolling(tappPoll).Should(Succeed())

		By("deleting the TApp: its PVCs are garbage-collected (whenDeleted Delete)")
		Expect(k8sClient.Delete(suiteCtx, getTApp(Default, ns, name))).To(Succeed())
		Eventually(func(g Gomega) {
			var pvcs corev1.PersistentVolumeClaimList
			g.Expect(k8sClient.List(suiteCtx, &pvcs, client.InNamespace(ns))).To(Succeed())
			g.Expect(pvcs.Items).To(BeEmpty())
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
	})

	It("honours persistentVolumeClaimRetentionPolicy whenScaled Delete and whenDeleted Retain", func() {
		ns := newNamespace("tapp-pvc-retain")
		const name = "cache"
		t := newTApp(ns, name, 2, "registry.example/drover-e2e/cache:v1")
		t.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		t.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimTemplate("data", "e2e-"+ns)}
		t.Spec.PersistentVolumeClaimRetentionPolicy = &tkestackv1.PersistentVolumeClaimRetentionPolicy{
			WhenDeleted: tkestackv1.RetainPersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  tkestackv1.DeletePersistentVolumeClaimRetentionPolicyType,
		}
		createTApp(t)
		claim := func(id string) client.ObjectKey {
			return client.ObjectKey{Namespace: ns, Name: "data-" + name + "-" + id}
		}
		Eventually(func(g Gomega) {
			for _, id := range []string{"0", "1"} {
				var pvc corev1.PersistentVolumeClaim
				g.Expect(k8sClient.Get(suiteCtx, claim(id), &pvc)).To(Succeed())
				g.Expect(metav1.GetControllerOf(&pvc)).To(BeNil(), "whenDeleted Retain: no owner reference")
			}
			g.Expect(tappPods(g, ns, name)).To(HaveLen(2))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())

		By("scaling down: instance 1's PVC is deleted once its pod is gone")
		updateTApp(ns, name, func(t *tkestackv1.TApp) { t.Spec.Replicas = 1 })
		Eventually(func(g Gomega) {
			err := k8sClient.Get(suiteCtx, claim("1"), &corev1.PersistentVolumeClaim{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "PVC of instance 1: %v", err)
			g.Expect(tappPods(g, ns, name)).To(HaveLen(1))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())

		By("deleting the TApp: instance 0's PVC stays")
		Expect(k8sClient.Delete(suiteCtx, getTApp(Default, ns, name))).To(Succeed())
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(k8sClient.List(suiteCtx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
		Consistently(func(g Gomega) {
			var pvc corev1.PersistentVolumeClaim
			g.Expect(k8sClient.Get(suiteCtx, claim("0"), &pvc)).To(Succeed())
			g.Expect(pvc.DeletionTimestamp).To(BeNil())
		}).WithTimeout(5 * time.Second).WithPolling(tappPoll).Should(Succeed())
	})

	// A lost node: kwok stops playing the node's kubelet (its pods are disregarded, its Lease is taken over),
	// kube-controller-manager marks the node not Ready, and the user deletes the pods on it. Without forceDeletePod the pod stays Terminating (fencing);
	// with it drover deletes it with grace period 0 and the instance starts again on a healthy node.
	It("replaces the pods of a lost node only with forceDeletePod", func() {
		ns := newNamespace("tapp-lost")
		suffix := utilrand.String(5)
		const nodeLabel = "e2e.drover.dev/tapp-node"
		lost := newKwokNode("tapp-lost-"+suffix, map[string]string{nodeLabel: suffix})
		image := "registry.example/drover-e2e/app:v1"
		for _, app := range []struct {
			name  string
			force bool
		}{{"fenced", false}, {"forced", true}} {
			t := newTApp(ns, app.name, 1, image)
			t.Spec.ForceDeletePod = app.force
			t.Spec.Template.Spec.NodeSelector = map[string]string{nodeLabel: suffix}
			createTApp(t)
		}
		fenced := eventuallyRunning(ns, "fenced", sameImages(image, "0"), nil)["0"]
		forced := eventuallyRunning(ns, "forced", sameImages(image, "0"), nil)["0"]
		Expect(fenced.Spec.NodeName).To(Equal(lost.Name))
		Expect(forced.Spec.NodeName).To(Equal(lost.Name))

		By("losing the node: kwok stops heartbeating it, kube-controller-manager marks it not Ready")
		loseNode(lost.Name)
		spare := newKwokNode("tapp-spare-"+suffix, map[string]string{nodeLabel: suffix})

		By("deleting both pods as a user (or the taint manager) would")
		for _, p := range []*corev1.Pod{fenced, forced} {
			err := k8sClient.Delete(suiteCtx, p, client.Preconditions{UID: &p.UID})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				Expect(err).NotTo(HaveOccurred())
			}
		}

		By("forceDeletePod: the pod is deleted with grace period 0 and instance 0 runs again on the spare node")
		Eventually(func(g Gomega) {
			pods := expectInstancesRunning(g, ns, "forced", sameImages(image, "0"), nil)
			g.Expect(pods["0"].UID).NotTo(Equal(forced.UID))
			g.Expect(pods["0"].Spec.NodeName).To(Equal(spare.Name))
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())
		Eventually(func(g Gomega) {
			var notes []string
			for _, e := range tappEvents(g, ns, "forced") {
				notes = append(notes, e.Reason+": "+e.Note)
			}
			g.Expect(notes).To(ContainElement(And(HavePrefix(tkestackv1.ReasonSuccessfulDelete), ContainSubstring("grace period 0"))))
		}).WithTimeout(time.Minute).WithPolling(tappPoll).Should(Succeed())

		By("no forceDeletePod: the pod stays Terminating on the lost node and is not replaced")
		Consistently(func(g Gomega) {
			pods := tappPods(g, ns, "fenced")
			g.Expect(pods).To(HaveKey("0"))
			g.Expect(pods["0"].UID).To(Equal(fenced.UID))
			g.Expect(pods["0"].DeletionTimestamp).NotTo(BeNil())
			g.Expect(podConditionStatus(pods["0"], corev1.PodReady)).NotTo(Equal(corev1.ConditionTrue),
				"kube-controller-manager marked it not Ready; no kubelet says otherwise")
			g.Expect(getTApp(g, ns, "fenced").Status.Statuses).To(Equal(map[string]tkestackv1.InstanceStatus{"0": tkestackv1.InstanceKilling}))
		}).WithTimeout(10 * time.Second).WithPolling(tappPoll).Should(Succeed())
	})

	// Batch mode: the drover-pod-exit kwok stage lets containers exit with the code of the pod annotation
	// kwok.drover.dev/exit-code after kwok.drover.dev/run-seconds.
	It("finishes batch instances: restartPolicy Never pods complete, statuses Succ/Failed, the app finishes", func() {
		ns := newNamespace("tapp-batch")
		image := "registry.example/drover-e2e/job:v1"
		batchTemplate := func(app string, policy corev1.RestartPolicy, exitCode string) corev1.PodTemplateSpec {
			tpl := tappPodTemplate(app, image)
			tpl.Annotations = map[string]string{
				localcluster.AnnotationKwokExitCode:   exitCode,
				localcluster.AnnotationKwokRunSeconds: "10",
			}
			tpl.Spec.RestartPolicy = policy
			return tpl
		}

		By("an app whose three instances all succeed: Running, then Succ; the pods are deleted once the app is finished")
		ok := newTApp(ns, "ok", 3, image)
		ok.Spec.Template = batchTemplate("ok", corev1.RestartPolicyNever, "0")
		createTApp(ok)
		By("an app with deletePodAfterAppFinish false whose instance 1 fails")
		mixed := newTApp(ns, "mixed", 3, image)
		mixed.Spec.Template = batchTemplate("mixed", corev1.RestartPolicyOnFailure, "0")
		mixed.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"fails": batchTemplate("mixed", corev1.RestartPolicyNever, "3")}
		mixed.Spec.Templates = map[string]string{"1": "fails"}
		mixed.Spec.DeletePodAfterAppFinish = ptr.To(false)
		createTApp(mixed)

		eventuallyRunning(ns, "ok", sameImages(image, "0", "1", "2"), nil)
		Eventually(func(g Gomega) {
			t := getTApp(g, ns, "ok")
			g.Expect(t.Status.Statuses).To(Equal(map[string]tkestackv1.InstanceStatus{
				"0": tkestackv1.InstanceSucc, "1": tkestackv1.InstanceSucc, "2": tkestackv1.InstanceSucc}))
			g.Expect(t.Status.AppStatus).To(Equal(tkestackv1.AppSucc))
			g.Expect(tappPods(g, ns, "ok")).To(BeEmpty(), "pods deleted after the app finished")
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())

		Eventually(func(g Gomega) {
			t := getTApp(g, ns, "mixed")
			g.Expect(t.Status.Statuses).To(Equal(map[string]tkestackv1.InstanceStatus{
				"0": tkestackv1.InstanceSucc, "1": tkestackv1.InstanceFailed, "2": tkestackv1.InstanceSucc}))
			g.Expect(t.Status.AppStatus).To(Equal(tkestackv1.AppFailed))
			g.Expect(tappPods(g, ns, "mixed")).To(BeEmpty(), "each finished pod deleted")
		}).WithTimeout(tappTimeout).WithPolling(tappPoll).Should(Succeed())

		By("the finished app stays finished")
		Consistently(func(g Gomega) {
			g.Expect(getTApp(g, ns, "ok").Status.AppStatus).To(Equal(tkestackv1.AppSucc))
			g.Expect(tappPods(g, ns, "ok")).To(BeEmpty())
		}).WithTimeout(3 * time.Second).WithPolling(tappPoll).Should(Succeed())
	})
})

// claimTemplate is a 1Gi ReadWriteOnce claim template of a storage class, labelled tier=storage.
func claimTemplate(name, class string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": "storage"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// createBoundPV creates a PersistentVolume pre-bound to a claim (kube-controller-manager's PV controller then
// binds the claim); the spec's cleanup deletes it.
func createBoundPV(name, class, ns, claim string) {
	GinkgoHelper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/drover-e2e/" + name}},
		},
	}
	Expect(k8sClient.Create(suiteCtx, pv)).To(Succeed())
	DeferCleanup(func() { deleteIgnoringNotFound(pv) })
}

// retryUpdate re-reads obj, applies change and updates it, retrying on conflicts.
func retryUpdate(obj client.Object, change func()) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return k8sClient.Update(suiteCtx, obj)
	})
}
