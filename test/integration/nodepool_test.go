package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/testutil"
)

// The NodePool tests create cluster-scoped objects, so every name carries a per-spec suffix.
var _ = Describe("NodePool", func() {
	var (
		ctx    context.Context
		suffix string
	)
	BeforeEach(func() {
		ctx = context.Background()
		suffix = fmt.Sprintf("%d", GinkgoRandomSeed()%1000) + "-" + fmt.Sprint(CurrentSpecReport().LeafNodeLocation.LineNumber)
	})

	name := func(base string) string { return base + "-" + suffix }

	createPool := func(p *openyurtv1beta1.NodePool) *openyurtv1beta1.NodePool {
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() {
			// Members are released first so the delete webhook lets the pool go.
			nodes := &corev1.NodeList{}
			Expect(k8sClient.List(ctx, nodes, client.MatchingLabels{openyurtv1beta1.LabelCurrentNodePool: p.Name})).To(Succeed())
			for i := range nodes.Items {
				Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, &nodes.Items[i]))).To(Succeed())
			}
			Eventually(func() error { return client.IgnoreNotFound(k8sClient.Delete(ctx, p)) }).Should(Succeed())
		})
		return p
	}
	createNode := func(n *corev1.Node) *corev1.Node {
		status := n.Status
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		// Node status is a subresource: set the Ready condition the way a kubelet would. The controller may
		// patch the node meanwhile, so retry on conflicts.
		Eventually(func() error {
			cur := &corev1.Node{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(n), cur); err != nil {
				return err
			}
			cur.Status = status
			return k8sClient.Status().Update(ctx, cur)
		}).Should(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, n))).To(Succeed()) })
		return n
	}
	setReady := func(n *corev1.Node, ready bool) {
		Eventually(func() error {
			cur := &corev1.Node{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(n), cur); err != nil {
				return err
			}
			cur.Status.Conditions = testutil.MakeNode(cur.Name).Ready(ready).Obj().Status.Conditions
			return k8sClient.Status().Update(ctx, cur)
		}).Should(Succeed())
	}
	poolStatus := func(p *openyurtv1beta1.NodePool) func() openyurtv1beta1.NodePoolStatus {
		return func() openyurtv1beta1.NodePoolStatus {
			cur := &openyurtv1beta1.NodePool{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), cur)).To(Succeed())
			return cur.Status
		}
	}
	getNode := func(n *corev1.Node) func() *corev1.Node {
		return func() *corev1.Node {
			cur := &corev1.Node{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(n), cur)).To(Succeed())
			return cur
		}
	}

	Context("admission", func() {
		It("defaults the type and the type label", func() {
			p := createPool(testutil.MakeNodePool(name("defaults")).Obj())
			Expect(p.Spec.Type).To(Equal(openyurtv1beta1.Edge))
			Expect(p.Labels).To(HaveKeyWithValue(openyurtv1beta1.LabelNodePoolType, "edge"))
		})

		It("rejects bad input with 422 and a field path for every error", func() {
			p := testutil.MakeNodePool(name("bad")).
				Labels(map[string]string{"bad key!": "v"}).
				Taints(corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule},
					corev1.Taint{Key: "k", Value: "w", Effect: corev1.TaintEffectNoSchedule}).
				Obj()
			err := k8sClient.Create(ctx, p)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(causeFields(err)).To(ContainElements(HavePrefix("spec.labels"), HavePrefix("spec.taints[1]")))
		})

		It("rejects hostNetwork on a Cloud pool", func() {
			p := testutil.MakeNodePool(name("cloudhost")).Type(openyurtv1beta1.Cloud).Obj()
			p.Spec.HostNetwork = true
			err := k8sClient.Create(ctx, p)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		})

		It("keeps the type immutable", func() {
			p := createPool(testutil.MakeNodePool(name("immutable")).Obj())
			p.Spec.Type = openyurtv1beta1.Cloud
			err := k8sClient.Update(ctx, p)
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsInvalid(err) || apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring("spec.type"))
		})

		It("refuses to delete a pool that still has nodes, and allows it once they left", func() {
			p := createPool(testutil.MakeNodePool(name("busy")).Obj())
			n := createNode(testutil.MakeNode(name("busy-n1")).Pool(p.Name).Ready(true).Obj())
			err := k8sClient.Delete(ctx, p)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring("1 node"))

			Expect(k8sClient.Delete(ctx, n)).To(Succeed())
			Eventually(func() error { return k8sClient.Delete(ctx, p) }).Should(Succeed())
		})
	})

	Context("controller", func() {
		It("counts members as they join, change readiness and leave", func() {
			p := createPool(testutil.MakeNodePool(name("count")).Obj())
			n1 := createNode(testutil.MakeNode(name("count-n1")).Pool(p.Name).Ready(true).Obj())
			n2 := createNode(testutil.MakeNode(name("count-n2")).Pool(p.Name).Ready(false).Obj())
			createNode(testutil.MakeNode(name("count-other")).Ready(true).Obj())

			Eventually(poolStatus(p)).Should(Equal(openyurtv1beta1.NodePoolStatus{
				ReadyNodeNum: 1, UnreadyNodeNum: 1, Nodes: []string{n1.Name, n2.Name},
			}))

			setReady(n2, true)
			Eventually(poolStatus(p)).Should(HaveField("ReadyNodeNum", int32(2)))

			setReady(n1, false)
			Eventually(poolStatus(p)).Should(And(HaveField("ReadyNodeNum", int32(1)), HaveField("UnreadyNodeNum", int32(1))))

			Expect(k8sClient.Delete(ctx, n1)).To(Succeed())
			Eventually(poolStatus(p)).Should(Equal(openyurtv1beta1.NodePoolStatus{
				ReadyNodeNum: 1, UnreadyNodeNum: 0, Nodes: []string{n2.Name},
			}))
		})

		It("pushes pool attributes to members, cleans removed ones and strips nodes that leave", func() {
			p := createPool(testutil.MakeNodePool(name("attrs")).
				Labels(map[string]string{"region": "east", "tier": "edge"}).
				Taints(corev1.Taint{Key: "edge", Value: "true", Effect: corev1.TaintEffectNoSchedule}).
				Obj())
			n := createNode(testutil.MakeNode(name("attrs-n1")).Pool(p.Name).Ready(true).Obj())

			Eventually(getNode(n)).Should(And(
				HaveField("Labels", And(HaveKeyWithValue("region", "east"), HaveKeyWithValue("tier", "edge"))),
				HaveField("Spec.Taints", ContainElement(HaveField("Key", "edge"))),
				HaveField("Annotations", HaveKey(openyurtv1beta1.AnnotationPrevAttrs)),
			))
			var prev map[string]json.RawMessage
			Expect(json.Unmarshal([]byte(getNode(n)().Annotations[openyurtv1beta1.AnnotationPrevAttrs]), &prev)).To(Succeed())
			Expect(prev).To(HaveKey("labels"))
			Expect(prev).To(HaveKey("taints"))

			// Removing a pool label removes it from the node.
			Eventually(func() error {
				cur := &openyurtv1beta1.NodePool{}
				if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
					return err
				}
				delete(cur.Spec.Labels, "tier")
				return k8sClient.Update(ctx, cur)
			}).Should(Succeed())
			Eventually(getNode(n)).Should(HaveField("Labels", And(Not(HaveKey("tier")), HaveKeyWithValue("region", "east"))))

			// A node that leaves the pool loses what the pool gave it.
			Eventually(func() error {
				cur := getNode(n)()
				delete(cur.Labels, openyurtv1beta1.LabelCurrentNodePool)
				return k8sClient.Update(ctx, cur)
			}).Should(Succeed())
			Eventually(getNode(n)).Should(And(
				HaveField("Labels", Not(HaveKey("region"))),
				HaveField("Spec.Taints", Not(ContainElement(HaveField("Key", "edge")))),
				HaveField("Annotations", Not(HaveKey(openyurtv1beta1.AnnotationPrevAttrs))),
			))
			Eventually(poolStatus(p)).Should(HaveField("Nodes", BeEmpty()))
		})

		It("joins a node that asks for a pool through the desired-nodepool label", func() {
			p := createPool(testutil.MakeNodePool(name("join")).Obj())
			n := createNode(testutil.MakeNode(name("join-n1")).DesiredPool(p.Name).Ready(true).Obj())
			Eventually(getNode(n)).Should(HaveField("Labels", HaveKeyWithValue(openyurtv1beta1.LabelCurrentNodePool, p.Name)))
			Eventually(poolStatus(p)).Should(HaveField("Nodes", ConsistOf(n.Name)))
		})

		It("makes no write once converged, whatever triggers it", func() {
			p := createPool(testutil.MakeNodePool(name("quiet")).Labels(map[string]string{"a": "b"}).Obj())
			n := createNode(testutil.MakeNode(name("quiet-n1")).Pool(p.Name).Ready(true).Obj())
			Eventually(poolStatus(p)).Should(HaveField("ReadyNodeNum", int32(1)))
			Eventually(getNode(n)).Should(HaveField("Labels", HaveKeyWithValue("a", "b")))
			// editLabels edits the node's labels and returns the resourceVersion of the edit.
			editLabels := func(edit func(map[string]string)) string {
				var rv string
				Eventually(func() error {
					cur := getNode(n)()
					edit(cur.Labels)
					err := k8sClient.Update(ctx, cur)
					rv = cur.ResourceVersion
					return err
				}).Should(Succeed())
				return rv
			}

			By("a label change on the member reconciles its pool: a pool label removed by hand comes back")
			editLabels(func(l map[string]string) { delete(l, "a") })
			Eventually(getNode(n)).Should(HaveField("Labels", HaveKeyWithValue("a", "b")))

			By("a change that matters to nobody is reconciled and writes nothing")
			poolRV := func() string {
				cur := &openyurtv1beta1.NodePool{}
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), cur)).To(Succeed())
				return cur.ResourceVersion
			}
			beforePool := poolRV()
			passes := reconcileTotal("nodepool")
			nodeRV := editLabels(func(l map[string]string) { l["unrelated"] = "x" })
			Eventually(func() float64 { return reconcileTotal("nodepool") }).Should(BeNumerically(">", passes), "no NodePool pass ran after the nudge")
			Consistently(func() string { return getNode(n)().ResourceVersion }, "2s").Should(Equal(nodeRV))
			Expect(poolRV()).To(Equal(beforePool))
		})
	})
})

// causeFields returns the field paths of the causes of an API status error.
func causeFields(err error) []string {
	var fields []string
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	return fields
}
