package integration

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/testutil"
)

// The webhooks' server-side dry runs against a real API server: what Kubernetes' own validation refuses is
// refused at admission, with the admitted object's field paths.
var _ = Describe("Admission dry runs", func() {
	var ctx context.Context
	BeforeEach(func() { ctx = context.Background() })

	newNamespace := func() string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dryrun-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		return ns.Name
	}
	webTemplate := func(image string) corev1.PodTemplateSpec {
		return testutil.PodTemplate(map[string]string{"app": "web"}, image)
	}
	// webTApp is a valid TApp with two instances, instance 1 on the pool template "canary".
	webTApp := func(name, ns string) *testutil.TAppWrapper {
		return testutil.MakeTApp(name, ns).Replicas(2).Template(webTemplate("nginx:1")).
			Pool("canary", webTemplate("nginx:2")).InstanceTemplate("1", "canary")
	}
	// The templates Kubernetes refuses, and the field of each below the template.
	badTemplates := map[string]struct {
		edit  func(*corev1.PodTemplateSpec)
		field string
	}{
		"a container without an image": {
			edit:  func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "" },
			field: "spec.containers[0].image",
		},
		"a container named -x": {
			edit:  func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Name = "-x" },
			field: "spec.containers[0].name",
		},
		"a container name with dots": {
			edit:  func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Name = "web.main" },
			field: "spec.containers[0].name",
		},
		"a nodeSelector value that is no label value": {
			edit:  func(t *corev1.PodTemplateSpec) { t.Spec.NodeSelector = map[string]string{"zone": "not a label value"} },
			field: "spec.nodeSelector",
		},
		"no containers": {
			edit:  func(t *corev1.PodTemplateSpec) { t.Spec.Containers = []corev1.Container{} },
			field: "spec.containers",
		},
	}

	It("rejects TApp templates Kubernetes refuses with 422 and the template's field path", func() {
		ns := newNamespace()
		for name, bad := range badTemplates {
			By(name + ", in spec.template")
			app := webTApp("bad", ns).Mutate(func(a *tkestackv1.TApp) { bad.edit(&a.Spec.Template) }).Obj()
			err := k8sClient.Create(ctx, app)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", name, err)
			Expect(causeFields(err)).To(ContainElement("spec.template."+bad.field), name)

			By(name + ", in a templatePool entry")
			app = webTApp("bad", ns).Mutate(func(a *tkestackv1.TApp) {
				tpl := a.Spec.TemplatePool["canary"]
				bad.edit(&tpl)
				a.Spec.TemplatePool["canary"] = tpl
			}).Obj()
			err = k8sClient.Create(ctx, app)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", name, err)
			Expect(causeFields(err)).To(ConsistOf("spec.templatePool[canary]."+bad.field), name)
		}

		By("reporting the same error of several templates once per template, together")
		app := webTApp("bad", ns).Pool("beta", webTemplate("")).Mutate(func(a *tkestackv1.TApp) {
			a.Spec.Template.Spec.Containers[0].Image = ""
			a.Spec.Template.Spec.Containers[0].Name = "-x"
		}).Obj()
		err := k8sClient.Create(ctx, app)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ConsistOf("spec.template.spec.containers[0].name", "spec.template.spec.containers[0].image",
			"spec.templatePool[beta].spec.containers[0].image"))

		By("admitting a valid TApp")
		Expect(k8sClient.Create(ctx, webTApp("good", ns).Obj())).To(Succeed())
	})

	It("checks only the templates an UPDATE changes, so a TApp stored with a bad template stays editable", Serial, func() {
		ns := newNamespace()
		By("storing a TApp with a bad unused pool template, past the validating webhook")
		restore := withoutValidatingWebhook(ctx, "vtapp.drover.dev")
		stored := webTApp("old", ns).Pool("broken", webTemplate("")).Obj()
		Eventually(func() error { return k8sClient.Create(ctx, stored) }).Should(Succeed())
		restore()

		update := func(mutate func(*tkestackv1.TApp)) error {
			app := &tkestackv1.TApp{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stored), app)).To(Succeed())
			mutate(app)
			return k8sClient.Update(ctx, app)
		}
		By("an update of the bad template is checked (once the webhook is back)")
		var err error
		Eventually(func() error {
			err = update(func(a *tkestackv1.TApp) {
				tpl := a.Spec.TemplatePool["broken"]
				tpl.Labels["rev"] = "2"
				a.Spec.TemplatePool["broken"] = tpl
			})
			return err
		}).Should(Satisfy(apierrors.IsInvalid))
		Expect(causeFields(err)).To(ConsistOf("spec.templatePool[broken].spec.containers[0].image"))

		By("an update that leaves the bad template unchanged is admitted")
		Eventually(func(g Gomega) {
			err := update(func(a *tkestackv1.TApp) {
				a.Spec.Replicas = 3
				a.Spec.Template.Spec.Containers[0].Image = "nginx:1.1"
			})
			g.Expect(apierrors.IsConflict(err)).To(BeFalse(), "a conflict with a status write is retried")
			Expect(err).NotTo(HaveOccurred())
		}).Should(Succeed())
	})

	It("admits a TApp with the largest templatePool the bounds allow within 3 s", func() {
		ns := newNamespace()
		largest := func(name, lastImage string) *tkestackv1.TApp {
			w := testutil.MakeTApp(name, ns).Replicas(1).Template(webTemplate("nginx:1"))
			for i := range tkestackv1.MaxTemplatePool {
				image := fmt.Sprintf("nginx:1.%d", i)
				if i == tkestackv1.MaxTemplatePool-1 {
					image = lastImage
				}
				w = w.Pool(fmt.Sprintf("t%02d", i), webTemplate(image))
			}
			return w.Obj()
		}
		timed := func(app *tkestackv1.TApp) (time.Duration, error) {
			start := time.Now()
			err := k8sClient.Create(ctx, app)
			return time.Since(start), err
		}

		By("checking every entry: a bad last one is found")
		elapsed, err := timed(largest("largest-bad", ""))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ConsistOf(fmt.Sprintf("spec.templatePool[t%02d].spec.containers[0].image", tkestackv1.MaxTemplatePool-1)))
		GinkgoWriter.Printf("TApp with %d templatePool entries, the last one bad: rejected in %v\n", tkestackv1.MaxTemplatePool, elapsed)
		AddReportEntry("rejected with the largest templatePool", elapsed.String())

		By("admitting the valid one in time")
		elapsed, err = timed(largest("largest", "nginx:1.99"))
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("TApp with %d templatePool entries (%d dry-run pod creates): admitted in %v\n",
			tkestackv1.MaxTemplatePool, tkestackv1.MaxTemplatePool+1, elapsed)
		AddReportEntry("admitted with the largest templatePool", elapsed.String())
		Expect(elapsed).To(BeNumerically("<", 3*time.Second))

		By("refusing one entry more in the CRD schema")
		over := largest("over", "nginx:1.99")
		over.Spec.TemplatePool["one-more"] = webTemplate("nginx:2")
		err = k8sClient.Create(ctx, over)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causeFields(err)).To(ContainElement("spec.templatePool"))
	})

	It("rejects a StatefulSet template with a field this API server drops", func() {
		ns := newNamespace()
		maxUnavailable := intstr.FromInt32(2)
		strategy := appsv1.StatefulSetUpdateStrategy{
			Type:          appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: &maxUnavailable},
		}

		By("confirming that this API server drops updateStrategy.rollingUpdate.maxUnavailable (feature gate MaxUnavailableStatefulSet off)")
		sts := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
			Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, ServiceName: "db",
				Template: podTemplate("db", "registry.example/db:1"), UpdateStrategy: strategy,
			},
		}
		Expect(k8sClient.Create(ctx, sts, client.DryRunAll)).To(Succeed())
		Expect(sts.Spec.UpdateStrategy.RollingUpdate).To(Or(BeNil(), HaveField("MaxUnavailable", BeNil())),
			"the API server keeps maxUnavailable: this test needs a field it drops")

		for _, kind := range ownerKinds {
			By(kind.name)
			owner := withStatefulSet(kind.new("db", ns), "db", &metav1.LabelSelector{})
			owner.DaemonSpec().WorkloadTemplate.StatefulSetTemplate.Spec.UpdateStrategy = strategy
			err := k8sClient.Create(ctx, owner)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(causeFields(err)).To(ConsistOf("spec.workloadTemplate.statefulSetTemplate.spec.updateStrategy.rollingUpdate.maxUnavailable"))
			Expect(err.Error()).To(ContainSubstring("this API server drops this field"))

			By(kind.name + " without the field is admitted")
			owner = withStatefulSet(kind.new("db-"+strings.ToLower(kind.name), ns), "db", &metav1.LabelSelector{})
			Expect(k8sClient.Create(ctx, owner)).To(Succeed())
		}
	})

	It("rejects a template server-side apply cannot hold: two entries of one key in a keyed list", func() {
		ns := newNamespace()
		for _, kind := range ownerKinds {
			By(kind.name)
			owner := withStatefulSet(kind.new("dup", ns), "db", &metav1.LabelSelector{})
			container := &owner.DaemonSpec().WorkloadTemplate.StatefulSetTemplate.Spec.Template.Spec.Containers[0]
			container.Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 80}}
			err := k8sClient.Create(ctx, owner)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a create only warns about the duplicate, the webhook must refuse it; got %v", err)
			Expect(causeFields(err)).To(ConsistOf(fmt.Sprintf(
				"spec.workloadTemplate.statefulSetTemplate.spec.template.spec.containers[name=%q].ports", container.Name)))
		}
	})
})
