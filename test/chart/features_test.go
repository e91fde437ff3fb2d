package chart

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/registry"
)

// keyOf is a controller's key under controllers in the values.
func keyOf(t *testing.T, c *kit.Controller) string {
	t.Helper()
	for _, k := range controllerKeys {
		if strings.EqualFold(k, c.Name) {
			return k
		}
	}
	t.Fatalf("controller %s has no key in controllerKeys", c.Name)
	return ""
}

// crdNames are the names (plural.group) of a controller's CRDs, from their file names (group_plural.yaml).
func crdNames(c *kit.Controller) []string {
	var out []string
	for _, f := range c.CRDs {
		group, plural, _ := strings.Cut(strings.TrimSuffix(f, ".yaml"), "_")
		out = append(out, plural+"."+group)
	}
	return out
}

// hand-written roles and bindings, rendered whatever controllers run.
var baseRBAC = []string{"drover-manager-role", "drover-manager-aggregated-role", "drover-manager-rolebinding",
	"drover-manager-aggregated-rolebinding", "drover-metrics-reader", "drover-uninstall-guard"}

// TestControllerSwitches renders each controller alone: only its CRDs, webhooks and RBAC, and only its name
// in --controllers and in the uninstall guard's CRDs.
func TestControllerSwitches(t *testing.T) {
	t.Parallel()
	for _, c := range registry.Registry() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			objs := render{values: onlyControllers(keyOf(t, c))}.objects(t)
			if args := managerArgs(t, objs); !slices.Contains(args, "--controllers="+c.Name) {
				t.Errorf("args %v: want --controllers=%s", args, c.Name)
			}
			want := crdNames(c)
			slices.Sort(want)
			if got := names(ofKind(objs, "CustomResourceDefinition")); !slices.Equal(got, want) {
				t.Errorf("CRDs %v, want %v", got, want)
			}
			var hooks []string
			for _, o := range ofKind(objs, "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration") {
				if !strings.HasPrefix(o.name(), "drover-"+c.Name+"-") {
					t.Errorf("webhook configuration %s of another controller", o.name())
				}
				for _, w := range webhooksOf(t, o) {
					hooks = append(hooks, w.Name)
				}
			}
			var declared []string
			for _, w := range c.Webhooks {
				declared = append(declared, w.Name)
			}
			slices.Sort(hooks)
			slices.Sort(declared)
			if !slices.Equal(hooks, declared) {
				t.Errorf("webhooks %v, want %v", hooks, declared)
			}
			for _, o := range ofKind(objs, "ClusterRole", "Role", "RoleBinding", "ClusterRoleBinding") {
				if !slices.Contains(baseRBAC, o.name()) && !strings.HasPrefix(o.name(), "drover-"+c.Name+"-") {
					t.Errorf("%s %s of another controller", o.kind(), o.name())
				}
			}
			if got := guardArgs(t, objs); got != "--crds="+strings.Join(crdNames(c), ",") {
				t.Errorf("uninstall guard %s, want the CRDs %v", got, crdNames(c))
			}
		})
	}
}

func TestValueChecks(t *testing.T) {
	t.Parallel()
	for values, want := range map[string]string{
		onlyControllers(): "every controller is disabled",
		"controllers: {persistentpodstate: {enabled: false}}\n": "controllers.persistentpodstate is not a known key",
		"crds: {tapp: {install: false}}\n":                      "crds.tapp is not a known key",
	} {
		if _, err := (render{values: values}).try(t); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("values %q: want a failure saying %q, got %v", values, want, err)
		}
	}
}

// TestValuesListTheRegistry checks that values.yaml documents every controller and CRD of the registry.
func TestValuesListTheRegistry(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Controllers map[string]any
		CRDs        map[string]any `json:"crds"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	var keys, plurals []string
	for _, c := range registry.Registry() {
		keys = append(keys, keyOf(t, c))
		for _, n := range crdNames(c) {
			plurals = append(plurals, strings.Split(n, ".")[0])
		}
	}
	for _, k := range keys {
		if values.Controllers[k] == nil {
			t.Errorf("values.yaml lacks controllers.%s", k)
		}
	}
	for _, p := range plurals {
		if values.CRDs[p] == nil {
			t.Errorf("values.yaml lacks crds.%s", p)
		}
	}
	if len(values.Controllers) != len(keys) || len(values.CRDs) != len(plurals) {
		t.Errorf("values.yaml lists controllers %v and crds %v; the registry has %v and %v", values.Controllers, values.CRDs, keys, plurals)
	}
}

func TestPersistentPodStateValues(t *testing.T) {
	t.Parallel()
	objs := cases["persistentpodstate"].objects(t)
	if got := names(ofKind(objs, "CustomResourceDefinition")); len(got) > 0 {
		t.Errorf("crds.persistentpodstates.install=false still renders %v", got)
	}
	if args := managerArgs(t, objs); !slices.Contains(args, "--controllers=persistentpodstate") {
		t.Errorf("the controller must still run on another installation's CRD: args %v", args)
	}
	if len(allWebhooks(t, objs)) != 2 {
		t.Errorf("want PersistentPodState's two webhooks, have %v", allWebhooks(t, objs))
	}
	cm := &corev1.ConfigMap{}
	find(t, objs, "ConfigMap", "kruise-configuration").into(t, cm)
	var whitelist struct{ Workloads []map[string]string }
	if err := json.Unmarshal([]byte(cm.Data["PPS_Watch_Custom_Workload_WhiteList"]), &whitelist); err != nil {
		t.Fatalf("the whitelist is not JSON: %v", err)
	}
	want := []map[string]string{
		{"Group": "demo.drover.dev", "Version": "v1alpha1", "Kind": "KVStore", "replicasPath": "spec.size"},
		{"Group": "example.com", "Kind": "Shard"},
	}
	if len(whitelist.Workloads) != 2 || !maps.Equal(whitelist.Workloads[0], want[0]) || !maps.Equal(whitelist.Workloads[1], want[1]) {
		t.Errorf("whitelist %v, want %v", whitelist.Workloads, want)
	}
	role := &rbacv1.ClusterRole{}
	find(t, objs, "ClusterRole", "drover-persistentpodstate-custom-workloads").into(t, role)
	checkBoundDirectly(t, objs, "drover-persistentpodstate-custom-workloads")
	if len(role.Rules) != 2 ||
		!slices.Equal(role.Rules[1].Resources, []string{"shards"}) || !slices.Equal(role.Rules[0].Verbs, []string{"get", "list", "watch"}) {
		t.Errorf("custom workload ClusterRole %+v", role)
	}
	if got := guardArgs(t, objs); got != "" {
		t.Errorf("no CRD rendered, yet an uninstall guard (%s)", got)
	}
	off := render{values: onlyControllers("tapp") + "persistentPodState: {whitelist: [{group: a, kind: B}], customWorkloadRBAC: [{apiGroups: [a], resources: [bs]}]}\n"}
	for _, o := range off.objects(t) {
		if o.name() == "kruise-configuration" || o.name() == "drover-persistentpodstate-custom-workloads" {
			t.Errorf("PersistentPodState is disabled, yet %s %s", o.kind(), o.name())
		}
	}
}

// guardArgs is the uninstall guard Job's --crds argument, "" without the Job.
func guardArgs(t *testing.T, objs []object) string {
	t.Helper()
	jobs := ofKind(objs, "Job")
	if len(jobs) == 0 {
		return ""
	}
	job := &batchv1.Job{}
	jobs[0].into(t, job)
	args := job.Spec.Template.Spec.Containers[0].Args
	if len(jobs) > 1 || len(args) != 2 || args[0] != "uninstall-guard" {
		t.Fatalf("%d Jobs; uninstall guard args %v", len(jobs), args)
	}
	return args[1]
}

func TestUninstallGuard(t *testing.T) {
	t.Parallel()
	objs := render{}.objects(t)
	hooks := 0
	for _, o := range objs {
		a := o.annotations()
		if a["helm.sh/hook"] == nil {
			continue
		}
		hooks++
		if a["helm.sh/hook"] != "pre-delete" || a["helm.sh/hook-weight"] == nil ||
			a["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
			t.Errorf("%s %s: hook annotations %v", o.kind(), o.name(), a)
		}
	}
	if hooks != 4 {
		t.Errorf("want 4 pre-delete hook objects (ServiceAccount, ClusterRole, ClusterRoleBinding, Job), have %d", hooks)
	}
	job := &batchv1.Job{}
	find(t, objs, "Job", "drover-uninstall-guard").into(t, job)
	if *job.Spec.BackoffLimit != 0 || *job.Spec.ActiveDeadlineSeconds != 300 || job.Spec.Template.Spec.ServiceAccountName != "drover-uninstall-guard" ||
		job.Spec.Template.Spec.Containers[0].Image != deployment(t, objs).Spec.Template.Spec.Containers[0].Image {
		t.Errorf("uninstall guard Job %+v", job.Spec)
	}
	var all []string
	for _, c := range registry.Registry() {
		all = append(all, crdNames(c)...)
	}
	if got := guardArgs(t, objs); got != "--crds="+strings.Join(all, ",") {
		t.Errorf("uninstall guard %s, want every CRD %v", got, all)
	}
	role := &rbacv1.ClusterRole{}
	find(t, objs, "ClusterRole", "drover-uninstall-guard").into(t, role)
	var listed []string
	for _, r := range role.Rules {
		if !slices.Equal(r.Verbs, []string{"list"}) || len(r.APIGroups) != 1 || len(r.Resources) != 1 {
			t.Errorf("uninstall guard rule %+v: want list on one resource", r)
		}
		listed = append(listed, r.Resources[0]+"."+r.APIGroups[0])
	}
	if !slices.Equal(listed, all) {
		t.Errorf("uninstall guard may list %v, want %v", listed, all)
	}
	for _, o := range cases["no-uninstall-guard"].objects(t) {
		if strings.Contains(o.name(), "uninstall-guard") {
			t.Errorf("uninstallGuard.enabled=false still renders %s %s", o.kind(), o.name())
		}
	}
}
