package kubestellarsim

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/scheme"
)

// startAPIServer starts etcd and kube-apiserver from bin/k8s (or KUBEBUILDER_ASSETS) with the KubeStellar
// and ManagedCluster CRDs, and stops them when the test ends.
func startAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			t.Fatalf("no %s in %s (run `make tools` to build bin/k8s): %v", bin, assets, err)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "kubestellar")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	return cfg
}

func managedCluster(name, env string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ManagedClusterGVK)
	u.SetName(name)
	u.SetLabels(map[string]string{"env": env})
	return u
}

// TestSimulatorEndToEnd runs the simulator against a real API server: a policy selecting the dev clusters
// gets its finalizer and a Binding, destinations that have not reported leave only a row error, scripted
// statuses become a CombinedStatus, relabelling clusters moves the destinations, a missing collector shows
// in the condition, and deleting the policy removes its finalizer and CombinedStatuses but, as in
// KubeStellar, not its Binding (the garbage collector's job; this API server runs none).
func TestSimulatorEndToEnd(t *testing.T) {
	logf.SetLogger(logr.Discard())
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	cfg := startAPIServer(t)
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithCancel(context.Background())
	sim := New(Config{Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 1})})
	done := make(chan error, 1)
	go func() { done <- sim.Start(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the simulator stopped with %v", err)
		}
	})
	select {
	case <-sim.Ready():
	case err := <-done:
		t.Fatalf("the simulator did not start: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the simulator did not become ready")
	}

	for _, mc := range []*unstructured.Unstructured{managedCluster("c1", "dev"), managedCluster("c2", "dev"), managedCluster("c3", "prod")} {
		g.Expect(c.Create(ctx, mc)).To(Succeed())
	}
	g.Expect(c.Create(ctx, &controlv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
		Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{
			{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
			{Name: "available", Type: controlv1alpha1.AggregatorTypeSum, Subject: expr("returned.status.availableReplicas")},
		}},
	})).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}})).To(Succeed())
	deploy := nginxDeployment()
	g.Expect(c.Create(ctx, deploy)).To(Succeed())
	bp := &controlv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx-dev"},
		Spec: controlv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "dev"}}},
			Downsync: []controlv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{
					APIGroup:        ptr.To("apps"),
					Resources:       []string{"deployments"},
					ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app.kubernetes.io/name": "nginx"}}},
				},
				DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"replicas"}},
			}},
		},
	}
	g.Expect(c.Create(ctx, bp)).To(Succeed())

	checkBinding(ctx, g, c, bp, deploy, []string{"c1", "c2"})
	csKey := client.ObjectKey{Namespace: "demo", Name: controlv1alpha1.CombinedStatusName(deploy.UID, bp.UID)}
	noneReported := controlv1alpha1.NamedStatusCombination{Name: "replicas", ColumnNames: []string{"count", "available"},
		RowErrors: []controlv1alpha1.RowEvaluationError{{WEC: controlv1alpha1.Destination{ClusterID: "c1"},
			ColumnName: "available", Error: "no such key: availableReplicas"}}}
	checkResults(ctx, g, c, csKey, deploy, noneReported)

	ref := ObjectRef{Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx"}
	g.Expect(sim.SetReturnedStatus("c1", ref, map[string]any{"availableReplicas": 2})).To(Succeed())
	g.Expect(sim.SetReturnedStatus("c2", ref, map[string]any{"availableReplicas": 3})).To(Succeed())
	g.Expect(sim.SetReturnedStatus("c3", ref, map[string]any{"availableReplicas": 5})).To(Succeed())
	checkCombinedStatus(ctx, g, c, csKey, deploy, "2", "5")

	relabel(ctx, g, c, "c3", "dev")
	checkBinding(ctx, g, c, bp, deploy, []string{"c1", "c2", "c3"})
	checkCombinedStatus(ctx, g, c, csKey, deploy, "3", "10")
	relabel(ctx, g, c, "c1", "prod")
	checkBinding(ctx, g, c, bp, deploy, []string{"c2", "c3"})
	checkCombinedStatus(ctx, g, c, csKey, deploy, "2", "8")

	nsKey := checkMissingCollector(ctx, g, c, bp)
	checkWorkloadChange(ctx, g, c, bp, deploy, csKey)

	g.Expect(c.Delete(ctx, bp)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, obj := range []client.Object{
			&controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: bp.Name}},
			&controlv1alpha1.CombinedStatus{ObjectMeta: metav1.ObjectMeta{Namespace: csKey.Namespace, Name: csKey.Name}},
			&controlv1alpha1.CombinedStatus{ObjectMeta: metav1.ObjectMeta{Namespace: nsKey.Namespace, Name: nsKey.Name}},
		} {
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s still exists (err %v)", obj, obj.GetName(), err)
		}
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		b := &controlv1alpha1.Binding{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: bp.Name}, b)).To(Succeed())
		g.Expect(b.DeletionTimestamp).To(BeNil())
		g.Expect(b.OwnerReferences).To(HaveLen(1))
		g.Expect(b.OwnerReferences[0].UID).To(Equal(bp.UID))
	}, 2*time.Second).Should(Succeed())
}

func nginxDeployment() *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": "nginx"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: "demo", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
			},
		},
	}
}

func relabel(ctx context.Context, g *WithT, c client.Client, cluster, env string) {
	mc := managedCluster(cluster, env)
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(mc), mc)).To(Succeed())
	mc.SetLabels(map[string]string{"env": env})
	g.Expect(c.Update(ctx, mc)).To(Succeed())
}

// checkBinding waits for the policy's finalizer, its Binding with the given destinations and the Deployment,
// and the policy status.
func checkBinding(ctx context.Context, g *WithT, c client.Client, bp *controlv1alpha1.BindingPolicy,
	deploy *appsv1.Deployment, destinations []string) {
	var want []controlv1alpha1.Destination
	for _, d := range destinations {
		want = append(want, controlv1alpha1.Destination{ClusterID: d})
	}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(bp), bp)).To(Succeed())
		g.Expect(bp.Finalizers).To(ContainElement(controlv1alpha1.FinalizerBindingPolicy))
		b := &controlv1alpha1.Binding{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: bp.Name}, b)).To(Succeed())
		g.Expect(b.OwnerReferences).To(Equal([]metav1.OwnerReference{{
			APIVersion: "control.kubestellar.io/v1alpha1", Kind: "BindingPolicy", Name: bp.Name, UID: bp.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
		}}))
		g.Expect(b.Spec.Destinations).To(Equal(want))
		g.Expect(b.Spec.Workload.ClusterScope).To(BeEmpty())
		g.Expect(b.Spec.Workload.NamespaceScope).To(Equal([]controlv1alpha1.NamespaceScopeDownsyncClause{{
			NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
				GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
				Namespace:            "demo", Name: "nginx", ResourceVersion: deploy.ResourceVersion,
			},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"replicas"}},
		}}))
		g.Expect(b.Status.ObservedGeneration).To(BeZero())
		g.Expect(bp.Status.ObservedGeneration).To(Equal(bp.Generation))
		g.Expect(bp.Status.Conditions).To(HaveLen(1))
		g.Expect(bp.Status.Conditions[0].Type).To(Equal(controlv1alpha1.TypeStatusCollectorsAvailable))
		g.Expect(bp.Status.Conditions[0].Status).To(Equal(corev1.ConditionTrue))
		g.Expect(bp.Status.Conditions[0].Message).To(Equal("All StatusCollector(s) are available"))
	}).Should(Succeed())
}

// checkCombinedStatus waits for the Deployment's CombinedStatus with the given count and sum.
func checkCombinedStatus(ctx context.Context, g *WithT, c client.Client, key client.ObjectKey, deploy *appsv1.Deployment,
	count, available string) {
	checkResults(ctx, g, c, key, deploy, controlv1alpha1.NamedStatusCombination{
		Name:        "replicas",
		ColumnNames: []string{"count", "available"},
		Rows:        []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{num(count), num(available)}}},
	})
}

// checkResults waits for the Deployment's CombinedStatus with the given result.
func checkResults(ctx context.Context, g *WithT, c client.Client, key client.ObjectKey, deploy *appsv1.Deployment,
	want controlv1alpha1.NamedStatusCombination) {
	g.Eventually(func(g Gomega) {
		cs := &controlv1alpha1.CombinedStatus{}
		g.Expect(c.Get(ctx, key, cs)).To(Succeed())
		g.Expect(cs.Labels).To(Equal(map[string]string{
			"status.kubestellar.io/api-group": "apps", "status.kubestellar.io/resource": "deployments",
			"status.kubestellar.io/namespace": "demo", "status.kubestellar.io/name": "nginx",
			"status.kubestellar.io/binding-policy": "nginx-dev",
		}))
		g.Expect(cs.OwnerReferences).To(Equal([]metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx", UID: deploy.UID,
		}}))
		g.Expect(cs.Results).To(Equal([]controlv1alpha1.NamedStatusCombination{want}))
	}).Should(Succeed())
}

// checkMissingCollector adds a clause for the namespace naming a collector that does not exist: the
// condition turns False with KubeStellar's message, and the namespace's CombinedStatus (in
// kubestellar-report) holds only the existing collector: no cluster reported the namespace, so its sum has
// a row error and no row. It returns that CombinedStatus's key.
func checkMissingCollector(ctx context.Context, g *WithT, c client.Client, bp *controlv1alpha1.BindingPolicy) client.ObjectKey {
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(bp), bp)).To(Succeed())
	bp.Spec.Downsync = append(bp.Spec.Downsync, controlv1alpha1.DownsyncPolicyClause{
		DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{Resources: []string{"namespaces"}, ObjectNames: []string{"demo"}},
		DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"replicas", "absent"}},
	})
	g.Expect(c.Update(ctx, bp)).To(Succeed())
	ns := &corev1.Namespace{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "demo"}, ns)).To(Succeed())
	key := client.ObjectKey{Namespace: controlv1alpha1.ReportNamespace, Name: controlv1alpha1.CombinedStatusName(ns.UID, bp.UID)}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(bp), bp)).To(Succeed())
		g.Expect(bp.Status.ObservedGeneration).To(Equal(bp.Generation))
		g.Expect(bp.Status.Conditions).To(HaveLen(1))
		g.Expect(bp.Status.Conditions[0].Status).To(Equal(corev1.ConditionFalse))
		g.Expect(bp.Status.Conditions[0].Reason).To(Equal(controlv1alpha1.ReasonReconcileError))
		g.Expect(bp.Status.Conditions[0].Message).To(Equal("Missing StatusCollector(s) [absent]"))
		cs := &controlv1alpha1.CombinedStatus{}
		g.Expect(c.Get(ctx, key, cs)).To(Succeed())
		g.Expect(cs.Labels).To(HaveKeyWithValue(controlv1alpha1.LabelCombinedStatusNamespace, ""))
		g.Expect(cs.Labels).To(HaveKeyWithValue(controlv1alpha1.LabelCombinedStatusResource, "namespaces"))
		g.Expect(cs.Results).To(HaveLen(1))
		g.Expect(cs.Results[0].Name).To(Equal("replicas"))
		g.Expect(cs.Results[0].Rows).To(BeEmpty())
		g.Expect(cs.Results[0].RowErrors).To(HaveLen(1))
		g.Expect(cs.Results[0].RowErrors[0].ColumnName).To(Equal("available"))
	}).Should(Succeed())
	return key
}

// checkWorkloadChange adds a collector reading the Deployment's own content: a change of that content alone
// (no change of policy, inventory or returned status) must reach the CombinedStatus.
func checkWorkloadChange(ctx context.Context, g *WithT, c client.Client, bp *controlv1alpha1.BindingPolicy,
	deploy *appsv1.Deployment, csKey client.ObjectKey) {
	g.Expect(c.Create(ctx, &controlv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: "desired"},
		Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{
			{Name: "desired", Type: controlv1alpha1.AggregatorTypeMax, Subject: expr("obj.spec.replicas")},
		}},
	})).To(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(bp), bp)).To(Succeed())
	bp.Spec.Downsync[0].StatusCollectors = append(bp.Spec.Downsync[0].StatusCollectors, "desired")
	g.Expect(c.Update(ctx, bp)).To(Succeed())
	desired := func(replicas string) {
		g.Eventually(func(g Gomega) {
			cs := &controlv1alpha1.CombinedStatus{}
			g.Expect(c.Get(ctx, csKey, cs)).To(Succeed())
			g.Expect(cs.Results).To(ContainElement(controlv1alpha1.NamedStatusCombination{
				Name:        "desired",
				ColumnNames: []string{"desired"},
				Rows:        []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{num(replicas)}}},
			}))
		}).Should(Succeed())
	}
	desired("2")
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
	deploy.Spec.Replicas = ptr.To[int32](4)
	g.Expect(c.Update(ctx, deploy)).To(Succeed())
	desired("4")
}
