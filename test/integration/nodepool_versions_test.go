package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

// nodePoolVersions are the served versions of NodePool, each with an empty object of its type.
var nodePoolVersions = map[string]func() client.Object{
	"v1alpha1": func() client.Object { return &openyurtv1alpha1.NodePool{} },
	"v1beta1":  func() client.Object { return &openyurtv1beta1.NodePool{} },
	"v1beta2":  func() client.Object { return &openyurtv1beta2.NodePool{} },
}

// toHub converts a spoke NodePool read from the API server to v1beta2.
func toHub(obj client.Object) *openyurtv1beta2.NodePool {
	hub := &openyurtv1beta2.NodePool{}
	switch p := obj.(type) {
	case *openyurtv1beta2.NodePool:
		return p
	case *openyurtv1beta1.NodePool:
		Expect(p.ConvertTo(hub)).To(Succeed())
	case *openyurtv1alpha1.NodePool:
		Expect(p.ConvertTo(hub)).To(Succeed())
	}
	return hub
}

// expectSameInEveryVersion reads the pool in every version and wants the same v1beta2 pool from each.
func expectSameInEveryVersion(ctx context.Context, name string) *openyurtv1beta2.NodePool {
	var hub *openyurtv1beta2.NodePool
	Eventually(func(g Gomega) {
		hubs := map[string]*openyurtv1beta2.NodePool{}
		for version, newObj := range nodePoolVersions {
			obj := newObj()
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, obj)).To(Succeed())
			h := toHub(obj)
			h.TypeMeta = metav1.TypeMeta{}
			hubs[version] = h
		}
		// The controller may write the status between two reads: compare once all three read the same
		// resourceVersion.
		g.Expect(hubs["v1alpha1"].ResourceVersion).To(Equal(hubs["v1beta2"].ResourceVersion))
		g.Expect(hubs["v1beta1"].ResourceVersion).To(Equal(hubs["v1beta2"].ResourceVersion))
		for _, version := range []string{"v1alpha1", "v1beta1"} {
			g.Expect(equality.Semantic.DeepEqual(hubs[version], hubs["v1beta2"])).To(BeTrue(),
				"pool %s read in %s differs from v1beta2:\n%s\n%s", name, version, toJSON(hubs[version]), toJSON(hubs["v1beta2"]))
		}
		hub = hubs["v1beta2"]
	}).Should(Succeed())
	return hub
}

func toJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// table is the server-side table of the pool name in version, as kubectl get shows it.
func table(ctx context.Context, version, name string) *metav1.Table {
	hc, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	url := fmt.Sprintf("%s/apis/apps.openyurt.io/%s/nodepools/%s", strings.TrimSuffix(cfg.Host, "/"), version, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	t := &metav1.Table{}
	Expect(json.Unmarshal(body, t)).To(Succeed())
	return t
}

func columnNames(t *metav1.Table) []string {
	var out []string
	for _, c := range t.ColumnDefinitions {
		out = append(out, c.Name)
	}
	return out
}

var _ = Describe("NodePool versions", func() {
	var (
		ctx    context.Context
		suffix string
	)
	BeforeEach(func() {
		ctx = context.Background()
		suffix = fmt.Sprintf("%d-%d", GinkgoRandomSeed()%1000, CurrentSpecReport().LeafNodeLocation.LineNumber)
	})
	create := func(obj client.Object) {
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed()) })
	}

	It("reads a pool created in any version the same in every version", func() {
		noExec := metav1.Unix(1700000000, 0)
		alpha := &openyurtv1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "alpha-" + suffix,
			Annotations: map[string]string{openyurtv1beta2.LabelNodePoolHostNetwork: "true"}},
			Spec: openyurtv1alpha1.NodePoolSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}},
				Labels: map[string]string{"tier": "edge"},
				Taints: []corev1.Taint{{Key: "t", Value: "v", Effect: corev1.TaintEffectNoExecute, TimeAdded: &noExec}}}}
		beta := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "beta-" + suffix},
			Spec: openyurtv1beta1.NodePoolSpec{Type: openyurtv1beta1.Cloud, Annotations: map[string]string{"a": "b"}}}
		hub := &openyurtv1beta2.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "hub-" + suffix},
			Spec: openyurtv1beta2.NodePoolSpec{HostNetwork: true, InterConnectivity: true, LeaderElectionStrategy: "mark",
				LeaderNodeLabelSelector: map[string]string{"lead": "yes"}, EnableLeaderElection: true, LeaderReplicas: 2,
				PoolScopeMetadata: []metav1.GroupVersionResource{{Group: "example.com", Version: "v1", Resource: "things"}}}}
		for _, obj := range []client.Object{alpha, beta, hub} {
			create(obj)
		}

		By("a v1alpha1 pool: hostNetwork from its annotation, its selector kept, the election defaults")
		got := expectSameInEveryVersion(ctx, alpha.Name)
		Expect(got.Spec.HostNetwork).To(BeTrue())
		Expect(got.Spec.Type).To(Equal(openyurtv1beta2.Edge))
		Expect(got.ElectionSpec()).To(Equal(openyurtv1beta2.DefaultElectionSpec()))
		Expect(got.Spec.Taints[0].TimeAdded.Equal(&noExec)).To(BeTrue())
		back := &openyurtv1alpha1.NodePool{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(alpha), back)).To(Succeed())
		Expect(back.Spec.Selector).To(Equal(alpha.Spec.Selector))

		By("a v1beta1 pool: no annotation added where nothing needs carrying")
		got = expectSameInEveryVersion(ctx, beta.Name)
		Expect(got.Spec.Type).To(Equal(openyurtv1beta2.Cloud))
		Expect(got.Labels).To(HaveKeyWithValue(openyurtv1beta2.LabelNodePoolType, "cloud"))
		readBeta := &openyurtv1beta1.NodePool{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(beta), readBeta)).To(Succeed())
		Expect(readBeta.Annotations).NotTo(HaveKey(openyurtv1beta2.AnnotationConversionData))

		By("a v1beta2 pool: its election fields, defaulted on create, carried by the earlier versions")
		got = expectSameInEveryVersion(ctx, hub.Name)
		Expect(got.Spec.LeaderReplicas).To(Equal(int32(2)))
		Expect(got.Spec.PoolScopeMetadata).To(HaveLen(3)) // its own, then the two defaults
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(hub), readBeta)).To(Succeed())
		Expect(readBeta.Annotations).To(HaveKey(openyurtv1beta2.AnnotationConversionData))
		Expect(readBeta.Spec.HostNetwork).To(BeTrue())
	})

	It("keeps the election fields of a pool written back in v1beta1, status included", func() {
		hub := &openyurtv1beta2.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "elect-" + suffix},
			Spec: openyurtv1beta2.NodePoolSpec{EnableLeaderElection: true, LeaderReplicas: 3}}
		create(hub)
		elected := metav1.Unix(1700000000, 0)
		Eventually(func() error { // the controller writes the member counts meanwhile
			cur := &openyurtv1beta2.NodePool{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(hub), cur); err != nil {
				return err
			}
			cur.Status.LeaderNum, cur.Status.LeaderLastElectedTime = 1, elected
			cur.Status.LeaderEndpoints = []openyurtv1beta2.Leader{{NodeName: "n1", Address: "10.0.0.1"}}
			cur.Status.Conditions = []openyurtv1beta2.NodePoolCondition{{Type: openyurtv1beta2.LeaderStatus,
				Status: corev1.ConditionTrue, LastTransitionTime: elected, Reason: "Elected"}}
			return k8sClient.Status().Update(ctx, cur)
		}).Should(Succeed())

		Eventually(func() error { // a v1beta1 client updates what it sees
			beta := &openyurtv1beta1.NodePool{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(hub), beta); err != nil {
				return err
			}
			beta.Spec.Labels = map[string]string{"edited": "in-v1beta1"}
			return k8sClient.Update(ctx, beta)
		}).Should(Succeed())
		got := expectSameInEveryVersion(ctx, hub.Name)
		Expect(got.Spec.Labels).To(HaveKeyWithValue("edited", "in-v1beta1"))
		Expect(got.Spec.LeaderReplicas).To(Equal(int32(3)))
		Expect(got.Spec.EnableLeaderElection).To(BeTrue())
		Expect(got.Status.LeaderNum).To(Equal(int32(1)))
		Expect(got.Status.LeaderEndpoints).To(Equal([]openyurtv1beta2.Leader{{NodeName: "n1", Address: "10.0.0.1"}}))
		Expect(got.Status.Conditions).To(HaveLen(1))
		Expect(got.Annotations).NotTo(HaveKey(openyurtv1beta2.AnnotationConversionData))

		By("the printer columns of each version, LeaderNodes from status.leaderNum in v1beta2")
		base := []string{"Name", "Type", "ReadyNodes", "NotReadyNodes", "Age"}
		for _, version := range []string{"v1alpha1", "v1beta1"} {
			Expect(columnNames(table(ctx, version, hub.Name))).To(Equal(base), version)
		}
		t := table(ctx, "v1beta2", hub.Name)
		Expect(columnNames(t)).To(Equal([]string{"Name", "Type", "ReadyNodes", "NotReadyNodes", "LeaderNodes", "LeaderElectionAge", "Age"}))
		Expect(t.Rows).To(HaveLen(1))
		Expect(t.Rows[0].Cells[1]).To(Equal("Edge"))
		Expect(t.Rows[0].Cells[4]).To(BeEquivalentTo(1))
	})

	It("answers a value of the wrong type sent in v1beta1 with a 422 naming its field", func() {
		// Converted to v1beta2 for the webhooks first: the conversion carries the bad values over.
		bad := &unstructured.Unstructured{}
		Expect(json.Unmarshal([]byte(`{"apiVersion":"apps.openyurt.io/v1beta1","kind":"NodePool","metadata":{"name":"bad-`+
			suffix+`"},"spec":{"type":7,"taints":[{"key":"k","effect":"NoExecute","timeAdded":"yesterday"}]}}`), &bad.Object)).To(Succeed())
		err := k8sClient.Create(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.type"))
		Expect(err.Error()).To(ContainSubstring("spec.taints[0].timeAdded"))
	})
})
