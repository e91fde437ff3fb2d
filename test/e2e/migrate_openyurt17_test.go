package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/localcluster"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/yurtappdaemon"
)

// withoutOpenYurt is the manager's --controllers without its three OpenYurt controllers (NodePool,
// YurtAppDaemon, UnitedDaemonSet): drover not yet (or no longer) running them, their webhooks admitting every
// object unchanged.
const withoutOpenYurt = "--controllers=tapp,persistentpodstate,stagedbindingpolicy"

const (
	nodePoolCRD, nodePoolCRDFile = "nodepools.apps.openyurt.io", "apps.openyurt.io_nodepools.yaml"
	yadCRD, yadCRDFile           = "yurtappdaemons.apps.openyurt.io", "apps.openyurt.io_yurtappdaemons.yaml"
	// The Service of OpenYurt's conversion webhook, hard-coded in its NodePool CRD.
	yurtManagerNamespace, yurtManagerWebhook = "kube-system", "yurt-manager-webhook-service"
)

// The move from OpenYurt 1.7 (docs/migrate/openyurt.md, "OpenYurt 1.7"), drover taking NodePools and
// YurtAppDaemons over once yurt-manager is stopped (it cannot run here). The state 1.7 leaves: a YurtAppDaemon
// and its children as 1.6 left them, stored under a CRD whose v1alpha1 is no longer served; the NodePool CRD
// serving v1alpha1, v1beta1 and v1beta2, stored in v1beta2, converting through yurt-manager's Service (gone);
// NodePools with the v1beta2 fields 1.7's webhook defaults and the status its NodePool and hub-leader
// controllers wrote. The switch keeps every object and its UID, and the rollback leaves them to yurt-manager.
var _ = Describe("Moving from OpenYurt 1.7's yurt-manager", Ordered, func() {
	const app = "moved-yad17"
	var ns, sel, revision string
	var pools []testPool
	var yad *openyurtv1alpha1.YurtAppDaemon
	written := map[string]*openyurtv1beta2.NodePool{} // each pool as yurt-manager 1.7 left it
	before := map[string]childState{}                 // by pool
	taint := corev1.Taint{Key: "e2e.drover.dev/edge", Effect: corev1.TaintEffectNoSchedule}

	BeforeAll(func() {
		Expect(cluster.RestartManager(suiteCtx, withoutOpenYurt)).To(Succeed())
		DeferCleanup(func() { Expect(cluster.RestartManager(suiteCtx)).To(Succeed()) })
		ns = newNamespace("e2e-move-yurt17")
		sel = uniqueName("move17")
		// Pools and nodes of this spec alone. The first pool has a second member, joined after yurt-manager
		// was stopped (the status 1.7 wrote does not count it), and a taint; the second elects by mark.
		pools = []testPool{newYurt17Pool(sel, 2, []corev1.Taint{taint}, nil), newYurt17Pool(sel, 1, nil,
			func(s *openyurtv1beta2.NodePoolSpec) {
				s.LeaderElectionStrategy, s.LeaderNodeLabelSelector = string(openyurtv1beta2.ElectionStrategyMark), map[string]string{"e2e.drover.dev/leader": "true"}
				s.EnableLeaderElection, s.InterConnectivity, s.LeaderReplicas = true, true, 2
			})}
		// Run first (LIFO): whatever happened, the other specs get drover's CRDs back.
		DeferCleanup(func() {
			applyDroverCRD("nodepool", nodePoolCRDFile)
			applyDroverCRD("yurtappdaemon", yadCRDFile)
		})
	})

	It("starts from the state OpenYurt 1.7 leaves", func() {
		setNodePoolConversion(yurtManagerNamespace, yurtManagerWebhook, "v1beta1", "v1alpha1")
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		for _, p := range pools {
			np := &openyurtv1beta2.NodePool{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Name}, np)).To(Succeed())
			np.Status = openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, Nodes: p.Nodes[:1],
				LeaderEndpoints: []openyurtv1beta2.Leader{{NodeName: p.Nodes[0], Address: "192.0.2.10"}}, LeaderNum: 1,
				LeaderLastElectedTime: now, Conditions: []openyurtv1beta2.NodePoolCondition{{Type: openyurtv1beta2.LeaderStatus,
					Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "LeaderElected", Message: "1 leader(s) elected"}}}
			Expect(k8sClient.Status().Update(suiteCtx, np)).To(Succeed())
			written[p.Name] = np
		}

		setYurtAppDaemonServed(true) // as under OpenYurt 1.6
		yad = upstreamYurtAppDaemon(ns, app, sel)
		Expect(k8sClient.Create(suiteCtx, yad)).To(Succeed())
		cr := upstreamControllerRevision(yad)
		revision = cr.Name
		Expect(k8sClient.Create(suiteCtx, cr)).To(Succeed())
		yad.Status = openyurtv1alpha1.YurtAppDaemonStatus{ObservedGeneration: yad.Generation, CollisionCount: ptr.To[int32](0),
			CurrentRevision: revision, TemplateType: openyurtv1alpha1.DeploymentTemplateType,
			NodePools: []string{pools[1].Name, pools[0].Name}}
		Expect(k8sClient.Status().Update(suiteCtx, yad)).To(Succeed())
		for _, p := range pools {
			np := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Spec: openyurtv1beta1.NodePoolSpec{Taints: written[p.Name].Spec.Taints}}
			Expect(k8sClient.Create(suiteCtx, upstreamYADChild(yad, np, revision))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			for _, p := range pools {
				d := poolChild(g, ns, app, p.Name)
				g.Expect(expectPodsRunningOn(g, ns, app, p, 1, e2eImage)).To(HaveLen(1))
				before[p.Name] = childState{uid: d.UID, template: d.Spec.Template, spec: d.Spec,
					pods: podUIDs(g, ns, app, p.Name), replicaSet: replicaSetUIDs(g, ns, app, p.Name)}
			}
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		By("upgrading to 1.7: the YurtAppDaemon CRD's v1alpha1 no longer served")
		setYurtAppDaemonServed(false)
		Eventually(func() error {
			return k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(yad), &openyurtv1alpha1.YurtAppDaemon{})
		}).
			WithTimeout(timeout).WithPolling(interval).Should(HaveOccurred())
		// With yurt-manager stopped nothing converts: the pools read in v1beta2 (stored) only.
		Eventually(func() error { _, err := getNodePoolIn("v1beta1", pools[0].Name); return err }).
			WithTimeout(timeout).WithPolling(interval).Should(MatchError(ContainSubstring(yurtManagerWebhook)))
	})

	It("previews the switch: each child relabelled, nothing restarted", func() {
		applyDroverCRD("yurtappdaemon", yadCRDFile) // v1alpha1 served again; no controller acts on it yet
		Eventually(func() error {
			return k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(yad), &openyurtv1alpha1.YurtAppDaemon{})
		}).
			WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		// The preview reads the NodePools as stored (v1beta2): it needs no conversion, so it runs with
		// yurt-manager stopped, whose conversion webhook answers no one.
		reports, err := yurtappdaemon.PreviewYurtAppDaemons(suiteCtx, k8sClient, ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(reports).To(HaveLen(1))
		Expect(preview.Write(GinkgoWriter, reports, true)).To(Succeed())
		effects := map[string]preview.Effect{}
		for _, it := range reports[0].Items {
			effects[it.Object] = it.Effect
		}
		want := map[string]preview.Effect{"ControllerRevision " + revision: preview.Keep, "YurtAppDaemon " + app: preview.Relabel}
		for _, p := range pools {
			want["Deployment "+poolChild(Default, ns, app, p.Name).Name] = preview.Relabel
		}
		Expect(effects).To(Equal(want))
		Expect(reports[0].Restarting()).To(BeEmpty())
		Expect(reports[0].Notices).To(BeEmpty())
	})

	It("switches to drover: every NodePool in every version and every child kept, the status taken over", func() {
		applyDroverCRD("nodepool", nodePoolCRDFile)
		Expect(cluster.RestartManager(suiteCtx)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, p := range pools {
				expectPoolKept(g, p, written[p.Name], true)
			}
			got := &openyurtv1alpha1.YurtAppDaemon{}
			g.Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(yad), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.CurrentRevision).To(Equal(revision))
			g.Expect(got.Status.TotalWorkloads).To(BeEquivalentTo(2), "drover's own counters")
			g.Expect(got.Status.ReadyWorkloads).To(BeEquivalentTo(2))
			failure := findCondition(got.Status.Conditions, openyurtv1alpha1.WorkLoadFailure)
			g.Expect(failure).NotTo(BeNil())
			g.Expect(failure.Status).To(Equal(metav1.ConditionFalse), "WorkLoadFailure: %s", failure.Message)
			for _, p := range pools {
				d := poolChild(g, ns, app, p.Name)
				g.Expect(d.Annotations).To(HaveKey(openyurtv1alpha1.AnnotationRenderedHash), "drover applied %s", d.Name)
			}
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		expectChildrenAsBefore(ns, app, pools, revision, before)
		Consistently(func(g Gomega) {
			for _, p := range pools {
				expectPoolKept(g, p, written[p.Name], true)
			}
		}).WithTimeout(3 * time.Second).WithPolling(interval).Should(Succeed())
	})

	It("rolls back to yurt-manager 1.7: every NodePool and child kept", func() {
		Expect(cluster.RestartManager(suiteCtx, withoutOpenYurt)).To(Succeed())
		setNodePoolConversion(yurtManagerNamespace, yurtManagerWebhook, "v1beta1", "v1alpha1")
		setYurtAppDaemonServed(false)
		Consistently(func(g Gomega) {
			for _, p := range pools {
				expectPoolKept(g, p, written[p.Name], false)
			}
		}).WithTimeout(3 * time.Second).WithPolling(interval).Should(Succeed())
		expectChildrenAsBefore(ns, app, pools, revision, before)
	})
})

var nodePoolCRDVersions = []string{"v1alpha1", "v1beta1", "v1beta2"}

// newYurt17Pool creates a NodePool in v1beta2 as OpenYurt 1.7's webhook stores it (type Edge and its label,
// leaderElectionStrategy random, leaderReplicas 1, poolScopeMetadata; then change, if any) and members fake
// nodes, carrying the pool's taints as OpenYurt's pool controller wrote them. Cleanup deletes nodes, then pool.
func newYurt17Pool(sel string, members int, taints []corev1.Taint, change func(*openyurtv1beta2.NodePoolSpec)) testPool {
	GinkgoHelper()
	np := &openyurtv1beta2.NodePool{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("e2e-y17"),
		Labels: map[string]string{e2eSelectLabel: sel, openyurtv1beta2.LabelNodePoolType: "edge"}},
		Spec: openyurtv1beta2.NodePoolSpec{Type: openyurtv1beta2.Edge, Taints: taints,
			LeaderElectionStrategy: string(openyurtv1beta2.ElectionStrategyRandom), LeaderReplicas: 1,
			PoolScopeMetadata: []metav1.GroupVersionResource{{Version: "v1", Resource: "services"},
				{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}}}}
	if change != nil {
		change(&np.Spec)
	}
	Expect(k8sClient.Create(suiteCtx, np)).To(Succeed())
	DeferCleanup(func() {
		Eventually(func() error { return client.IgnoreNotFound(k8sClient.Delete(suiteCtx, np)) }).
			WithTimeout(timeout).WithPolling(interval).Should(Succeed(), "deleting NodePool %s", np.Name)
	})
	tp := testPool{Name: np.Name}
	for i := range members {
		node := localcluster.FakeNode(localcluster.NodeSpec{Name: fmt.Sprintf("%s-n%d", np.Name, i), Pool: np.Name, Zone: "zone-e2e"})
		node.Spec.Taints = taints
		Expect(k8sClient.Create(suiteCtx, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, node))).To(Succeed()) })
		tp.Nodes = append(tp.Nodes, node.Name)
	}
	return tp
}

// expectPoolKept checks pool p against the pool as 1.7 left it (want): the same UID in every version (only
// v1beta2 when converted is false: no webhook converts), the v1beta2 spec and election status as 1.7 wrote
// them. drover's NodePool controller recomputes the member counts and names (readyNodeNum, unreadyNodeNum,
// nodes) from the nodes, here counting the member 1.7 had not; the election status is not its to write.
func expectPoolKept(g Gomega, p testPool, want *openyurtv1beta2.NodePool, converted bool) {
	versions := nodePoolCRDVersions[2:]
	if converted {
		versions = nodePoolCRDVersions
	}
	for _, v := range versions {
		u, err := getNodePoolIn(v, p.Name)
		g.Expect(err).NotTo(HaveOccurred(), v)
		g.Expect(u.GetUID()).To(Equal(want.UID), v)
		if v != "v1beta2" {
			g.Expect(u.GetAnnotations()).To(HaveKey(openyurtv1beta2.AnnotationConversionData), "%s holds the election fields", v)
		}
	}
	got := &openyurtv1beta2.NodePool{}
	g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Name}, got)).To(Succeed())
	g.Expect(apiequality.Semantic.DeepEqual(got.Spec, want.Spec)).To(BeTrue(), "spec of %s: %+v", p.Name, got.Spec)
	s, w := got.Status, want.Status
	g.Expect(apiequality.Semantic.DeepEqual([]any{s.LeaderEndpoints, s.LeaderNum, s.LeaderLastElectedTime, s.Conditions},
		[]any{w.LeaderEndpoints, w.LeaderNum, w.LeaderLastElectedTime, w.Conditions})).To(BeTrue(), "election status of %s: %+v", p.Name, s)
	if converted { // drover ran
		g.Expect([]any{s.ReadyNodeNum, s.UnreadyNodeNum, s.Nodes}).To(Equal([]any{int32(len(p.Nodes)), int32(0), p.Nodes}), p.Name)
	}
}

// getNodePoolIn reads NodePool name in version (apps.openyurt.io/<version>).
func getNodePoolIn(version, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(openyurtv1beta2.GroupVersion.WithKind("NodePool"))
	u.SetAPIVersion("apps.openyurt.io/" + version)
	return u, k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, u)
}

// setNodePoolConversion points the NodePool CRD's conversion webhook at namespace/name, path /convert, with
// reviewVersions and no caBundle (yurt-manager writes its own, and drover's manager its own into a CRD calling it).
func setNodePoolConversion(namespace, name string, reviewVersions ...string) {
	GinkgoHelper()
	versions := make([]any, 0, len(reviewVersions))
	for _, v := range reviewVersions {
		versions = append(versions, v)
	}
	updateCRD(nodePoolCRD, func(crd *unstructured.Unstructured) error {
		return unstructured.SetNestedMap(crd.Object, map[string]any{"strategy": "Webhook", "webhook": map[string]any{
			"clientConfig": map[string]any{"service": map[string]any{
				"namespace": namespace, "name": name, "path": "/convert", "port": int64(443)}},
			"conversionReviewVersions": versions}}, "spec", "conversion")
	})
}

// setYurtAppDaemonServed sets served on every version of the YurtAppDaemon CRD (OpenYurt 1.7's serves none).
func setYurtAppDaemonServed(served bool) {
	GinkgoHelper()
	updateCRD(yadCRD, func(crd *unstructured.Unstructured) error {
		versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			v.(map[string]any)["served"] = served
		}
		if err != nil {
			return err
		}
		return unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
	})
}

// updateCRD reads the CRD name, changes it and writes it back, retried until the write succeeds.
func updateCRD(name string, change func(*unstructured.Unstructured) error) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, crd)).To(Succeed())
		g.Expect(change(crd)).To(Succeed())
		g.Expect(k8sClient.Update(suiteCtx, crd)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
