package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

// YurtAppDaemon and UnitedDaemonSet end to end (docs/yurtappdaemon.md): the real manager renders one
// child per selected NodePool; the real kube-controller-manager runs the Deployments and StatefulSets and
// garbage-collects; the real kube-scheduler places the pods; kwok runs them on fake nodes. Every scenario runs
// for both owner kinds. Each spec has its own namespace and its own pools (unique names, selected by a label
// value unique to the spec), so specs do not see each other's pools and the base pools are never selected.
var _ = Describe("YurtAppDaemon and UnitedDaemonSet", func() {
	for _, k := range ownerKinds {
		Context(k.Kind, func() {
			It("creates a child when a pool is added and runs its pods only on that pool's nodes", func() { poolAdded(k) })
			It("deletes the child of a pool relabelled out of the selector and recreates it when relabelled back", func() { poolRelabelled(k) })
			It("rolls a template change out to every pool's child, and restarts no pod for a workload-label change", func() { templateChange(k) })
			It("runs the StatefulSet flavour, with the fallback name for a long pool name", func() { statefulSetFlavour(k) })
			It("recreates a child deleted by hand and restores replicas scaled by hand", func() { selfHealing(k) })
			It("leaves replicas to the user when the template does not set them", func() { replicasLeftToUser(k) })
			It("has its children garbage-collected by kube-controller-manager when it is deleted", func() { ownerDeleted(k) })
			It("adopts its orphaned children when recreated, without restarting their pods", func() { orphansAdopted(k) })
			It("tolerates its pool's taints and schedules there, and drops the toleration with the taint", func() { poolTaints(k) })
			It("applies per-pool workload tweaks with {{nodepool-name}}", func() { workloadTweaks(k) })
		})
	}
})

// selected returns the NodePool object labels that the spec's owners select.
func selected(value string) map[string]string { return map[string]string{e2eSelectLabel: value} }

func poolAdded(k ownerKind) {
	ns := newNamespace("yad")
	sel := uniqueName("sel")
	first := newTestPool(poolOpts{Labels: selected(sel), Members: 2})
	createOwner(k, ns, "web", deploymentSpec("web", sel, ptr.To[int32](2)))

	By("rendering a child for the pool selected from the start")
	Eventually(func(g Gomega) {
		o := getOwner(g, k, ns, "web")
		d := getDeployment(g, ns, childName("web", first.Name, false))
		expectChildRendered(g, o, k, first.Name, &d.ObjectMeta, d.Spec.Selector, &d.Spec.Template)
		g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		expectPodsRunningOn(g, ns, "web", first, 2, e2eImage)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("rendering a child for a pool added later, with pods on that pool's nodes only")
	second := newTestPool(poolOpts{Labels: selected(sel), Members: 2})
	Eventually(func(g Gomega) {
		o := getOwner(g, k, ns, "web")
		d := getDeployment(g, ns, childName("web", second.Name, false))
		expectChildRendered(g, o, k, second.Name, &d.ObjectMeta, d.Spec.Selector, &d.Spec.Template)
		expectPodsRunningOn(g, ns, "web", second, 2, e2eImage)
		expectPodsRunningOn(g, ns, "web", first, 2, e2eImage)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("reporting both pools in the status")
	Eventually(func(g Gomega) {
		o := expectOwnerSettled(g, k, ns, "web", first.Name, second.Name)
		st := o.DaemonStatus()
		g.Expect(st.TemplateType).To(Equal(openyurtv1alpha1.DeploymentTemplateType))
		g.Expect(st.ReadyWorkloads).To(BeEquivalentTo(2))
		g.Expect(st.WorkloadSummary).To(ConsistOf(
			And(HaveField("NodePool", first.Name), HaveField("WorkloadName", childName("web", first.Name, false)),
				HaveField("Replicas", BeEquivalentTo(2)), HaveField("ReadyReplicas", BeEquivalentTo(2))),
			And(HaveField("NodePool", second.Name), HaveField("WorkloadName", childName("web", second.Name, false)),
				HaveField("Replicas", BeEquivalentTo(2)), HaveField("ReadyReplicas", BeEquivalentTo(2))),
		))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

func poolRelabelled(k ownerKind) {
	ns := newNamespace("yad")
	sel := uniqueName("sel")
	kept := newTestPool(poolOpts{Labels: selected(sel), Members: 1})
	moved := newTestPool(poolOpts{Labels: selected(sel), Members: 1})
	createOwner(k, ns, "web", deploymentSpec("web", sel, ptr.To[int32](1)))
	keptName, movedName := childName("web", kept.Name, false), childName("web", moved.Name, false)

	var keptUID, movedUID types.UID
	Eventually(func(g Gomega) {
		keptUID = getDeployment(g, ns, keptName).UID
		movedUID = getDeployment(g, ns, movedName).UID
		expectPodsRunningOn(g, ns, "web", kept, 1, e2eImage)
		expectPodsRunningOn(g, ns, "web", moved, 1, e2eImage)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("deleting the child and its pods once the pool no longer matches")
	setPoolLabels(moved.Name, selected("not-"+sel))
	Eventually(func(g Gomega) {
		err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: movedName}, &appsv1.Deployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "child of the deselected pool: %v", err)
		g.Expect(poolPods(g, ns, "web", moved.Name)).To(BeEmpty())
		g.Expect(getDeployment(g, ns, keptName).UID).To(Equal(keptUID), "the other pool's child is untouched")
		expectOwnerSettled(g, k, ns, "web", kept.Name)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("recreating it when the pool is relabelled back")
	setPoolLabels(moved.Name, selected(sel))
	Eventually(func(g Gomega) {
		g.Expect(getDeployment(g, ns, movedName).UID).NotTo(Equal(movedUID))
		expectPodsRunningOn(g, ns, "web", moved, 1, e2eImage)
		expectOwnerSettled(g, k, ns, "web", kept.Name, moved.Name)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

func templateChange(k ownerKind) {
	ns := newNamespace("yad")
	sel := uniqueName("sel")
	pools := []testPool{
		newTestPool(poolOpts{Labels: selected(sel), Members: 1}),
		newTestPool(poolOpts{Labels: selected(sel), Members: 1}),
	}
	createOwner(k, ns, "web", deploymentSpec("web", sel, ptr.To[int32](2)))

	var rev0 string
	templates := map[string]corev1.PodTemplateSpec{}
	podsBefore := map[string][]types.UID{}
	rsBefore := map[string][]types.UID{}
	Eventually(func(g Gomega) {
		rev0 = expectOwnerSettled(g, k, ns, "web", pools[0].Name, pools[1].Name).DaemonStatus().CurrentRevision
		for _, p := range pools {
			d := getDeployment(g, ns, childName("web", p.Name, false))
			g.Expect(d.Labels).To(HaveKeyWithValue(openyurtv1alpha1.LabelControllerRevisionHash, rev0))
			templates[p.Name] = d.Spec.Template
			podsBefore[p.Name] = expectPodsRunningOn(g, ns, "web", p, 2, e2eImage)
			rsBefore[p.Name] = replicaSetUIDs(g, ns, "web", p.Name)
			g.Expect(rsBefore[p.Name]).To(HaveLen(1))
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("changing only the workload labels: children relabelled, no pod restarted")
	updateOwner(k, ns, "web", func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
		s.WorkloadTemplate.DeploymentTemplate.Labels["release"] = "r2"
	})
	var rev1 string
	Eventually(func(g Gomega) {
		rev1 = expectOwnerSettled(g, k, ns, "web", pools[0].Name, pools[1].Name).DaemonStatus().CurrentRevision
		g.Expect(rev1).NotTo(Equal(rev0), "status.currentRevision follows the template change")
		for _, p := range pools {
			d := getDeployment(g, ns, childName("web", p.Name, false))
			g.Expect(d.Labels).To(HaveKeyWithValue("release", "r2"))
			g.Expect(d.Labels).To(HaveKeyWithValue(openyurtv1alpha1.LabelControllerRevisionHash, rev1))
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	for _, p := range pools {
		expectNoRollout(ns, childName("web", p.Name, false), templates[p.Name], rsBefore[p.Name], podsBefore[p.Name])
	}

	By("changing the image: every pool's child and pods follow")
	updateOwner(k, ns, "web", func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
		s.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.Containers[0].Image = e2eImageV2
	})
	Eventually(func(g Gomega) {
		o := expectOwnerSettled(g, k, ns, "web", pools[0].Name, pools[1].Name)
		rev2 := o.DaemonStatus().CurrentRevision
		g.Expect(rev2).NotTo(Equal(rev1))
		g.Expect(o.DaemonStatus().UpdatedWorkloads).To(BeEquivalentTo(2))
		for _, p := range pools {
			d := getDeployment(g, ns, childName("web", p.Name, false))
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(e2eImageV2))
			g.Expect(d.Labels).To(HaveKeyWithValue(openyurtv1alpha1.LabelControllerRevisionHash, rev2))
			expectPodsRunningOn(g, ns, "web", p, 2, e2eImageV2)
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

func statefulSetFlavour(k ownerKind) {
	ns := newNamespace("yad")
	sel := uniqueName("sel")
	short := newTestPool(poolOpts{Labels: selected(sel), Members: 2})
	// 37 characters: <owner>-<pool> exceeds the StatefulSet limit of 52, so the child gets the fallback name.
	long := newTestPool(poolOpts{Labels: selected(sel), Members: 1, Name: uniqueName("e2e-yad-a-rather-long-pool-name")})
	owner := uniqueName("db-with-a-long-owner-name")
	createOwner(k, ns, owner, statefulSetSpec("db", sel, 2))

	shortName, longName := childName(owner, short.Name, true), childName(owner, long.Name, true)
	Expect(shortName).To(Equal(owner + "-" + short.Name))
	Expect(longName).NotTo(Equal(owner+"-"+long.Name), "the test needs a name over the limit")

	check := func(g Gomega, p testPool, name, image string) {
		o := getOwner(g, k, ns, owner)
		var list appsv1.StatefulSetList
		g.Expect(k8sClient.List(suiteCtx, &list, client.InNamespace(ns),
			client.MatchingLabels{openyurtv1alpha1.LabelPoolName: p.Name})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1), "one StatefulSet for pool %s", p.Name)
		sts := &list.Items[0]
		g.Expect(sts.Name).To(Equal(name), "deterministic name")
		g.Expect(len(sts.Name)).To(BeNumerically("<=", 52))
		expectChildRendered(g, o, k, p.Name, &sts.ObjectMeta, sts.Spec.Selector, &sts.Spec.Template)
		g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal(image))
		g.Expect(sts.Status.UpdatedReplicas).To(BeEquivalentTo(2))
		expectPodsRunningOn(g, ns, "db", p, 2, image)
		g.Expect(poolPods(g, ns, "db", p.Name)).To(ConsistOf(HaveField("Name", name+"-0"), HaveField("Name", name+"-1")),
			"stable ordinal pod names")
	}
	By("running two ordinal pods per pool, on that pool's nodes")
	Eventually(func(g Gomega) {
		check(g, short, shortName, e2eImage)
		check(g, long, longName, e2eImage)
		o := expectOwnerSettled(g, k, ns, owner, short.Name, long.Name)
		g.Expect(o.DaemonStatus().TemplateType).To(Equal(openyurtv1alpha1.StatefulSetTemplateType))
		g.Expect(o.DaemonStatus().ReadyWorkloads).To(BeEquivalentTo(2))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("rolling an image change out to every pool's StatefulSet")
	updateOwner(k, ns, owner, func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
		s.WorkloadTemplate.StatefulSetTemplate.Spec.Template.Spec.Containers[0].Image = e2eImageV2
	})
	Eventually(func(g Gomega) {
		check(g, short, shortName, e2eImageV2)
		check(g, long, longName, e2eImageV2)
		expectOwnerSettled(g, k, ns, owner, short.Name, long.Name)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

func selfHealing(k ownerKind) {
	ns := newNamespace("yad")
	sel := uniqueName("sel")
	pool := newTestPool(poolOpts{Labels: selected(sel), Members: 1})
	createOwner(k, ns, "web", deploymentSpec("web", sel, ptr.To[int32](2)))
	name := childName("web", pool.Name, false)

	var child *appsv1.Deployment
	Eventually(func(g Gomega) {
		child = getDeployment(g, ns, name)
		expectPodsRunningOn(g, ns, "web", pool, 2, e2eImage)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("recreating a child deleted by hand")
	Expect(k8sClient.Delete(suiteCtx, child, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	Eventually(func(g Gomega) {
		o := getOwner(g, k, ns, "web")
		d := getDeployment(g, ns, name)
		g.Expect(d.UID).NotTo(Equal(child.UID))
		expectChildRendered(g, o, k, pool.Name, &d.ObjectMeta, d.Spec.Selector, &d.Spec.Template)
		expectPodsRunningOn(g, ns, "web", pool, 2, e2eImage)
		expectOwnerSettled(g, k, ns, "web", pool.Name)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("restoring the template's replicas after a scale by hand")
	scaled := getDeployment(Default, ns, name)
	patch := client.MergeFrom(scaled.DeepCopy())
	scaled.Spec.Replicas = ptr.To[int32](4)
	Expect(k8sClient.Patch(suiteCtx, scaled, patch)).To(Succeed())
	Expect(scaled.Spec.Replicas).To(HaveValue(BeEquivalentTo(4)))
	Eventually(func(g Gomega) {
		d := getDeployment(g, ns, name)
		g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		g.Expect(d.Annotations).To(HaveKeyWithValue(openyurtv1alpha1.AnnotationAppliedReplicas, "2"))
		expectPodsRunningOn(g, ns, "web", pool, 2, e2eImage)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("repairing an edited image")
	edited := getDeployment(Default, ns, name)
	patch = client.MergeFrom(edited.DeepCopy())
	edited.Spec.Template.Spec.Containers[0].Image = "registry.example/drover-e2e/edited:1"
	Expect(k8sClient.Patch(suiteCtx, edited, patch)).To(Succeed())
	Eventually(func(g Gomega) {
		d := getDeployment(g, ns, name)
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(e2eImage))
		g.Expect(d.Generation).To(BeNumerically(">", edited.Generation))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

func replicasLeftToUser(k ownerKind) {
	ns := newNamespace("yad")
	sel := uniqueName("sel")
	pool := newTestPool(poolOpts{Labels: selected(sel), Members: 1})
	createOwner(k, ns, "web", deploymentSpec("web", sel, nil))
	name := childName("web", pool.Name, false)

	By("creating the child with the API server's default of one replica and no applied-replicas annotation")
	Eventually(func(g Gomega) {
		d := getDeployment(g, ns, name)
		g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
		g.Expect(d.Annotations).NotTo(HaveKey(openyurtv1alpha1.AnnotationAppliedReplicas))
		expectPodsRunningOn(g, ns, "web", pool, 1, e2eImage)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("keeping a count set through the scale subresource (as an HPA does) across a template change")
	d := getDeployment(Default, ns, name)
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
	Expect(k8sClient.SubResource("scale").Update(suiteCtx, d, client.WithSubResourceBody(scale))).To(Succeed())
	updateOwner(k, ns, "web", func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
		s.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.Containers[0].Image = e2eImageV2
	})
	Eventually(func(g Gomega) {
		d := getDeployment(g, ns, name)
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(e2eImageV2))
		g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
		expectPodsRunningOn(g, ns, "web", pool, 3, e2eImageV2)
		expectOwnerSettled(g, k, ns, "web", pool.Name)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	Expect(getDeployment(Default, ns, name).Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
}

func ownerDeleted(k ownerKind) {
	ns := newNamespace("yad")
	sel := uniqueName("sel")
	a := newTestPool(poolOpts{Labels: selected(sel), Members: 1})
	b := newTestPool(poolOpts{Labels: selected(sel), Members: 1})
	owner := createOwner(k, ns, "web", deploymentSpec("web", sel, ptr.To[int32](1)))

	Eventually(func(g Gomega) {
		expectOwnerSettled(g, k, ns, "web", a.Name, b.Name)
		expectPodsRunningOn(g, ns, "web", a, 1, e2eImage)
		expectPodsRunningOn(g, ns, "web", b, 1, e2eImage)
		var revs appsv1.ControllerRevisionList
		g.Expect(k8sClient.List(suiteCtx, &revs, client.InNamespace(ns))).To(Succeed())
		g.Expect(revs.Items).NotTo(BeEmpty())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("deleting the owner: children, ReplicaSets, pods and revisions are garbage-collected")
	Expect(k8sClient.Delete(suiteCtx, owner)).To(Succeed())
	Eventually(func(g Gomega) {
		var deploys appsv1.DeploymentList
		g.Expect(k8sClient.List(suiteCtx, &deploys, client.InNamespace(ns))).To(Succeed())
		g.Expect(deploys.Items).To(BeEmpty())
		var rs appsv1.ReplicaSetList
		g.Expect(k8sClient.List(suiteCtx, &rs, client.InNamespace(ns))).To(Succeed())
		g.Expect(rs.Items).To(BeEmpty())
		var pods corev1.PodList
		g.Expect(k8sClient.List(suiteCtx, &pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
		var revs appsv1.ControllerRevisionList
		g.Expect(k8sClient.List(suiteCtx, &revs, client.InNamespace(ns))).To(Succeed())
		g.Expect(revs.Items).To(BeEmpty())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

func orphansAdopted(k ownerKind) {
	ns := newNamespace("yad")
	sel := uniqueName("sel")
	pool := newTestPool(poolOpts{Labels: selected(sel), Members: 1})
	spec := deploymentSpec("web", sel, ptr.To[int32](2))
	owner := createOwner(k, ns, "web", spec)
	name := childName("web", pool.Name, false)

	var child *appsv1.Deployment
	var pods, rs []types.UID
	Eventually(func(g Gomega) {
		expectOwnerSettled(g, k, ns, "web", pool.Name)
		child = getDeployment(g, ns, name)
		g.Expect(ownedBy(child, owner.GetUID())).To(BeTrue())
		pods = expectPodsRunningOn(g, ns, "web", pool, 2, e2eImage)
		rs = replicaSetUIDs(g, ns, "web", pool.Name)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("deleting the owner with --cascade=orphan")
	Expect(k8sClient.Delete(suiteCtx, owner, client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
	Eventually(func(g Gomega) {
		err := k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(owner), k.New())
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "owner gone: %v", err)
		d := getDeployment(g, ns, name)
		g.Expect(d.UID).To(Equal(child.UID))
		g.Expect(metav1.GetControllerOf(d)).To(BeNil(), "orphaned")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("recreating it: the orphan is adopted, not replaced")
	again := createOwner(k, ns, "web", spec)
	Eventually(func(g Gomega) {
		o := expectOwnerSettled(g, k, ns, "web", pool.Name)
		d := getDeployment(g, ns, name)
		g.Expect(d.UID).To(Equal(child.UID))
		g.Expect(ownedBy(d, again.GetUID())).To(BeTrue(), "controller ownerReference to the new owner")
		g.Expect(d.Labels).To(HaveKeyWithValue(openyurtv1alpha1.LabelControllerRevisionHash, o.DaemonStatus().CurrentRevision))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	expectNoRollout(ns, name, child.Spec.Template, rs, pods)
}

// expectNoRollout checks that the Deployment ns/name still has the pod template tmpl and, once its controller
// has seen the latest generation (a new ReplicaSet would exist by then), the same ReplicaSets and pods.
// (Deployment generations also count annotation changes, so the generation alone says nothing.)
func expectNoRollout(ns, name string, tmpl corev1.PodTemplateSpec, rs, pods []types.UID) {
	GinkgoHelper()
	var d *appsv1.Deployment
	Eventually(func(g Gomega) {
		d = getDeployment(g, ns, name)
		g.Expect(d.Status.ObservedGeneration).To(BeNumerically(">=", d.Generation))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	Expect(d.Spec.Template).To(Equal(tmpl), "the pod template of %s did not change", name)
	pool := d.Labels[openyurtv1alpha1.LabelPoolName]
	Expect(replicaSetUIDs(Default, ns, "web", pool)).To(Equal(rs), "no new ReplicaSet for %s", name)
	Expect(podUIDs(Default, ns, "web", pool)).To(Equal(pods), "no pod of %s restarted", name)
}

func poolTaints(k ownerKind) {
	ns := newNamespace("yad")
	sel := uniqueName("sel")
	taint := corev1.Taint{Key: "e2e.drover.dev/dedicated", Value: sel, Effect: corev1.TaintEffectNoSchedule}
	pool := newTestPool(poolOpts{Labels: selected(sel), Members: 2, Taints: []corev1.Taint{taint}})

	By("the NodePool controller tainting the pool's nodes")
	Eventually(func(g Gomega) {
		for _, n := range pool.Nodes {
			var node corev1.Node
			g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: n}, &node)).To(Succeed())
			g.Expect(node.Spec.Taints).To(ContainElement(And(HaveField("Key", taint.Key), HaveField("Effect", taint.Effect))))
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("rendering the toleration and scheduling the owner's pods on the tainted nodes")
	createOwner(k, ns, "web", deploymentSpec("web", sel, ptr.To[int32](2)))
	name := childName("web", pool.Name, false)
	Eventually(func(g Gomega) {
		d := getDeployment(g, ns, name)
		g.Expect(toleratesTaint(d.Spec.Template.Spec.Tolerations, taint)).To(BeTrue(), "tolerations: %v", d.Spec.Template.Spec.Tolerations)
		expectPodsRunningOn(g, ns, "web", pool, 2, e2eImage)
		expectOwnerSettled(g, k, ns, "web", pool.Name)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("leaving a plain Deployment without the toleration Pending")
	plainLabels := map[string]string{"app": "plain"}
	plain := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: plainLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: plainLabels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{openyurtv1beta1.LabelCurrentNodePool: pool.Name},
					Containers:   []corev1.Container{{Name: "app", Image: e2eImage}},
				},
			},
		},
	}
	Expect(k8sClient.Create(suiteCtx, plain)).To(Succeed())
	Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8sClient.List(suiteCtx, &pods, client.InNamespace(ns), client.MatchingLabels(plainLabels))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		g.Expect(pods.Items[0].Spec.NodeName).To(BeEmpty())
		g.Expect(pods.Items[0].Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.PodScheduled),
			HaveField("Status", corev1.ConditionFalse),
			HaveField("Reason", corev1.PodReasonUnschedulable),
		)))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("dropping the toleration when the taint leaves the pool")
	setPoolTaints(pool.Name, nil)
	Eventually(func(g Gomega) {
		d := getDeployment(g, ns, name)
		g.Expect(toleratesTaint(d.Spec.Template.Spec.Tolerations, taint)).To(BeFalse(), "tolerations: %v", d.Spec.Template.Spec.Tolerations)
		expectPodsRunningOn(g, ns, "web", pool, 2, e2eImage)
		expectOwnerSettled(g, k, ns, "web", pool.Name)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

func workloadTweaks(k ownerKind) {
	ns := newNamespace("yad")
	sel := uniqueName("sel")
	plain := newTestPool(poolOpts{Labels: selected(sel), Members: 1})
	tweaked := newTestPool(poolOpts{Labels: selected(sel), Members: 1})
	spec := deploymentSpec("web", sel, ptr.To[int32](1))
	spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{
		{
			Pools: []string{tweaked.Name},
			Tweaks: openyurtv1alpha1.Tweaks{
				Replicas:        ptr.To[int32](2),
				ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "app", TargetImage: e2eImageV2}},
			},
		},
		{
			NodePoolSelector: &metav1.LabelSelector{MatchLabels: selected(sel)},
			Tweaks: openyurtv1alpha1.Tweaks{Patches: []openyurtv1alpha1.Patch{{
				Path:      "/spec/template/spec/containers/0/env",
				Operation: openyurtv1alpha1.PatchAdd,
				Value:     &runtime.RawExtension{Raw: []byte(`[{"name":"POOL","value":"pool={{nodepool-name}}"}]`)},
			}}},
		},
	}
	createOwner(k, ns, "web", spec)

	Eventually(func(g Gomega) {
		expectOwnerSettled(g, k, ns, "web", plain.Name, tweaked.Name)

		d := getDeployment(g, ns, childName("web", plain.Name, false))
		g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(e2eImage))
		g.Expect(containerEnv(&d.Spec.Template.Spec, "POOL")).To(Equal("pool=" + plain.Name))
		expectPodsRunningOn(g, ns, "web", plain, 1, e2eImage)

		d = getDeployment(g, ns, childName("web", tweaked.Name, false))
		g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		g.Expect(d.Annotations).To(HaveKeyWithValue(openyurtv1alpha1.AnnotationAppliedReplicas, "2"))
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(e2eImageV2))
		g.Expect(containerEnv(&d.Spec.Template.Spec, "POOL")).To(Equal("pool=" + tweaked.Name))
		expectPodsRunningOn(g, ns, "web", tweaked, 2, e2eImageV2)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
