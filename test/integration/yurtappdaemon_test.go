package integration

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

// ownerKind builds either owner kind, so every behaviour runs for YurtAppDaemon and UnitedDaemonSet alike.
type ownerKind struct {
	name string
	// controller is the controller's name, the controller label of its metrics.
	controller string
	new        func(name, ns string) openyurtv1alpha1.Owner
}

var ownerKinds = []ownerKind{
	{name: "YurtAppDaemon", controller: "yurtappdaemon", new: func(name, ns string) openyurtv1alpha1.Owner {
		return &openyurtv1alpha1.YurtAppDaemon{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}},
	{name: "UnitedDaemonSet", controller: "uniteddaemonset", new: func(name, ns string) openyurtv1alpha1.Owner {
		return &openyurtv1alpha1.UnitedDaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}},
}

func podTemplate(app, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

// withDeployment fills an owner's spec with a Deployment template selecting pools by poolSelector.
func withDeployment(o openyurtv1alpha1.Owner, app string, poolSelector *metav1.LabelSelector) openyurtv1alpha1.Owner {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	*o.DaemonSpec() = openyurtv1alpha1.YurtAppDaemonSpec{
		Selector:         sel,
		NodePoolSelector: poolSelector,
		WorkloadTemplate: openyurtv1alpha1.WorkloadTemplate{DeploymentTemplate: &openyurtv1alpha1.DeploymentTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: sel, Template: podTemplate(app, "registry.example/app:1")},
		}},
	}
	return o
}

// withStatefulSet fills an owner's spec with a StatefulSet template.
func withStatefulSet(o openyurtv1alpha1.Owner, app string, poolSelector *metav1.LabelSelector) openyurtv1alpha1.Owner {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	*o.DaemonSpec() = openyurtv1alpha1.YurtAppDaemonSpec{
		Selector:         sel,
		NodePoolSelector: poolSelector,
		WorkloadTemplate: openyurtv1alpha1.WorkloadTemplate{StatefulSetTemplate: &openyurtv1alpha1.StatefulSetTemplateSpec{
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: sel, ServiceName: app, Template: podTemplate(app, "registry.example/db:1")},
		}},
	}
	return o
}

var _ = Describe("YurtAppDaemon and UnitedDaemonSet", func() {
	var ctx context.Context
	BeforeEach(func() { ctx = context.Background() })

	newNamespace := func() string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "yad-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		return ns.Name
	}
	// newPools creates n pools labelled group=<group> and returns their names.
	newPools := func(group string, n int, taints ...corev1.Taint) []string {
		var names []string
		for i := range n {
			p := &openyurtv1beta1.NodePool{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", group, i), Labels: map[string]string{"group": group}},
				Spec:       openyurtv1beta1.NodePoolSpec{Taints: taints},
			}
			Expect(k8sClient.Create(ctx, p)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, p))).To(Succeed()) })
			names = append(names, p.Name)
		}
		return names
	}
	groupSelector := func(group string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"group": group}}
	}
	deployments := func(ns string) func() []appsv1.Deployment {
		return func() []appsv1.Deployment {
			list := &appsv1.DeploymentList{}
			Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			return list.Items
		}
	}
	getDeployment := func(ns, name string) func() (*appsv1.Deployment, error) {
		return func() (*appsv1.Deployment, error) {
			d := &appsv1.Deployment{}
			return d, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)
		}
	}
	getOwner := func(o openyurtv1alpha1.Owner) func() openyurtv1alpha1.Owner {
		return func() openyurtv1alpha1.Owner {
			cur := o.DeepCopyObject().(openyurtv1alpha1.Owner)
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(o), cur)).To(Succeed())
			return cur
		}
	}
	updateOwner := func(o openyurtv1alpha1.Owner, mutate func(openyurtv1alpha1.Owner)) {
		Eventually(func() error {
			cur := getOwner(o)()
			mutate(cur)
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
	}
	poolNames := func(ds []appsv1.Deployment) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Labels[openyurtv1alpha1.LabelPoolName])
		}
		return out
	}

	for _, kind := range ownerKinds {
		Context(kind.name, func() {
			It("renders one child per selected pool, pinned to the pool and owned by the owner", func() {
				ns := newNamespace()
				group := strings.ToLower(kind.name) + "-render"
				pools := newPools(group, 2, corev1.Taint{Key: "edge", Value: "true", Effect: corev1.TaintEffectNoSchedule})
				owner := withDeployment(kind.new("web", ns), "web", groupSelector(group))
				owner.DaemonSpec().WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
				Expect(k8sClient.Create(ctx, owner)).To(Succeed())

				Eventually(deployments(ns)).Should(HaveLen(2))
				for _, pool := range pools {
					d, err := getDeployment(ns, "web-"+pool)()
					Expect(err).NotTo(HaveOccurred())
					Expect(d.Labels).To(HaveKeyWithValue(openyurtv1alpha1.LabelPoolName, pool))
					Expect(d.Annotations).To(HaveKeyWithValue(openyurtv1alpha1.AnnotationRefNodePool, pool))
					Expect(d.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app": "web", openyurtv1alpha1.LabelPoolName: pool}))
					Expect(d.Spec.Template.Labels).To(HaveKeyWithValue(openyurtv1alpha1.LabelPoolName, pool))
					Expect(d.Spec.Template.Labels).NotTo(HaveKey(openyurtv1alpha1.LabelControllerRevisionHash))
					Expect(d.Spec.Template.Spec.NodeSelector).To(Equal(map[string]string{"disk": "ssd", openyurtv1beta1.LabelCurrentNodePool: pool}))
					Expect(d.Spec.Template.Spec.Tolerations).To(ContainElement(corev1.Toleration{
						Key: "edge", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
					}))
					ref := metav1.GetControllerOf(d)
					Expect(ref).NotTo(BeNil())
					Expect(ref.Kind).To(Equal(kind.name))
					Expect(ref.UID).To(Equal(getOwner(owner)().GetUID()))
				}
				Eventually(func() []metav1.Condition { return getOwner(owner)().DaemonStatus().Conditions }).Should(And(
					ContainElement(And(HaveField("Type", openyurtv1alpha1.WorkLoadProvisioned), HaveField("Status", metav1.ConditionTrue))),
					ContainElement(And(HaveField("Type", openyurtv1alpha1.WorkLoadUpdated), HaveField("Status", metav1.ConditionTrue))),
					ContainElement(And(HaveField("Type", openyurtv1alpha1.WorkLoadFailure), HaveField("Status", metav1.ConditionFalse))),
				))
				st := getOwner(owner)().DaemonStatus()
				Expect(st.NodePools).To(Equal(pools))
				Expect(st.TemplateType).To(Equal(openyurtv1alpha1.DeploymentTemplateType))
				Expect(st.CurrentRevision).NotTo(BeEmpty())
			})

			It("follows pool selection: relabelled and deleting pools lose their child", func() {
				ns := newNamespace()
				group := strings.ToLower(kind.name) + "-select"
				pools := newPools(group, 3)
				owner := withDeployment(kind.new("sel", ns), "sel", groupSelector(group))
				Expect(k8sClient.Create(ctx, owner)).To(Succeed())
				Eventually(func() []string { return poolNames(deployments(ns)()) }).Should(ConsistOf(pools))

				By("relabelling a pool out of the selector")
				Eventually(func() error {
					p := &openyurtv1beta1.NodePool{}
					if err := k8sClient.Get(ctx, client.ObjectKey{Name: pools[0]}, p); err != nil {
						return err
					}
					p.Labels["group"] = "elsewhere"
					return k8sClient.Update(ctx, p)
				}).Should(Succeed())
				Eventually(func() []string { return poolNames(deployments(ns)()) }).Should(ConsistOf(pools[1:]))

				By("deleting a pool held by a finalizer: it is not eligible while being deleted")
				p := &openyurtv1beta1.NodePool{}
				Expect(k8sClient.Get(ctx, client.ObjectKey{Name: pools[1]}, p)).To(Succeed())
				p.Finalizers = append(p.Finalizers, "test.drover.dev/hold")
				Expect(k8sClient.Update(ctx, p)).To(Succeed())
				Expect(k8sClient.Delete(ctx, p)).To(Succeed())
				Eventually(func() []string { return poolNames(deployments(ns)()) }).Should(ConsistOf(pools[2:]))
				Expect(k8sClient.Get(ctx, client.ObjectKey{Name: pools[1]}, p)).To(Succeed())
				p.Finalizers = nil
				Expect(k8sClient.Update(ctx, p)).To(Succeed())
			})

			It("repairs children: deleted, edited, or stripped of the pool label", func() {
				ns := newNamespace()
				group := strings.ToLower(kind.name) + "-heal"
				pools := newPools(group, 1)
				owner := withDeployment(kind.new("heal", ns), "heal", groupSelector(group))
				Expect(k8sClient.Create(ctx, owner)).To(Succeed())
				name := "heal-" + pools[0]
				Eventually(getDeployment(ns, name)).Should(Not(BeNil()))
				d, err := getDeployment(ns, name)()
				Expect(err).NotTo(HaveOccurred())

				By("deleting the child")
				Expect(k8sClient.Delete(ctx, d)).To(Succeed())
				Eventually(func() (string, error) {
					cur, err := getDeployment(ns, name)()
					if err != nil {
						return "", err
					}
					return string(cur.UID), nil
				}).ShouldNot(Equal(string(d.UID)))

				By("editing its image and removing a rendered label")
				Eventually(func() error {
					cur, err := getDeployment(ns, name)()
					if err != nil {
						return err
					}
					cur.Spec.Template.Spec.Containers[0].Image = "registry.example/hacked:1"
					delete(cur.Labels, "app")
					return k8sClient.Update(ctx, cur)
				}).Should(Succeed())
				Eventually(func() (string, error) {
					cur, err := getDeployment(ns, name)()
					if err != nil {
						return "", err
					}
					return cur.Spec.Template.Spec.Containers[0].Image + "," + cur.Labels["app"], nil
				}).Should(Equal("registry.example/app:1,heal"))

				By("removing the pool label, which takes the child out of the manager's cache")
				Eventually(func() error {
					cur, err := getDeployment(ns, name)()
					if err != nil {
						return err
					}
					delete(cur.Labels, openyurtv1alpha1.LabelPoolName)
					return k8sClient.Update(ctx, cur)
				}).Should(Succeed())
				Eventually(func() (map[string]string, error) {
					cur, err := getDeployment(ns, name)()
					if err != nil {
						return nil, err
					}
					return cur.Labels, nil
				}).Should(HaveKeyWithValue(openyurtv1alpha1.LabelPoolName, pools[0]))
			})

			It("updates every child on a template change and then stays quiet", func() {
				ns := newNamespace()
				group := strings.ToLower(kind.name) + "-update"
				newPools(group, 2)
				owner := withDeployment(kind.new("upd", ns), "upd", groupSelector(group))
				Expect(k8sClient.Create(ctx, owner)).To(Succeed())
				Eventually(deployments(ns)).Should(HaveLen(2))
				firstRevision := ""
				Eventually(func() string { firstRevision = getOwner(owner)().DaemonStatus().CurrentRevision; return firstRevision }).ShouldNot(BeEmpty())

				updateOwner(owner, func(o openyurtv1alpha1.Owner) {
					o.DaemonSpec().WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.Containers[0].Image = "registry.example/app:2"
				})
				Eventually(func() []string {
					var images []string
					for _, d := range deployments(ns)() {
						images = append(images, d.Spec.Template.Spec.Containers[0].Image)
					}
					return images
				}).Should(Equal([]string{"registry.example/app:2", "registry.example/app:2"}))
				Eventually(func() string { return getOwner(owner)().DaemonStatus().CurrentRevision }).ShouldNot(Equal(firstRevision))

				By("making no write once converged, whatever triggers a pass")
				Eventually(func() int64 {
					o := getOwner(owner)()
					return o.DaemonStatus().ObservedGeneration - o.GetGeneration()
				}).Should(BeZero())
				versions := func() []string {
					out := []string{getOwner(owner)().GetResourceVersion()}
					for _, d := range deployments(ns)() {
						out = append(out, d.ResourceVersion)
					}
					return out
				}
				before := versions()
				passes := reconcileTotal(kind.controller)
				// A label on the owner's pools that changes no selection triggers every owner selecting them.
				pools := &openyurtv1beta1.NodePoolList{}
				Expect(k8sClient.List(ctx, pools, client.MatchingLabels{"group": group})).To(Succeed())
				for i := range pools.Items {
					p := &pools.Items[i]
					p.Labels["touched"] = "yes"
					Expect(k8sClient.Update(ctx, p)).To(Succeed())
				}
				// The touch must have caused a pass, or the check below proves nothing.
				Eventually(func() float64 { return reconcileTotal(kind.controller) }).Should(BeNumerically(">", passes))
				Consistently(versions, "2s", "200ms").Should(Equal(before))
			})

			It("leaves replicas to the user or an HPA when the template does not set them", func() {
				ns := newNamespace()
				group := strings.ToLower(kind.name) + "-replicas"
				pools := newPools(group, 1)
				owner := withDeployment(kind.new("rep", ns), "rep", groupSelector(group))
				owner.DaemonSpec().WorkloadTemplate.DeploymentTemplate.Spec.Replicas = nil
				Expect(k8sClient.Create(ctx, owner)).To(Succeed())
				name := "rep-" + pools[0]
				Eventually(getDeployment(ns, name)).Should(HaveField("Spec.Replicas", HaveValue(Equal(int32(1)))))

				scaleTo := func(n int32) {
					d, err := getDeployment(ns, name)()
					Expect(err).NotTo(HaveOccurred())
					scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: n}}
					Expect(k8sClient.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale))).To(Succeed())
				}
				replicas := func() int32 {
					d, err := getDeployment(ns, name)()
					Expect(err).NotTo(HaveOccurred())
					return ptr.Deref(d.Spec.Replicas, -1)
				}
				scaleTo(5)
				// Trigger a pass with a template change that does not touch replicas.
				updateOwner(owner, func(o openyurtv1alpha1.Owner) {
					o.DaemonSpec().WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.Containers[0].Image = "registry.example/app:2"
				})
				Eventually(func() string {
					d, _ := getDeployment(ns, name)()
					return d.Spec.Template.Spec.Containers[0].Image
				}).Should(Equal("registry.example/app:2"))
				Expect(replicas()).To(Equal(int32(5)))

				By("setting replicas in the template makes them authoritative")
				updateOwner(owner, func(o openyurtv1alpha1.Owner) {
					o.DaemonSpec().WorkloadTemplate.DeploymentTemplate.Spec.Replicas = ptr.To[int32](3)
				})
				Eventually(replicas).Should(Equal(int32(3)))
				scaleTo(7)
				Eventually(replicas).Should(Equal(int32(3)))

				By("unsetting them again keeps the live count")
				updateOwner(owner, func(o openyurtv1alpha1.Owner) {
					o.DaemonSpec().WorkloadTemplate.DeploymentTemplate.Spec.Replicas = nil
				})
				Eventually(func() map[string]string {
					d, _ := getDeployment(ns, name)()
					return d.Annotations
				}).ShouldNot(HaveKey(openyurtv1alpha1.AnnotationAppliedReplicas))
				Consistently(replicas, "1s", "100ms").Should(Equal(int32(3)))
			})

			It("runs the StatefulSet flavour and rejects changes Kubernetes forbids", func() {
				ns := newNamespace()
				group := strings.ToLower(kind.name) + "-sts"
				pools := newPools(group, 2)
				owner := withStatefulSet(kind.new("db", ns), "db", groupSelector(group))
				Expect(k8sClient.Create(ctx, owner)).To(Succeed())
				statefulSets := func() []appsv1.StatefulSet {
					list := &appsv1.StatefulSetList{}
					Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
					return list.Items
				}
				Eventually(func() []string {
					var names []string
					for _, s := range statefulSets() {
						names = append(names, s.Name)
					}
					return names
				}).Should(ConsistOf("db-"+pools[0], "db-"+pools[1]))
				Eventually(func() openyurtv1alpha1.TemplateType { return getOwner(owner)().DaemonStatus().TemplateType }).
					Should(Equal(openyurtv1alpha1.StatefulSetTemplateType))

				updateOwner(owner, func(o openyurtv1alpha1.Owner) {
					o.DaemonSpec().WorkloadTemplate.StatefulSetTemplate.Spec.Template.Spec.Containers[0].Image = "registry.example/db:2"
				})
				Eventually(func() []string {
					var images []string
					for _, s := range statefulSets() {
						images = append(images, s.Spec.Template.Spec.Containers[0].Image)
					}
					return images
				}).Should(Equal([]string{"registry.example/db:2", "registry.example/db:2"}))

				cur := getOwner(owner)()
				cur.DaemonSpec().WorkloadTemplate.StatefulSetTemplate.Spec.ServiceName = "other"
				err := k8sClient.Update(ctx, cur)
				Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
				Expect(err.Error()).To(ContainSubstring("spec.workloadTemplate.statefulSetTemplate.spec"))
			})

			It("rejects bad owners with field paths", func() {
				ns := newNamespace()
				cases := map[string]struct {
					mutate func(openyurtv1alpha1.Owner)
					path   string
				}{
					"selector does not match the pod labels": {
						mutate: func(o openyurtv1alpha1.Owner) {
							o.DaemonSpec().Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
						},
						path: "spec.workloadTemplate.deploymentTemplate.spec.template.metadata.labels",
					},
					"container without an image (dry run)": {
						mutate: func(o openyurtv1alpha1.Owner) {
							o.DaemonSpec().WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.Containers[0].Image = ""
						},
						path: "spec.workloadTemplate.deploymentTemplate.spec.template.spec.containers[0].image",
					},
					"tweak without pools or selector": {
						mutate: func(o openyurtv1alpha1.Owner) {
							o.DaemonSpec().WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](1)}}}
						},
						path: "spec.workloadTweaks[0]",
					},
				}
				for name, tc := range cases {
					o := withDeployment(kind.new("bad", ns), "bad", &metav1.LabelSelector{})
					tc.mutate(o)
					err := k8sClient.Create(ctx, o)
					Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", name, err)
					Expect(causeFields(err)).To(ContainElement(HavePrefix(tc.path)), name)
				}

				By("refusing a second owner kind of the same name")
				first := withDeployment(kind.new("twin", ns), "twin", &metav1.LabelSelector{MatchLabels: map[string]string{"none": "none"}})
				Expect(k8sClient.Create(ctx, first)).To(Succeed())
				other := ownerKinds[0]
				if other.name == kind.name {
					other = ownerKinds[1]
				}
				// Once the controller has seen the first owner, the webhook's cache has it too.
				Eventually(func() int64 { return getOwner(first)().DaemonStatus().ObservedGeneration }).Should(Equal(int64(1)))
				twin := withDeployment(other.new("twin", ns), "twin", &metav1.LabelSelector{})
				err := k8sClient.Create(ctx, twin)
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
				Expect(causeFields(err)).To(ContainElement("metadata.name"))

				By("keeping the selector and the template kind immutable")
				cur := getOwner(first)()
				cur.DaemonSpec().Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "twin", "x": "y"}}
				Expect(k8sClient.Update(ctx, cur)).NotTo(Succeed())
				cur = getOwner(first)()
				withStatefulSet(cur, "twin", cur.DaemonSpec().NodePoolSelector)
				err = k8sClient.Update(ctx, cur)
				Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			})
		})
	}

	It("enforces the CRD's CEL rules even without the webhook", Serial, func() {
		ns := newNamespace()
		restore := withoutValidatingWebhook(ctx, "vyurtappdaemon.drover.dev")
		DeferCleanup(restore)

		o := withDeployment(ownerKinds[0].new("cel", ns), "cel", &metav1.LabelSelector{})
		o.DaemonSpec().WorkloadTemplate.StatefulSetTemplate = &openyurtv1alpha1.StatefulSetTemplateSpec{}
		err := k8sClient.Create(ctx, o)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("exactly one"))
	})
})

// withoutValidatingWebhook removes the named webhook from every ValidatingWebhookConfiguration and returns a
// function that puts the configurations back as they were.
func withoutValidatingWebhook(ctx context.Context, name string) func() {
	list := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	Expect(k8sClient.List(ctx, list)).To(Succeed())
	var saved []admissionregistrationv1.ValidatingWebhookConfiguration
	for i := range list.Items {
		cfg := &list.Items[i]
		kept := cfg.Webhooks[:0:0]
		for _, wh := range cfg.Webhooks {
			if wh.Name != name {
				kept = append(kept, wh)
			}
		}
		if len(kept) == len(cfg.Webhooks) {
			continue
		}
		saved = append(saved, *cfg.DeepCopy())
		cfg.Webhooks = kept
		Expect(k8sClient.Update(ctx, cfg)).To(Succeed())
	}
	Expect(saved).NotTo(BeEmpty(), "no webhook named %s", name)
	return func() {
		for i := range saved {
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&saved[i]), cfg)).To(Succeed())
			cfg.Webhooks = saved[i].Webhooks
			Expect(k8sClient.Update(ctx, cfg)).To(Succeed())
		}
	}
}
