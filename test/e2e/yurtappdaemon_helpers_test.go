package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/localcluster"
)

// The YurtAppDaemon e2e specs run once per owner kind: UnitedDaemonSet is the same API under its earlier name
// and must pass the same scenarios.

// ownerKind is one of the two owner kinds.
type ownerKind struct {
	Kind string
	New  func() openyurtv1alpha1.Owner
}

var ownerKinds = []ownerKind{
	{Kind: "YurtAppDaemon", New: func() openyurtv1alpha1.Owner { return &openyurtv1alpha1.YurtAppDaemon{} }},
	{Kind: "UnitedDaemonSet", New: func() openyurtv1alpha1.Owner { return &openyurtv1alpha1.UnitedDaemonSet{} }},
}

const (
	// e2eImage and e2eImageV2 are what the templates run; kwok never pulls them.
	e2eImage   = "registry.example/drover-e2e/app:v1"
	e2eImageV2 = "registry.example/drover-e2e/app:v2"
	// e2eSelectLabel is the NodePool object label the owners of one spec select by; its value is unique to the spec.
	e2eSelectLabel = "e2e.drover.dev/yad"
	// kwokNodeLabel is a node label every fake node carries: the templates put it in their own nodeSelector to
	// show that the user's constraints are kept next to the pool's.
	kwokNodeLabel = "type"
)

// testPool is a NodePool created by a spec, with its fake member nodes.
type testPool struct {
	Name  string
	Nodes []string
}

// poolOpts describe a test pool.
type poolOpts struct {
	// Labels are the NodePool object labels.
	Labels map[string]string
	// Taints are the pool's spec.taints.
	Taints []corev1.Taint
	// Members is the number of fake nodes created in the pool (they join through the membership label).
	Members int
	// Name, if set, is used instead of a generated one.
	Name string
}

// uniqueName returns prefix-<5 random characters>, a valid label value when prefix is short.
func uniqueName(prefix string) string { return prefix + "-" + utilrand.String(5) }

// newTestPool creates a NodePool and its fake members. Cleanup deletes the nodes first and then the pool (the
// NodePool webhook refuses to delete a pool that still has members).
func newTestPool(o poolOpts) testPool {
	GinkgoHelper()
	name := o.Name
	if name == "" {
		name = uniqueName("e2e-yad")
	}
	pool := &openyurtv1beta1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: o.Labels},
		Spec:       openyurtv1beta1.NodePoolSpec{Type: openyurtv1beta1.Edge, Taints: o.Taints},
	}
	Expect(k8sClient.Create(suiteCtx, pool)).To(Succeed())
	DeferCleanup(func() {
		Eventually(func() error { return client.IgnoreNotFound(k8sClient.Delete(suiteCtx, pool)) }).
			WithTimeout(timeout).WithPolling(interval).Should(Succeed(), "deleting NodePool %s", name)
	})
	tp := testPool{Name: name}
	for i := range o.Members {
		node := localcluster.FakeNode(localcluster.NodeSpec{Name: fmt.Sprintf("%s-n%d", name, i), Pool: name, Zone: "zone-e2e"})
		Expect(k8sClient.Create(suiteCtx, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, node))).To(Succeed()) })
		tp.Nodes = append(tp.Nodes, node.Name)
	}
	if o.Members > 0 {
		// The pool counts its Ready members once kwok runs them and the NodePool controller saw them.
		Eventually(func(g Gomega) {
			var np openyurtv1beta1.NodePool
			g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, &np)).To(Succeed())
			g.Expect(np.Status.ReadyNodeNum).To(BeEquivalentTo(o.Members))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed(), "NodePool %s counts its %d Ready nodes", name, o.Members)
	}
	return tp
}

// setPoolLabels replaces the NodePool object labels with labels plus what the defaulting webhook owns.
func setPoolLabels(name string, labels map[string]string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var np openyurtv1beta1.NodePool
		if err := k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, &np); err != nil {
			return err
		}
		keep := map[string]string{}
		if v, ok := np.Labels[openyurtv1beta1.LabelNodePoolType]; ok {
			keep[openyurtv1beta1.LabelNodePoolType] = v
		}
		for k, v := range labels {
			keep[k] = v
		}
		np.Labels = keep
		return k8sClient.Update(suiteCtx, &np)
	})).To(Succeed())
}

// setPoolTaints replaces the NodePool's spec.taints.
func setPoolTaints(name string, taints []corev1.Taint) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var np openyurtv1beta1.NodePool
		if err := k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, &np); err != nil {
			return err
		}
		np.Spec.Taints = taints
		return k8sClient.Update(suiteCtx, &np)
	})).To(Succeed())
}

// podTemplate is the pod template of the test workloads: labels, one container, and the user's own
// nodeSelector key that every fake node satisfies.
func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{kwokNodeLabel: "kwok"},
			Containers:   []corev1.Container{{Name: "app", Image: e2eImage}},
		},
	}
}

// deploymentSpec is an owner spec with a Deployment template of the given replicas (nil leaves them unset),
// selecting pools whose e2eSelectLabel is selectValue.
func deploymentSpec(app, selectValue string, replicas *int32) openyurtv1alpha1.YurtAppDaemonSpec {
	labels := map[string]string{"app": app}
	return openyurtv1alpha1.YurtAppDaemonSpec{
		Selector:         &metav1.LabelSelector{MatchLabels: labels},
		NodePoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{e2eSelectLabel: selectValue}},
		WorkloadTemplate: openyurtv1alpha1.WorkloadTemplate{DeploymentTemplate: &openyurtv1alpha1.DeploymentTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app, "tier": "edge"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: podTemplate(labels),
			},
		}},
	}
}

// statefulSetSpec is an owner spec with a StatefulSet template (no volume claim templates: the local
// cluster has no storage provisioner).
func statefulSetSpec(app, selectValue string, replicas int32) openyurtv1alpha1.YurtAppDaemonSpec {
	labels := map[string]string{"app": app}
	return openyurtv1alpha1.YurtAppDaemonSpec{
		Selector:         &metav1.LabelSelector{MatchLabels: labels},
		NodePoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{e2eSelectLabel: selectValue}},
		WorkloadTemplate: openyurtv1alpha1.WorkloadTemplate{StatefulSetTemplate: &openyurtv1alpha1.StatefulSetTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To(replicas),
				ServiceName: app,
				Selector:    &metav1.LabelSelector{MatchLabels: labels},
				Template:    podTemplate(labels),
			},
		}},
	}
}

// createOwner creates an owner of kind k and deletes it when the spec ends (its children go with it).
func createOwner(k ownerKind, ns, name string, spec openyurtv1alpha1.YurtAppDaemonSpec) openyurtv1alpha1.Owner {
	GinkgoHelper()
	o := k.New()
	o.SetNamespace(ns)
	o.SetName(name)
	*o.DaemonSpec() = spec
	Expect(k8sClient.Create(suiteCtx, o)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, o))).To(Succeed()) })
	return o
}

// getOwner reads the owner ns/name of kind k.
func getOwner(g Gomega, k ownerKind, ns, name string) openyurtv1alpha1.Owner {
	o := k.New()
	g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, o)).To(Succeed())
	return o
}

// updateOwner changes the owner's spec, retrying on conflicts.
func updateOwner(k ownerKind, ns, name string, change func(*openyurtv1alpha1.YurtAppDaemonSpec)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		o := k.New()
		if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			return err
		}
		change(o.DaemonSpec())
		return k8sClient.Update(suiteCtx, o)
	})).To(Succeed())
}

// expectOwnerSettled checks the owner's status: written for its generation, the eligible pools (sorted), the
// three conditions with success reasons and observedGeneration, and the counters.
func expectOwnerSettled(g Gomega, k ownerKind, ns, name string, pools ...string) openyurtv1alpha1.Owner {
	o := getOwner(g, k, ns, name)
	st := o.DaemonStatus()
	want := slices.Sorted(slices.Values(pools))
	g.Expect(st.ObservedGeneration).To(Equal(o.GetGeneration()), "status.observedGeneration")
	g.Expect(st.NodePools).To(Equal(want), "status.nodepools")
	g.Expect(st.CurrentRevision).NotTo(BeEmpty(), "status.currentRevision")
	g.Expect(st.TotalWorkloads).To(BeEquivalentTo(len(pools)), "status.totalWorkloads")
	wantProvisioned := openyurtv1alpha1.ReasonAllProvisioned
	if len(pools) == 0 {
		wantProvisioned = openyurtv1alpha1.ReasonNoNodePoolsSelected
	}
	for _, c := range []struct{ typ, status, reason string }{
		{openyurtv1alpha1.WorkLoadProvisioned, "True", wantProvisioned},
		{openyurtv1alpha1.WorkLoadUpdated, "True", openyurtv1alpha1.ReasonAllUpdated},
		{openyurtv1alpha1.WorkLoadFailure, "False", openyurtv1alpha1.ReasonNoFailure},
	} {
		g.Expect(st.Conditions).To(ContainElement(And(
			HaveField("Type", c.typ),
			HaveField("Status", metav1.ConditionStatus(c.status)),
			HaveField("Reason", c.reason),
			HaveField("ObservedGeneration", o.GetGeneration()),
		)), "condition %s", c.typ)
	}
	return o
}

// childName is the deterministic child name: <owner>-<pool> when it fits the workload kind's
// limit, else a prefix cut to limit-11 characters and the first 10 hex characters of
// SHA-256("<owner>/<pool>").
func childName(owner, pool string, statefulSet bool) string {
	base := owner + "-" + pool
	limit := 242
	fits := len(base) <= limit && len(validation.IsDNS1123Subdomain(base)) == 0
	if statefulSet {
		limit = 52
		fits = len(base) <= limit && len(validation.IsDNS1123Label(base)) == 0
	}
	if fits {
		return base
	}
	sum := sha256.Sum256([]byte(owner + "/" + pool))
	prefix := base
	if statefulSet {
		prefix = strings.ReplaceAll(prefix, ".", "-")
	}
	prefix = strings.TrimRight(prefix[:min(len(prefix), limit-11)], "-.")
	return prefix + "-" + hex.EncodeToString(sum[:])[:10]
}

// getDeployment reads a Deployment.
func getDeployment(g Gomega, ns, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed(), "Deployment %s/%s", ns, name)
	return d
}

// expectChildRendered checks what every child carries for its pool and owner: identity labels
// and annotation, the selector, the pod labels (without the revision label), the pool's nodeSelector next to
// the user's, and the controller ownerReference. The arguments are the child's metadata, selector and pod
// template.
func expectChildRendered(g Gomega, owner openyurtv1alpha1.Owner, k ownerKind, pool string,
	meta *metav1.ObjectMeta, selector *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec) {
	g.Expect(meta.Labels).To(HaveKeyWithValue(openyurtv1alpha1.LabelPoolName, pool))
	g.Expect(meta.Labels).To(HaveKey(openyurtv1alpha1.LabelControllerRevisionHash))
	for key, v := range owner.DaemonSpec().Selector.MatchLabels {
		g.Expect(meta.Labels).To(HaveKeyWithValue(key, v))
		g.Expect(selector.MatchLabels).To(HaveKeyWithValue(key, v))
	}
	g.Expect(meta.Annotations).To(HaveKeyWithValue(openyurtv1alpha1.AnnotationRefNodePool, pool))
	g.Expect(selector.MatchLabels).To(HaveKeyWithValue(openyurtv1alpha1.LabelPoolName, pool))
	g.Expect(tmpl.Labels).To(HaveKeyWithValue(openyurtv1alpha1.LabelPoolName, pool))
	g.Expect(tmpl.Labels).NotTo(HaveKey(openyurtv1alpha1.LabelControllerRevisionHash), "no revision label on pods")
	g.Expect(tmpl.Spec.NodeSelector).To(Equal(map[string]string{
		openyurtv1beta1.LabelCurrentNodePool: pool,
		kwokNodeLabel:                        "kwok",
	}), "the pool's key ANDed with the user's nodeSelector")
	g.Expect(meta.OwnerReferences).To(ContainElement(And(
		HaveField("Kind", k.Kind),
		HaveField("Name", owner.GetName()),
		HaveField("UID", owner.GetUID()),
		HaveField("Controller", HaveValue(BeTrue())),
		HaveField("BlockOwnerDeletion", HaveValue(BeTrue())),
	)))
}

// poolPods lists the pods of app in ns that belong to pool (by the pool-name label drover puts on pods).
func poolPods(g Gomega, ns, app, pool string) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(k8sClient.List(suiteCtx, &pods, client.InNamespace(ns),
		client.MatchingLabels{"app": app, openyurtv1alpha1.LabelPoolName: pool})).To(Succeed())
	return pods.Items
}

// expectPodsRunningOn checks that exactly n pods of app run, Ready, on the nodes of pool, with image, and
// returns their UIDs.
func expectPodsRunningOn(g Gomega, ns, app string, pool testPool, n int, image string) []types.UID {
	pods := poolPods(g, ns, app, pool.Name)
	g.Expect(pods).To(HaveLen(n), "pods of %s in pool %s", app, pool.Name)
	uids := make([]types.UID, 0, len(pods))
	for _, p := range pods {
		g.Expect(p.DeletionTimestamp).To(BeNil(), "pod %s", p.Name)
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
		g.Expect(podReady(&p)).To(BeTrue(), "pod %s Ready", p.Name)
		g.Expect(p.Spec.NodeName).To(BeElementOf(pool.Nodes), "pod %s runs on a node of pool %s", p.Name, pool.Name)
		g.Expect(p.Spec.Containers[0].Image).To(Equal(image), "pod %s", p.Name)
		uids = append(uids, p.UID)
	}
	slices.Sort(uids)
	return uids
}

// podUIDs returns the sorted UIDs of the pods of app in pool.
func podUIDs(g Gomega, ns, app, pool string) []types.UID {
	var uids []types.UID
	for _, p := range poolPods(g, ns, app, pool) {
		uids = append(uids, p.UID)
	}
	slices.Sort(uids)
	return uids
}

// ownedBy reports whether obj has a controller ownerReference with uid.
func ownedBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

// replicaSetUIDs returns the UIDs of the ReplicaSets of app in pool.
func replicaSetUIDs(g Gomega, ns, app, pool string) []types.UID {
	var list appsv1.ReplicaSetList
	g.Expect(k8sClient.List(suiteCtx, &list, client.InNamespace(ns),
		client.MatchingLabels{"app": app, openyurtv1alpha1.LabelPoolName: pool})).To(Succeed())
	var uids []types.UID
	for _, rs := range list.Items {
		uids = append(uids, rs.UID)
	}
	slices.Sort(uids)
	return uids
}

// toleratesTaint reports whether tolerations hold the toleration drover renders for a pool taint.
func toleratesTaint(tolerations []corev1.Toleration, taint corev1.Taint) bool {
	return slices.ContainsFunc(tolerations, func(t corev1.Toleration) bool {
		return t.Key == taint.Key && t.Operator == corev1.TolerationOpExists && t.Effect == taint.Effect
	})
}

// containerEnv returns the value of the env var name of the first container, or "".
func containerEnv(spec *corev1.PodSpec, name string) string {
	for _, e := range spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
