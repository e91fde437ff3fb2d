package integration

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/testutil"
)

// A write the API server refuses for what it contains is refused again on every retry: the controllers
// report it in a condition and an event and wait for a change, instead of retrying in a backoff loop. The
// refusal here comes from a ValidatingAdmissionPolicy, as a cluster's policy engine would refuse a pod or a
// Deployment that the TApp or YurtAppDaemon webhook admitted.
var _ = Describe("Writes the API server refuses", func() {
	var ctx context.Context
	BeforeEach(func() { ctx = context.Background() })

	// refusingNamespace creates a namespace in which a ValidatingAdmissionPolicy refuses every create of
	// resource (group/resource), and waits until the policy is in force. The policy admits dry runs: the
	// TApp and YurtAppDaemon webhooks dry-run the pods and children of an owner and would refuse the owner
	// itself otherwise; a policy added after the owner was admitted has the same effect.
	refusingNamespace := func(group, version, resource string, probe client.Object) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "refuse-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		name := "drover-test-refuse-" + ns.Name
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version},
							Resources: []string{resource}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "request.dryRun == true", Message: "refused by the test's policy"}},
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{corev1.LabelMetadataName: ns.Name}}},
			},
		}
		Expect(k8sClient.Create(ctx, policy)).To(Succeed())
		Expect(k8sClient.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, binding))).To(Succeed())
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, policy))).To(Succeed())
		})
		probe.SetNamespace(ns.Name)
		Eventually(func() error {
			obj := probe.DeepCopyObject().(client.Object)
			if err := k8sClient.Create(ctx, obj); err == nil {
				Expect(k8sClient.Delete(ctx, obj)).To(Succeed())
				return fmt.Errorf("the policy is not in force yet")
			}
			return nil
		}).Should(Succeed())
		return ns.Name
	}

	warningsAbout := func(ns, name string) func() []string {
		return func() []string {
			list := &eventsv1.EventList{}
			Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, e := range list.Items {
				if e.Type == corev1.EventTypeWarning && e.Regarding.Name == name {
					out = append(out, e.Reason+": "+e.Note)
				}
			}
			return out
		}
	}

	// quiet checks that the controller neither fails nor keeps reconciling: no reconcile error, and at
	// most a few passes (the events of its own status write) over a span in which a backoff loop would run
	// several.
	quiet := func(controller string) {
		GinkgoHelper()
		errorsBefore, passesBefore := reconcileErrors(controller), reconcileTotal(controller)
		Consistently(func() float64 { return reconcileErrors(controller) }).WithTimeout(4*time.Second).
			Should(Equal(errorsBefore), "the %s controller returned errors for a refused write", controller)
		Expect(reconcileTotal(controller)-passesBefore).To(BeNumerically("<=", 2), "the %s controller kept reconciling", controller)
	}

	It("TApp: a refused pod create is a ReplicaFailure condition and a warning, not a retry loop", func() {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		ns := refusingNamespace("", "v1", "pods", probe)
		app := testutil.MakeTApp("web", ns).Replicas(2).Template(testutil.PodTemplate(map[string]string{"app": "web"}, "nginx:1.7.9")).Obj()
		Expect(k8sClient.Create(ctx, app)).To(Succeed())

		Eventually(func(g Gomega) {
			cur := &tkestackv1.TApp{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(app), cur)).To(Succeed())
			c := apimeta.FindStatusCondition(cur.Status.Conditions, tkestackv1.TAppReplicaFailure)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(ContainSubstring("refused by the test's policy"))
		}).Should(Succeed())
		Eventually(warningsAbout(ns, "web")).Should(ContainElement(ContainSubstring("refused by the test's policy")))
		quiet("tapp")
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
	})

	It("YurtAppDaemon: a refused child create is a CreateFailed condition and a warning, not a retry loop", func() {
		probe := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
			Template: podTemplate("probe", "busybox"),
		}}
		ns := refusingNamespace("apps", "v1", "deployments", probe)
		group := strings.TrimPrefix(ns, "refuse-")
		pool := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "refuse-" + group, Labels: map[string]string{"group": group}}}
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, pool))).To(Succeed()) })
		owner := withDeployment(&openyurtv1alpha1.YurtAppDaemon{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: ns}}, "edge",
			&metav1.LabelSelector{MatchLabels: map[string]string{"group": group}})
		Expect(k8sClient.Create(ctx, owner)).To(Succeed())

		Eventually(func(g Gomega) {
			cur := &openyurtv1alpha1.YurtAppDaemon{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(owner), cur)).To(Succeed())
			var reasons, messages []string
			for _, c := range cur.Status.Conditions {
				reasons, messages = append(reasons, c.Reason), append(messages, c.Message)
			}
			g.Expect(reasons).To(ContainElement(openyurtv1alpha1.ReasonCreateFailed))
			g.Expect(messages).To(ContainElement(ContainSubstring("refused by the test's policy")))
		}).Should(Succeed())
		Eventually(warningsAbout(ns, "edge")).Should(ContainElement(ContainSubstring("refused by the test's policy")))
		quiet("yurtappdaemon")
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "probe"}, &appsv1.Deployment{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
	})
})
