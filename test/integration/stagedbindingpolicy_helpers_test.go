package integration

import (
	"context"
	"fmt"
	"sort"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/kubestellarsim"
	"github.com/drover-dev/drover/internal/testutil"
)

// The StagedBindingPolicy specs share the suite's kssim (started in the suite) and API server. Each spec
// isolates itself with its own namespace, its own cluster label key and its own workload label, so the
// policies of two specs never select each other's clusters or objects.

// sbpWorld is one spec's private corner: a namespace, a cluster label key, a workload label value.
type sbpWorld struct {
	ns, key, app string
}

func newSBPWorld(ctx context.Context) sbpWorld {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sbp-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return sbpWorld{ns: ns.Name, key: "stage-of-" + ns.Name, app: "app-" + ns.Name}
}

// cluster creates a ManagedCluster named <ns>-<name> labelled <key>=<stage>, and returns its name.
func (w sbpWorld) cluster(ctx context.Context, name, stage string) string {
	return createManagedCluster(ctx, w.ns+"-"+name, map[string]string{w.key: stage})
}

// createManagedCluster creates an OCM ManagedCluster, the inventory object KubeStellar matches cluster
// selectors against.
func createManagedCluster(ctx context.Context, name string, labels map[string]string) string {
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(kubestellarsim.ManagedClusterGVK)
	mc.SetName(name)
	mc.SetLabels(labels)
	Expect(k8sClient.Create(ctx, mc)).To(Succeed())
	return name
}

// relabelCluster sets the cluster's stage label.
func (w sbpWorld) relabelCluster(ctx context.Context, name, stage string) {
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(kubestellarsim.ManagedClusterGVK)
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, mc)).To(Succeed())
	mc.SetLabels(map[string]string{w.key: stage})
	Expect(k8sClient.Update(ctx, mc)).To(Succeed())
}

// selector selects the clusters of a stage label value.
func (w sbpWorld) selector(stage string) metav1.LabelSelector {
	return testutil.MatchLabels(w.key, stage)
}

// deployment creates a Deployment labelled app=<w.app> and returns its name.
func (w sbpWorld) deployment(ctx context.Context, name string) string {
	return createDeployment(ctx, w.ns, name, map[string]string{"app": w.app})
}

// createDeployment creates a one-replica Deployment with the labels given (also its pods' and selector).
func createDeployment(ctx context.Context, ns, name string, labels map[string]string) string {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}
	Expect(k8sClient.Create(ctx, d)).To(Succeed())
	return name
}

// workload is the downsync clause selecting the spec's Deployments, with the collectors given.
func (w sbpWorld) workload(collectors ...string) controlv1alpha1.DownsyncPolicyClause {
	return testutil.ObjectsLabelled("app", w.app, collectors...)
}

// report scripts what a cluster reports for one of the spec's Deployments (nil: nothing reported).
func (w sbpWorld) report(cluster, deployment string, status map[string]any) {
	ref := kubestellarsim.ObjectRef{Group: "apps", Resource: "deployments", Namespace: w.ns, Name: deployment}
	if status == nil {
		sim.ClearReturnedStatus(cluster, ref)
		return
	}
	Expect(sim.SetReturnedStatus(cluster, ref, status)).To(Succeed())
}

// aggregator creates a cluster-scoped StatusCollector counting the reporting clusters and summing their
// availableReplicas (columns count and available), named after the spec.
func (w sbpWorld) aggregator(ctx context.Context) string {
	subject := controlv1alpha1.Expression("returned.status.availableReplicas")
	sc := &controlv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: w.ns + "-agg"},
		Spec: controlv1alpha1.StatusCollectorSpec{
			CombinedFields: []controlv1alpha1.NamedAggregator{
				{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
				{Name: "available", Type: controlv1alpha1.AggregatorTypeSum, Subject: &subject},
			},
			Limit: 20,
		},
	}
	Expect(k8sClient.Create(ctx, sc)).To(Succeed())
	return sc.Name
}

// getSBP reads a StagedBindingPolicy.
func getSBP(ctx context.Context, name string) *communityv1alpha1.StagedBindingPolicy {
	sbp := &communityv1alpha1.StagedBindingPolicy{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, sbp)).To(Succeed())
	return sbp
}

// sbpProgress is what the specs follow of a policy: its active stage and phase.
func sbpProgress(ctx context.Context, name string) func() string {
	return func() string {
		sbp := &communityv1alpha1.StagedBindingPolicy{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, sbp); err != nil {
			return err.Error()
		}
		return sbp.Status.ActiveStage + "/" + string(sbp.Status.Phase)
	}
}

// sbpCondition follows a condition of the policy as "<status>/<reason>" ("" while it is not set).
func sbpCondition(ctx context.Context, name, condType string) func() string {
	return func() string {
		sbp := &communityv1alpha1.StagedBindingPolicy{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, sbp); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(sbp.Status.Conditions, condType)
		if c == nil {
			return ""
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// bindingPolicyNames lists the BindingPolicies that exist and are not being deleted, controlled by the
// policy of that name.
func bindingPolicyNames(ctx context.Context, sbp string) func() []string {
	return func() []string {
		list := &controlv1alpha1.BindingPolicyList{}
		Expect(k8sClient.List(ctx, list, client.MatchingLabels{communityv1alpha1.LabelStagedBindingPolicy: sbp})).To(Succeed())
		var out []string
		for _, bp := range list.Items {
			if bp.DeletionTimestamp == nil {
				out = append(out, bp.Name)
			}
		}
		sort.Strings(out)
		return out
	}
}

// getBindingPolicy reads a BindingPolicy; nil when it does not exist.
func getBindingPolicy(ctx context.Context, name string) *controlv1alpha1.BindingPolicy {
	bp := &controlv1alpha1.BindingPolicy{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, bp); err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading BindingPolicy %s: %v", name, err)
		return nil
	}
	return bp
}

// sbpEvents lists the reasons of the events about a policy, in no particular order.
func sbpEvents(ctx context.Context, name string) func() []string {
	return func() []string {
		list := &eventsv1.EventList{}
		Expect(k8sClient.List(ctx, list)).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "StagedBindingPolicy" && e.Regarding.Name == name {
				n := int32(1)
				if e.Series != nil {
					n = e.Series.Count
				}
				for range n {
					out = append(out, e.Reason)
				}
			}
		}
		sort.Strings(out)
		return out
	}
}

// count counts s in list.
func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// stageName is the BindingPolicy name of a stage of a policy whose names are short.
func stageName(sbp, stage string) string { return fmt.Sprintf("%s.stage.%s", sbp, stage) }
