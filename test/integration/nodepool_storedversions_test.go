package integration

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/scheme"
)

const nodePoolCRD = "nodepools.apps.openyurt.io"

// A cluster where another installation (OpenYurt 1.4 to 1.6, then 1.7) stored NodePools first in v1beta1,
// then in v1beta2: the CRD's status.storedVersions lists both, so the API server refuses a CRD that no longer
// serves one of them. drover's CRD serves both and takes over, and the objects stored in either read back in
// every version. The spec replaces the suite's NodePool CRD for a while (deleting every NodePool), and puts
// drover's back.
var _ = Describe("NodePool CRD over stored versions", Ordered, func() {
	var (
		ctx    context.Context
		crds   client.Client
		drover *apiextensionsv1.CustomResourceDefinition
	)
	BeforeAll(func() {
		ctx = context.Background()
		s := scheme.New()
		Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
		var err error
		crds, err = client.New(cfg, client.Options{Scheme: s})
		Expect(err).NotTo(HaveOccurred())
		drover = &apiextensionsv1.CustomResourceDefinition{}
		Expect(crds.Get(ctx, client.ObjectKey{Name: nodePoolCRD}, drover)).To(Succeed())
		DeferCleanup(func() { installNodePoolCRD(ctx, crds, drover.Spec) })
	})

	It("accepts drover's CRD over v1beta1 and v1beta2 stored by another installation", func() {
		By("removing the suite's CRD")
		Expect(crds.Delete(ctx, drover.DeepCopy())).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(crds.Get(ctx, client.ObjectKey{Name: nodePoolCRD}, &apiextensionsv1.CustomResourceDefinition{}))
		}, "60s").Should(BeTrue())

		By("an upstream-like CRD storing v1beta1, without a conversion webhook")
		upstream := drover.Spec.DeepCopy()
		upstream.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		setStorage(upstream, "v1beta1")
		installNodePoolCRD(ctx, crds, *upstream)
		old := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "stored-v1beta1"},
			Spec: openyurtv1beta1.NodePoolSpec{Labels: map[string]string{"stored": "v1beta1"}}}
		Expect(k8sClient.Create(ctx, old)).To(Succeed())

		By("the same CRD storing v1beta2: storedVersions lists both")
		setStorage(upstream, "v1beta2")
		installNodePoolCRD(ctx, crds, *upstream)
		newer := &openyurtv1beta2.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "stored-v1beta2"},
			Spec: openyurtv1beta2.NodePoolSpec{LeaderElectionStrategy: "mark", LeaderReplicas: 2,
				LeaderNodeLabelSelector: map[string]string{"lead": "yes"}}}
		Expect(k8sClient.Create(ctx, newer)).To(Succeed())
		live := &apiextensionsv1.CustomResourceDefinition{}
		Expect(crds.Get(ctx, client.ObjectKey{Name: nodePoolCRD}, live)).To(Succeed())
		Expect(live.Status.StoredVersions).To(ConsistOf("v1beta1", "v1beta2"))

		By("a CRD serving v1beta1 alone (drover's before v1beta2) is refused")
		only := drover.Spec.DeepCopy()
		only.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		var v1beta1 []apiextensionsv1.CustomResourceDefinitionVersion
		for _, v := range only.Versions {
			if v.Name == "v1beta1" {
				v.Storage = true
				v1beta1 = append(v1beta1, v)
			}
		}
		only.Versions = v1beta1
		live.Spec = *only
		err := crds.Update(ctx, live)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("storedVersions"))

		By("drover's CRD is accepted")
		installNodePoolCRD(ctx, crds, drover.Spec)

		By("every object reads back in every version")
		hub := expectSameInEveryVersion(ctx, old.Name)
		Expect(hub.Spec.Labels).To(HaveKeyWithValue("stored", "v1beta1"))
		Expect(hub.ElectionSpec()).To(Equal(openyurtv1beta2.DefaultElectionSpec()))
		hub = expectSameInEveryVersion(ctx, newer.Name)
		Expect(hub.Spec.LeaderElectionStrategy).To(Equal("mark"))
		Expect(hub.Spec.LeaderReplicas).To(Equal(int32(2)))
		for _, obj := range []client.Object{old, newer} {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed())
		}
	})
})

// setStorage makes version the storage version of spec.
func setStorage(spec *apiextensionsv1.CustomResourceDefinitionSpec, version string) {
	for i := range spec.Versions {
		spec.Versions[i].Storage = spec.Versions[i].Name == version
	}
}

// installNodePoolCRD creates the NodePool CRD with spec, or updates it to spec, and waits until it is established
// and every version is served.
func installNodePoolCRD(ctx context.Context, crds client.Client, spec apiextensionsv1.CustomResourceDefinitionSpec) {
	Eventually(func() error {
		live := &apiextensionsv1.CustomResourceDefinition{}
		err := crds.Get(ctx, client.ObjectKey{Name: nodePoolCRD}, live)
		if apierrors.IsNotFound(err) {
			return crds.Create(ctx, &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: nodePoolCRD}, Spec: *spec.DeepCopy()})
		}
		if err != nil {
			return err
		}
		live.Spec = *spec.DeepCopy()
		return crds.Update(ctx, live)
	}).Should(Succeed())
	Eventually(func(g Gomega) {
		live := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(crds.Get(ctx, client.ObjectKey{Name: nodePoolCRD}, live)).To(Succeed())
		established := false
		for _, c := range live.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		g.Expect(established).To(BeTrue())
		for version, newList := range map[string]client.ObjectList{
			"v1alpha1": &openyurtv1alpha1.NodePoolList{}, "v1beta1": &openyurtv1beta1.NodePoolList{},
			"v1beta2": &openyurtv1beta2.NodePoolList{},
		} {
			g.Expect(k8sClient.List(ctx, newList)).To(Succeed(), version)
		}
	}, "60s").Should(Succeed())
}
