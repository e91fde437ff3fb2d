// Package chart installs the Helm chart charts/drover with the helm built from Go modules (bin/helm) into a
// local cluster of its own (a real kube-apiserver, with none of drover's CRDs, webhooks or manager
// installed beforehand), in a namespace other than drover-system, and runs the real manager binary as a
// replica of that release: as the release's ServiceAccount, with the Deployment's own arguments, its
// certificate Secret mounted and its webhook Service reaching it (the cluster's egress proxy plays the
// Service). The kwok nodes run the Deployment's pods only on paper, so this process is the replica.
//
// The test walks a platform team's path: a foreign CRD is refused; the install is accepted object by object;
// the ServiceAccount may do exactly what the generated role grants; drover objects admitted through the
// release's webhooks survive an upgrade; the uninstall guard refuses while they exist; and the uninstall
// leaves nothing behind.
package chart

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-dev/drover/internal/localcluster"
	"github.com/drover-dev/drover/internal/scheme"
)

const (
	release   = "drover"
	namespace = "platform-drover"
	// The chart's fixed names.
	serviceAccount = "drover-manager"
	webhookService = "drover-webhook-service"
	certSecret     = "drover-webhook-server-cert"
	lease          = "drover-manager.drover.dev"
	ppsCRD         = "persistentpodstates.apps.kruise.io"
)

type env struct {
	t       *testing.T
	root    string
	manager string
	cluster *localcluster.Cluster
	c       client.Client
}

func TestChartLifecycle(t *testing.T) {
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	e := start(t)
	// Each step needs the ones before it.
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	step("a foreign CRD is refused", e.foreignCRDRefused)
	step("install in a non-default namespace", e.install)
	proc, err := e.cluster.StartInstalledManager(context.Background(), e.installedManager(t))
	if err != nil {
		t.Fatalf("running the release's manager: %v", err)
	}
	step("the ServiceAccount may do what the generated role grants, and no more", func(t *testing.T) {
		checkPermissions(t, e.c, "system:serviceaccount:"+namespace+":"+serviceAccount, namespace, generatedGrants(t, e.root))
	})
	var objs []client.Object
	step("drover objects pass the release's webhooks and are reconciled", func(t *testing.T) { objs = e.createObjects(t) })
	step("drover objects survive an upgrade", func(t *testing.T) { e.upgrade(t, objs) })
	step("the uninstall guard refuses while drover objects exist", func(t *testing.T) { e.guard(t, objs) })
	if err := proc.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping the release's manager: %v", err)
	}
	step("the uninstall leaves nothing behind", e.uninstall)
}

func start(t *testing.T) *env {
	t.Helper()
	root, err := localcluster.FindRepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	manager := os.Getenv("DROVER_MANAGER")
	if manager == "" {
		manager = filepath.Join(root, "bin", "drover-manager")
	}
	if _, err := os.Stat(manager); err != nil {
		t.Fatalf("build the manager first: make build (or set DROVER_MANAGER): %v", err)
	}
	dir := filepath.Join(root, ".local", "e2e-chart")
	cluster, err := localcluster.Start(context.Background(), localcluster.Options{
		RepoRoot: root, Dir: filepath.Join(dir, "cluster"), Kubeconfig: filepath.Join(dir, "kubeconfig"),
		ManagerBinary: manager, SkipManager: true, SkipKubeStellar: true, Nodes: 3,
		// Nothing of drover's: the chart installs it.
		CRDDirs: []string{}, WebhookManifests: []string{}, RBACFiles: []string{},
		Logger: ctrllog.Log.WithName("localcluster"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	sch := scheme.New()
	if err := apiextensionsv1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cluster.Config, client.Options{Scheme: sch})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, root: root, manager: manager, cluster: cluster, c: c}
}

// helmInstallArgs are the flags of every install and upgrade: the chart from the checkout, the release's
// namespace, and the built image (which the kwok nodes never pull).
func (e *env) chartArgs(verb string, extra ...string) []string {
	return append([]string{verb, release, filepath.Join(e.root, "charts", "drover"), "--namespace", namespace,
		"--set", "image.repository=registry.example.com/drover-manager"}, extra...)
}

func (e *env) foreignCRDRefused(t *testing.T) {
	g := NewWithT(t)
	crd := readObjects(t, filepath.Join(e.root, "config", "components", "persistentpodstate", "crd",
		"apps.kruise.io_persistentpodstates.yaml"))[0]
	g.Expect(e.c.Create(context.Background(), crd)).To(Succeed())
	out, err := helmRun(t, e.cluster, e.root, e.chartArgs("install", "--create-namespace")...)
	if err == nil {
		t.Fatalf("helm install took over %s, which another project created:\n%s", ppsCRD, out)
	}
	for _, want := range []string{ppsCRD, "OpenKruise", "crds.persistentpodstates.install=false"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not name %q:\n%s", want, out)
		}
	}
	g.Expect(e.c.Delete(context.Background(), crd)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(e.c.Get(context.Background(), client.ObjectKey{Name: ppsCRD}, &apiextensionsv1.CustomResourceDefinition{}))
	}).WithTimeout(time.Minute).Should(BeTrue())
}

func (e *env) install(t *testing.T) {
	mustHelm(t, e.cluster, e.root, e.chartArgs("install", "--create-namespace")...)
	manifest := decodeAll(t, mustHelm(t, e.cluster, e.root, "get", "manifest", release, "--namespace", namespace))
	if len(manifest) < 30 {
		t.Fatalf("the release has %d objects; want the whole chart", len(manifest))
	}
	for _, want := range manifest {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(want.GroupVersionKind())
		if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(want), got); err != nil {
			t.Errorf("%s %s of the release is not in the cluster: %v", want.GetKind(), client.ObjectKeyFromObject(want), err)
			continue
		}
		if ns := got.GetNamespace(); ns != "" && ns != namespace {
			t.Errorf("%s %s is in namespace %s, not the release's", got.GetKind(), got.GetName(), ns)
		}
	}
	t.Logf("all %d objects of the release are in the cluster", len(manifest))
}

// installedManager is the release's manager Deployment, as a process of this cluster.
func (e *env) installedManager(t *testing.T) localcluster.InstalledManager {
	g := NewWithT(t)
	var d appsv1.Deployment
	g.Expect(e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "drover-manager"}, &d)).To(Succeed())
	return localcluster.InstalledManager{
		Name: "release-manager", Namespace: namespace, ServiceAccount: d.Spec.Template.Spec.ServiceAccountName,
		Args: d.Spec.Template.Spec.Containers[0].Args, CertSecret: certSecret, WebhookService: webhookService,
	}
}

func (e *env) createObjects(t *testing.T) []client.Object {
	t.Helper()
	g := NewWithT(t)
	tapp := readObjects(t, filepath.Join(e.root, "config", "samples", "tapp.yaml"))[0]
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.openyurt.io/v1beta1", "kind": "NodePool",
		"metadata": map[string]any{"name": "chart-pool"}, "spec": map[string]any{"type": "Edge"},
	}}
	objs := []client.Object{tapp, pool}
	for _, o := range objs {
		// Through the release's webhooks, which the manager's own certificate serves.
		g.Expect(e.c.Create(context.Background(), o)).To(Succeed(), "creating %s %s", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
	}
	// The mutating webhook defaulted the TApp, and the controller reconciles it with the release's RBAC.
	g.Eventually(func(g Gomega) {
		g.Expect(e.c.Get(context.Background(), client.ObjectKeyFromObject(tapp), tapp)).To(Succeed())
		observed, _, err := unstructured.NestedInt64(tapp.Object, "status", "observedGeneration")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(observed).To(Equal(tapp.GetGeneration()))
	}).WithTimeout(time.Minute).Should(Succeed())
	return objs
}

func (e *env) upgrade(t *testing.T, objs []client.Object) {
	g := NewWithT(t)
	uids := map[string]string{}
	for _, o := range objs {
		uids[o.GetName()] = string(o.GetUID())
	}
	mustHelm(t, e.cluster, e.root, e.chartArgs("upgrade", "--reuse-values", "--set", "logLevel=debug")...)
	var d appsv1.Deployment
	g.Expect(e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "drover-manager"}, &d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--zap-log-level=debug"), "the upgrade reached the Deployment")
	// The release's Lease, which the manager took, keeps its holder through the upgrade.
	var l coordinationv1.Lease
	g.Expect(e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: lease}, &l)).To(Succeed())
	g.Expect(l.Spec.HolderIdentity).NotTo(BeNil())
	g.Expect(*l.Spec.HolderIdentity).NotTo(BeEmpty())
	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
		g.Expect(e.c.Get(context.Background(), client.ObjectKeyFromObject(o), got)).To(Succeed())
		g.Expect(string(got.GetUID())).To(Equal(uids[o.GetName()]), "%s survived the upgrade", o.GetName())
		g.Expect(got.GetDeletionTimestamp()).To(BeNil())
	}

	// Turning the TApp controller off takes its webhooks away but keeps its CRD, which the release
	// installed: Helm would delete the CRD, and the TApp with it.
	mustHelm(t, e.cluster, e.root, e.chartArgs("upgrade", "--reuse-values", "--set", "controllers.tapp.enabled=false")...)
	ctx := context.Background()
	g.Expect(apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKey{Name: "drover-tapp-mutating"},
		&admissionregistrationv1.MutatingWebhookConfiguration{}))).To(BeTrue(), "the TApp webhooks went with the controller")
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(e.c.Get(ctx, client.ObjectKey{Name: "tapps.apps.tkestack.io"}, &crd)).To(Succeed())
	g.Expect(crd.DeletionTimestamp).To(BeNil(), "the TApp CRD is kept")
	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
		g.Expect(e.c.Get(ctx, client.ObjectKeyFromObject(o), got)).To(Succeed())
		g.Expect(string(got.GetUID())).To(Equal(uids[o.GetName()]), "%s survived turning the TApp controller off", o.GetName())
	}
}

// guard plays the pre-delete hook: the kwok nodes do not run the hook Job's pod, so the test creates the
// hook's ServiceAccount and RBAC from the release and runs the Job's command, from the manager binary, as
// that ServiceAccount.
func (e *env) guard(t *testing.T, objs []client.Object) {
	g := NewWithT(t)
	var args []string
	var hookObjs []client.Object
	for _, o := range decodeAll(t, mustHelm(t, e.cluster, e.root, "get", "hooks", release, "--namespace", namespace)) {
		if o.GetKind() == "Job" {
			var job batchv1.Job
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &job)).To(Succeed())
			args = job.Spec.Template.Spec.Containers[0].Args
			continue
		}
		g.Expect(e.c.Create(context.Background(), o)).To(Succeed())
		hookObjs = append(hookObjs, o)
	}
	g.Expect(args).NotTo(BeEmpty(), "the release has an uninstall-guard Job")
	kubeconfig := filepath.Join(e.cluster.Dir, "uninstall-guard.kubeconfig")
	_, err := e.cluster.ServiceAccountKubeconfig(context.Background(), namespace, "drover-uninstall-guard", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())

	out, code := runGuard(t, e.manager, kubeconfig, args)
	g.Expect(code).To(Equal(1), "the guard lets an uninstall delete live objects:\n%s", out)
	g.Expect(out).To(And(ContainSubstring("TApp"), ContainSubstring("default/example-tapp"), ContainSubstring("NodePool"),
		ContainSubstring("e.g. chart-pool")))
	t.Logf("the guard refuses:\n%s", out)

	for _, o := range objs {
		g.Expect(e.c.Delete(context.Background(), o)).To(Succeed())
	}
	g.Eventually(func() string {
		out, code = runGuard(t, e.manager, kubeconfig, args)
		if code != 0 {
			return out
		}
		return ""
	}).WithTimeout(time.Minute).Should(BeEmpty(), "the guard lets the uninstall go once the objects are gone")
	for _, o := range hookObjs {
		g.Expect(e.c.Delete(context.Background(), o)).To(Succeed())
	}
}

func (e *env) uninstall(t *testing.T) {
	g := NewWithT(t)
	// The hooks ran above (guard); helm would wait for a Job the kwok nodes never run.
	mustHelm(t, e.cluster, e.root, "uninstall", release, "--namespace", namespace, "--no-hooks")
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		var crds apiextensionsv1.CustomResourceDefinitionList
		g.Expect(e.c.List(ctx, &crds)).To(Succeed())
		var left []string
		for _, c := range crds.Items {
			left = append(left, "CRD "+c.Name)
		}
		var mwc admissionregistrationv1.MutatingWebhookConfigurationList
		var vwc admissionregistrationv1.ValidatingWebhookConfigurationList
		var roles rbacv1.ClusterRoleList
		var bindings rbacv1.ClusterRoleBindingList
		g.Expect(e.c.List(ctx, &mwc)).To(Succeed())
		g.Expect(e.c.List(ctx, &vwc)).To(Succeed())
		g.Expect(e.c.List(ctx, &roles)).To(Succeed())
		g.Expect(e.c.List(ctx, &bindings)).To(Succeed())
		for _, w := range mwc.Items {
			left = append(left, "MutatingWebhookConfiguration "+w.Name)
		}
		for _, w := range vwc.Items {
			left = append(left, "ValidatingWebhookConfiguration "+w.Name)
		}
		for _, r := range roles.Items {
			if strings.HasPrefix(r.Name, "drover") {
				left = append(left, "ClusterRole "+r.Name)
			}
		}
		for _, b := range bindings.Items {
			if strings.HasPrefix(b.Name, "drover") {
				left = append(left, "ClusterRoleBinding "+b.Name)
			}
		}
		var leases coordinationv1.LeaseList
		var secrets corev1.SecretList
		var cms corev1.ConfigMapList
		g.Expect(e.c.List(ctx, &leases, client.InNamespace(namespace))).To(Succeed())
		g.Expect(e.c.List(ctx, &secrets, client.InNamespace(namespace))).To(Succeed())
		g.Expect(e.c.List(ctx, &cms, client.InNamespace(namespace))).To(Succeed())
		for _, l := range leases.Items {
			left = append(left, "Lease "+l.Name)
		}
		for _, s := range secrets.Items {
			left = append(left, "Secret "+s.Name)
		}
		for _, c := range cms.Items {
			if c.Name != "kube-root-ca.crt" {
				left = append(left, "ConfigMap "+c.Name)
			}
		}
		slices.Sort(left)
		g.Expect(left).To(BeEmpty(), "left behind by the uninstall")
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}
