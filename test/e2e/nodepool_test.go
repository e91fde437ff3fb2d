package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/localcluster"
)

// NodePool end to end: kwok makes the fake nodes Ready, the real manager (as its ServiceAccount) keeps
// membership, attributes and status.
var _ = Describe("NodePool", func() {
	getPool := func(name string) func() *openyurtv1beta1.NodePool {
		return func() *openyurtv1beta1.NodePool {
			p := &openyurtv1beta1.NodePool{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, p)).To(Succeed())
			return p
		}
	}
	getNode := func(name string) func() *corev1.Node {
		return func() *corev1.Node {
			n := &corev1.Node{}
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, n)).To(Succeed())
			return n
		}
	}

	It("counts fake nodes as they join and leave, and pushes pool attributes to them", func() {
		pool := &openyurtv1beta1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-pool"},
			Spec: openyurtv1beta1.NodePoolSpec{
				Labels: map[string]string{"example.com/region": "e2e"},
				Taints: []corev1.Taint{{Key: "example.com/edge", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
			},
		}
		Expect(k8sClient.Create(suiteCtx, pool)).To(Succeed())
		DeferCleanup(func() {
			Eventually(func() error { return client.IgnoreNotFound(k8sClient.Delete(suiteCtx, pool)) }, timeout, interval).Should(Succeed())
		})
		Expect(pool.Labels).To(HaveKeyWithValue(openyurtv1beta1.LabelNodePoolType, "edge"), "defaulted by the webhook")

		// Two fake nodes ask to join through the desired-pool label; kwok makes them Ready.
		var names []string
		for i := range 2 {
			spec := localcluster.NodeSpec{Name: fmt.Sprintf("e2e-pool-node-%d", i), Zone: "zone-e2e"}
			node := localcluster.FakeNode(spec)
			delete(node.Labels, openyurtv1beta1.LabelCurrentNodePool)
			node.Labels[openyurtv1beta1.LabelDesiredNodePool] = pool.Name
			Expect(k8sClient.Create(suiteCtx, node)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, node))).To(Succeed()) })
			names = append(names, node.Name)
		}

		Eventually(getPool(pool.Name), timeout, interval).Should(HaveField("Status", Equal(openyurtv1beta1.NodePoolStatus{
			ReadyNodeNum: 2, UnreadyNodeNum: 0, Nodes: names,
		})))
		for _, n := range names {
			Eventually(getNode(n), timeout, interval).Should(And(
				HaveField("Labels", HaveKeyWithValue(openyurtv1beta1.LabelCurrentNodePool, pool.Name)),
				HaveField("Labels", HaveKeyWithValue("example.com/region", "e2e")),
				HaveField("Spec.Taints", ContainElement(HaveField("Key", "example.com/edge"))),
			))
		}

		By("refusing to delete the pool while it has members")
		err := k8sClient.Delete(suiteCtx, pool)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)

		By("counting a node that leaves")
		Expect(k8sClient.Delete(suiteCtx, getNode(names[0])())).To(Succeed())
		Eventually(getPool(pool.Name), timeout, interval).Should(HaveField("Status", Equal(openyurtv1beta1.NodePoolStatus{
			ReadyNodeNum: 1, UnreadyNodeNum: 0, Nodes: names[1:],
		})))

		By("stripping the pool's attributes from a node relabelled out of the pool")
		Eventually(func() error {
			n := getNode(names[1])()
			delete(n.Labels, openyurtv1beta1.LabelCurrentNodePool)
			delete(n.Labels, openyurtv1beta1.LabelDesiredNodePool)
			return k8sClient.Update(suiteCtx, n)
		}, timeout, interval).Should(Succeed())
		Eventually(getNode(names[1]), timeout, interval).Should(And(
			HaveField("Labels", Not(HaveKey("example.com/region"))),
			HaveField("Spec.Taints", Not(ContainElement(HaveField("Key", "example.com/edge")))),
		))
		Eventually(getPool(pool.Name), timeout, interval).Should(HaveField("Status.Nodes", BeEmpty()))
	})
})
