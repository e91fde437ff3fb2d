package chart

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// alerts lists the alerts of the rendered PrometheusRule, by group.
func alerts(t *testing.T, objs []object) map[string][]string {
	t.Helper()
	var rule struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              struct {
			Groups []struct {
				Name  string
				Rules []struct {
					Alert, Expr, For    string
					Labels, Annotations map[string]string
				}
			}
		}
	}
	find(t, objs, "PrometheusRule", "drover-manager").into(t, &rule)
	out := map[string][]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Labels["severity"] == "" || !strings.Contains(r.Expr, `job="drover-metrics-service"`) {
				t.Errorf("alert %s: want a severity and the manager's series only, have %+v", r.Alert, r)
			}
			out[g.Name] = append(out[g.Name], r.Alert)
		}
	}
	return out
}

func TestMonitoring(t *testing.T) {
	t.Parallel()
	c := cases["monitoring"]
	objs := c.objects(t)
	sm := find(t, objs, "ServiceMonitor", "drover-manager")
	spec, _ := sm["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	svc := find(t, objs, "Service", "drover-metrics-service")
	svcLabels, _ := svc["metadata"].(map[string]any)["labels"].(map[string]any)
	for k, v := range sel["matchLabels"].(map[string]any) {
		if svcLabels[k] != v {
			t.Errorf("the ServiceMonitor's selector %v does not select drover-metrics-service (%v)", sel, svcLabels)
		}
	}
	got := alerts(t, objs)
	for group, want := range map[string][]string{
		"drover.manager":             {"DroverManagerDown", "DroverReconcileErrors", "DroverWorkqueueBacklog", "DroverWebhookErrors"},
		"drover.nodepool":            {"DroverNodePoolNodePatchErrors"},
		"drover.yurtappdaemon":       {"DroverYurtAppDaemonWorkloadWriteErrors", "DroverYurtAppDaemonRenderErrors", "DroverYurtAppDaemonNormalizationMismatches"},
		"drover.tapp":                {"DroverTAppPodWriteErrors"},
		"drover.persistentpodstate":  {"DroverPersistentPodStateSizeLimited", "DroverPersistentPodStateStatusWriteErrors", "DroverPersistentPodStatePodWebhookErrors", "DroverPersistentPodStateWhitelistInvalid", "DroverPersistentPodStateCustomKindsPending"},
		"drover.stagedbindingpolicy": {"DroverStagedBindingPolicyHalted", "DroverStagedBindingPolicyCELErrors"},
	} {
		if !slices.Equal(got[group], want) {
			t.Errorf("alert group %s: %v, want %v", group, got[group], want)
		}
	}
	only := render{values: c.values + onlyControllers("tapp"), args: c.args}.objects(t)
	g := alerts(t, only)
	if len(g) != 2 || g["drover.tapp"] == nil {
		t.Errorf("with only tapp enabled, want the manager's and TApp's alerts, have %v", g)
	}
	for _, values := range []string{"metrics: {serviceMonitor: {enabled: true}}\n", "metrics: {prometheusRule: {enabled: true}}\n"} {
		_, err := render{values: values}.try(t)
		if err == nil || !strings.Contains(err.Error(), "need the Prometheus Operator's CRDs (API monitoring.coreos.com/v1") {
			t.Errorf("%s without the Prometheus Operator's CRDs: want a clear failure, got %v", strings.TrimSpace(values), err)
		}
	}
	for _, o := range (render{}).objects(t) {
		if o.kind() == "ServiceMonitor" || o.kind() == "PrometheusRule" {
			t.Errorf("monitoring is off by default, yet %s", o.kind())
		}
	}
}
