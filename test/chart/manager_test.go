package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func deployment(t *testing.T, objs []object) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	find(t, objs, "Deployment", "drover-manager").into(t, d)
	return d
}

func managerArgs(t *testing.T, objs []object) []string {
	t.Helper()
	return deployment(t, objs).Spec.Template.Spec.Containers[0].Args
}

func TestManagerDeploymentDefaults(t *testing.T) {
	t.Parallel()
	objs := render{}.objects(t)
	d := deployment(t, objs)
	spec := d.Spec.Template.Spec
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *d.Spec.Replicas)
	}
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil ||
		ru.MaxUnavailable.String() != "0" || ru.MaxSurge.String() != "1" {
		t.Errorf("strategy %+v, want RollingUpdate with maxUnavailable 0 and maxSurge 1", d.Spec.Strategy)
	}
	anti := spec.Affinity.PodAntiAffinity
	if anti == nil || len(anti.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		anti.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
		t.Errorf("want a preferred pod anti-affinity on %s, have %+v", corev1.LabelHostname, spec.Affinity)
	} else if sel := anti.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector; !matches(t, sel, d.Spec.Template.Labels) {
		t.Errorf("the anti-affinity's selector %v does not select the manager's pods", sel)
	}
	if len(spec.TopologySpreadConstraints) != 1 || spec.TopologySpreadConstraints[0].TopologyKey != corev1.LabelTopologyZone ||
		spec.TopologySpreadConstraints[0].WhenUnsatisfiable != corev1.ScheduleAnyway ||
		!matches(t, spec.TopologySpreadConstraints[0].LabelSelector, d.Spec.Template.Labels) {
		t.Errorf("want a zone spread, ScheduleAnyway, of the manager's pods; have %+v", spec.TopologySpreadConstraints)
	}
	if spec.ServiceAccountName != "drover-manager" {
		t.Errorf("serviceAccountName %q", spec.ServiceAccountName)
	}
	c := spec.Containers[0]
	if c.Image != "drover-manager:v"+version(t) {
		t.Errorf("image %q, want drover-manager:v%s", c.Image, version(t))
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" || port(c, "health") != 8081 {
		t.Errorf("probes: want /healthz and /readyz on 8081")
	}
	if port(c, "webhook") != 9443 || port(c, "metrics") != 8443 {
		t.Errorf("ports %+v: want webhook 9443, metrics 8443", c.Ports)
	}
	env := c.Env[0]
	if env.Name != "POD_NAMESPACE" || env.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("want POD_NAMESPACE from the downward API, have %+v", c.Env)
	}
	if c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Requests.Memory().String() != "256Mi" ||
		c.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("resources %+v", c.Resources)
	}
	if m := c.VolumeMounts[0]; m.MountPath != "/tmp/k8s-webhook-server/serving-certs" || !m.ReadOnly ||
		spec.Volumes[0].Secret.SecretName != "drover-webhook-server-cert" {
		t.Errorf("want the Secret drover-webhook-server-cert mounted read-only at the cert dir: %+v %+v", c.VolumeMounts, spec.Volumes)
	}
}

func TestManagerArgsDefaults(t *testing.T) {
	t.Parallel()
	args := managerArgs(t, render{}.objects(t))
	for _, want := range []string{"--leader-elect=true", "--leader-election-namespace=drover-system",
		"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s",
		"--manage-nodepools=true", "--kube-api-qps=500", "--kube-api-burst=1000", "--zap-log-level=info",
		"--metrics-bind-address=:8443", "--health-probe-bind-address=:8081", "--webhook-port=9443",
		"--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs", "--cert-mode=self", "--namespace=$(POD_NAMESPACE)",
		"--controllers=nodepool,yurtappdaemon,uniteddaemonset,tapp,persistentpodstate,stagedbindingpolicy"} {
		if !slices.Contains(args, want) {
			t.Errorf("the manager's args %v lack %s", args, want)
		}
	}
}

func port(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func TestManagerValues(t *testing.T) {
	t.Parallel()
	objs := render{values: `leaderElection: {enabled: false}
manageNodePools: false
kubeAPI: {qps: 50, burst: 100}
logLevel: debug
metrics: {port: 9090}
replicas: 3
extraArgs: ["--tapp-workers=9"]
image: {repository: registry.example/drover, tag: dev}
priorityClassName: system-cluster-critical
`}.objects(t)
	d := deployment(t, objs)
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--leader-elect=false", "--manage-nodepools=false", "--kube-api-qps=50",
		"--kube-api-burst=100", "--zap-log-level=debug", "--metrics-bind-address=:9090", "--tapp-workers=9"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--leader-elect-") || strings.HasPrefix(a, "--leader-election-") {
			t.Errorf("leader election is off, yet %s", a)
		}
	}
	if *d.Spec.Replicas != 3 || d.Spec.Template.Spec.Containers[0].Image != "registry.example/drover:dev" ||
		d.Spec.Template.Spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("replicas, image or priorityClassName not from the values: %+v", d.Spec.Template.Spec)
	}
	svc := &corev1.Service{}
	find(t, objs, "Service", "drover-metrics-service").into(t, svc)
	if svc.Spec.Ports[0].Port != 9090 {
		t.Errorf("metrics Service port %d, want 9090", svc.Spec.Ports[0].Port)
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	t.Parallel()
	objs := render{}.objects(t)
	pdb := &policyv1.PodDisruptionBudget{}
	find(t, objs, "PodDisruptionBudget", "drover-manager").into(t, pdb)
	if pdb.Spec.MaxUnavailable.String() != "1" || !matches(t, pdb.Spec.Selector, deployment(t, objs).Spec.Template.Labels) {
		t.Errorf("want maxUnavailable 1 over the manager's pods, have %+v", pdb.Spec)
	}
	if got := ofKind(render{values: "podDisruptionBudget: {enabled: false}\n"}.objects(t), "PodDisruptionBudget"); len(got) > 0 {
		t.Errorf("podDisruptionBudget.enabled=false still renders %v", names(got))
	}
}

// TestSecurityContexts checks every pod the chart renders (the manager, the uninstall guard).
func TestSecurityContexts(t *testing.T) {
	t.Parallel()
	objs := render{}.objects(t)
	job := &batchv1.Job{}
	find(t, objs, "Job", "drover-uninstall-guard").into(t, job)
	for name, spec := range map[string]corev1.PodSpec{"manager": deployment(t, objs).Spec.Template.Spec, "guard": job.Spec.Template.Spec} {
		psc := spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
			psc.RunAsGroup == nil || *psc.RunAsGroup != 65532 || psc.SeccompProfile == nil ||
			psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: pod securityContext %+v", name, psc)
		}
		for _, c := range spec.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
				*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("%s: container %s securityContext %+v", name, c.Name, sc)
			}
		}
	}
}

// clusterScoped are the kinds the chart renders without a namespace.
var clusterScoped = []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}

// TestNamespaces checks, in every case, that every namespaced object, every subject and every webhook client
// is in the release's namespace, and that no other namespace of config/ is left.
func TestNamespaces(t *testing.T) {
	t.Parallel()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := c.text(t)
			if c.ns() != defaultNamespace && strings.Contains(out, defaultNamespace) {
				t.Errorf("the render in %s still names %s", c.ns(), defaultNamespace)
			}
			for _, o := range c.objects(t) {
				ns := o.meta("namespace")
				if slices.Contains(clusterScoped, o.kind()) {
					if ns != "" {
						t.Errorf("cluster-scoped %s %s has namespace %q", o.kind(), o.name(), ns)
					}
				} else if ns != c.ns() {
					t.Errorf("%s %s is in namespace %q, not the release's %s", o.kind(), o.name(), ns, c.ns())
				}
				checkReferencedNamespaces(t, o, c.ns())
			}
		})
	}
}

func checkReferencedNamespaces(t *testing.T, o object, ns string) {
	t.Helper()
	switch o.kind() {
	case "RoleBinding", "ClusterRoleBinding":
		b := &rbacv1.RoleBinding{}
		o.into(t, b)
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace != ns {
				t.Errorf("%s %s binds %s/%s, not in %s", o.kind(), o.name(), s.Namespace, s.Name, ns)
			}
		}
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		for _, w := range webhooksOf(t, o) {
			if s := w.ClientConfig.Service; s == nil || s.Namespace != ns || s.Name != "drover-webhook-service" {
				t.Errorf("webhook %s calls %+v, not drover-webhook-service in %s", w.Name, s, ns)
			}
		}
	}
}

// version is the contents of VERSION.
func version(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func TestChartVersionIsVERSION(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	if v := version(t); chart.Version != v || chart.AppVersion != v {
		t.Errorf("Chart.yaml has version %q and appVersion %q; VERSION holds %q (run make manifests)", chart.Version, chart.AppVersion, v)
	}
}
