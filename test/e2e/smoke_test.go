package e2e

import (
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/localcluster"
)

const (
	timeout  = 2 * time.Minute
	interval = 250 * time.Millisecond
)

// newNamespace creates a namespace for one spec and deletes it when the spec ends.
func newNamespace(prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(k8sClient.Create(suiteCtx, ns)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, ns))).To(Succeed())
	})
	return ns.Name
}

// poolNodes returns the names of the nodes labelled as members of pool.
func poolNodes(pool string) []string {
	var nodes corev1.NodeList
	Expect(k8sClient.List(suiteCtx, &nodes, client.MatchingLabels{openyurtv1beta1.LabelCurrentNodePool: pool})).To(Succeed())
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names
}

var _ = Describe("The local cluster", func() {
	It("runs a Deployment's pods on exactly the selected pool's nodes and garbage-collects them", func() {
		ns := newNamespace("smoke")
		pool := localcluster.Pools[1].Name
		members := poolNodes(pool)
		Expect(members).NotTo(BeEmpty())

		labels := map[string]string{"app": "smoke"}
		deploy := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](3),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						NodeSelector: map[string]string{openyurtv1beta1.LabelCurrentNodePool: pool},
						Containers:   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
					},
				},
			},
		}
		Expect(k8sClient.Create(suiteCtx, deploy)).To(Succeed())

		By("running three Ready pods on " + pool + "'s nodes")
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(k8sClient.List(suiteCtx, &pods, client.InNamespace(ns), client.MatchingLabels(labels))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(3))
			for _, p := range pods.Items {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
				g.Expect(p.Spec.NodeName).To(BeElementOf(members), "pod %s", p.Name)
				g.Expect(podReady(&p)).To(BeTrue(), "pod %s", p.Name)
			}
			var got appsv1.Deployment
			g.Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(deploy), &got)).To(Succeed())
			g.Expect(got.Status.ReadyReplicas).To(BeEquivalentTo(3))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		By("garbage-collecting the ReplicaSet and the pods once the Deployment is deleted")
		Expect(k8sClient.Delete(suiteCtx, deploy)).To(Succeed())
		Eventually(func(g Gomega) {
			var rs appsv1.ReplicaSetList
			g.Expect(k8sClient.List(suiteCtx, &rs, client.InNamespace(ns))).To(Succeed())
			g.Expect(rs.Items).To(BeEmpty())
			var pods corev1.PodList
			g.Expect(k8sClient.List(suiteCtx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	})
})

var _ = Describe("The manager", func() {
	It("runs as its ServiceAccount, without admin rights", func() {
		By("authenticating with a ServiceAccount token")
		cs, err := kubernetes.NewForConfig(cluster.ManagerConfig)
		Expect(err).NotTo(HaveOccurred())
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(suiteCtx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal(localcluster.ManagerUser))
		Expect(review.Status.UserInfo.Groups).NotTo(ContainElement("system:masters"))

		By("being allowed what its role grants and nothing more")
		Expect(canI("list", "", "secrets", "")).To(BeFalse(), "the manager must not read secrets")
		Expect(canI("create", "rbac.authorization.k8s.io", "clusterrolebindings", "")).To(BeFalse())
		Expect(canI("delete", "", "namespaces", "")).To(BeFalse())
		Expect(canI("watch", "apps.openyurt.io", "nodepools", "")).To(BeTrue(), "the NodePool controller watches pools")
		Expect(canI("watch", "", "nodes", "")).To(BeTrue(), "the NodePool controller watches nodes")
		Expect(canI("update", "coordination.k8s.io", "leases", localcluster.ManagerNamespace)).To(BeTrue(), "leader election")
	})

	It("keeps every NodePool's status: ready nodes and members", func() {
		for _, p := range localcluster.Pools {
			members := poolNodes(p.Name)
			Expect(members).NotTo(BeEmpty())
			Eventually(func(g Gomega) {
				var np openyurtv1beta1.NodePool
				g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: p.Name}, &np)).To(Succeed())
				g.Expect(np.Spec.Type).To(BeEquivalentTo(p.Type))
				g.Expect(np.Status.ReadyNodeNum).To(BeEquivalentTo(len(members)), "pool %s", p.Name)
				g.Expect(np.Status.UnreadyNodeNum).To(BeZero(), "pool %s", p.Name)
				g.Expect(np.Status.Nodes).To(Equal(members), "pool %s", p.Name)
			}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		}
	})
})

// canI asks the API server whether the manager's ServiceAccount may do verb on resource (in namespace, or
// cluster-wide when it is empty), the way `kubectl auth can-i --as` does.
func canI(verb, group, resource, namespace string) bool {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: localcluster.ManagerUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + localcluster.ManagerNamespace,
			"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace},
	}}
	ExpectWithOffset(1, k8sClient.Create(suiteCtx, sar)).To(Succeed())
	GinkgoWriter.Printf("can %s %s %s.%s in %q: %v %s\n", localcluster.ManagerUser, verb, resource, group, namespace,
		sar.Status.Allowed, sar.Status.Reason)
	return sar.Status.Allowed
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
