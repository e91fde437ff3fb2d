package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

// fieldErr is what the tests compare of a field error.
type fieldErr struct {
	Type  field.ErrorType
	Field string
}

func summarize(errs field.ErrorList) []fieldErr {
	var out []fieldErr
	for _, e := range errs {
		out = append(out, fieldErr{Type: e.Type, Field: e.Field})
	}
	return out
}

const (
	dPod = "spec.workloadTemplate.deploymentTemplate.spec.template"
	tw0  = "spec.workloadTweaks[0]"
)

func tweak(t openyurtv1alpha1.Tweaks) openyurtv1alpha1.WorkloadTweak {
	return openyurtv1alpha1.WorkloadTweak{Pools: []string{"hz"}, Tweaks: t}
}

func patch(op openyurtv1alpha1.PatchOperation, path string, value *runtime.RawExtension) openyurtv1alpha1.Tweaks {
	return openyurtv1alpha1.Tweaks{Patches: []openyurtv1alpha1.Patch{{Operation: op, Path: path, Value: value}}}
}

func TestValidateSpecRules(t *testing.T) {
	cases := map[string]struct {
		edit func(s *openyurtv1alpha1.YurtAppDaemonSpec)
		want []fieldErr
	}{
		"valid Deployment spec": {edit: func(*openyurtv1alpha1.YurtAppDaemonSpec) {}},
		"no template": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.WorkloadTemplate.DeploymentTemplate = nil },
			want: []fieldErr{{field.ErrorTypeRequired, "spec.workloadTemplate"}},
		},
		"both templates": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTemplate.StatefulSetTemplate = stsSpec().WorkloadTemplate.StatefulSetTemplate
			},
			want: []fieldErr{{field.ErrorTypeInvalid, "spec.workloadTemplate"}},
		},
		"no selector": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.Selector = nil },
			want: []fieldErr{{field.ErrorTypeRequired, "spec.selector"}},
		},
		"empty selector": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.Selector = &metav1.LabelSelector{} },
			want: []fieldErr{{field.ErrorTypeInvalid, "spec.selector"}},
		},
		"invalid selector": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}
			},
			want: []fieldErr{{field.ErrorTypeInvalid, "spec.selector.matchExpressions[0].operator"}},
		},
		"pool-name key in the selector": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: openyurtv1alpha1.LabelPoolName, Operator: metav1.LabelSelectorOpExists}}
			},
			// The pod labels lack the key, so the pod-label rule fails too.
			want: []fieldErr{{field.ErrorTypeForbidden, "spec.selector"}, {field.ErrorTypeInvalid, dPod + ".metadata.labels"}},
		},
		"selector with only matchExpressions": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}
			},
		},
		"selector does not match the pod labels": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.Selector.MatchLabels["app"] = "other" },
			want: []fieldErr{{field.ErrorTypeInvalid, dPod + ".metadata.labels"}},
		},
		"pool-name key in the pod labels": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTemplate.DeploymentTemplate.Spec.Template.Labels[openyurtv1alpha1.LabelPoolName] = "x"
			},
			want: []fieldErr{{field.ErrorTypeForbidden, dPod + ".metadata.labels"}},
		},
		"no nodepoolSelector": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.NodePoolSelector = nil },
			want: []fieldErr{{field.ErrorTypeRequired, "spec.nodepoolSelector"}},
		},
		"invalid nodepoolSelector": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.NodePoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}
			},
			want: []fieldErr{{field.ErrorTypeInvalid, "spec.nodepoolSelector.matchLabels"}},
		},
		"negative revisionHistoryLimit": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.RevisionHistoryLimit = ptr.To[int32](-1) },
			want: []fieldErr{{field.ErrorTypeInvalid, "spec.revisionHistoryLimit"}},
		},
		"nodepool key in the pod nodeSelector": {
			edit: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.NodeSelector = map[string]string{openyurtv1beta1.LabelCurrentNodePool: "x"}
			},
			want: []fieldErr{{field.ErrorTypeForbidden, dPod + ".spec.nodeSelector"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			tc.edit(spec)
			if diff := cmp.Diff(tc.want, summarize(ValidateSpec(spec, field.NewPath("spec")))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateSpecTweaks(t *testing.T) {
	valid := raw(t, map[string]string{"name": "POOL", "value": "{{nodepool-name}}"})
	cases := map[string]struct {
		tweak openyurtv1alpha1.WorkloadTweak
		want  []fieldErr
	}{
		"valid by pools": {tweak: tweak(openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](0)})},
		"valid by selector": {tweak: openyurtv1alpha1.WorkloadTweak{
			NodePoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		}},
		"neither pools nor selector": {
			tweak: openyurtv1alpha1.WorkloadTweak{},
			want:  []fieldErr{{field.ErrorTypeRequired, tw0}},
		},
		"invalid selector": {
			tweak: openyurtv1alpha1.WorkloadTweak{NodePoolSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn}},
			}},
			want: []fieldErr{{field.ErrorTypeRequired, tw0 + ".nodepoolSelector.matchExpressions[0].values"}},
		},
		"invalid pool names": {
			tweak: openyurtv1alpha1.WorkloadTweak{Pools: []string{"ok", "not ok", ""}},
			want:  []fieldErr{{field.ErrorTypeInvalid, tw0 + ".pools[1]"}, {field.ErrorTypeInvalid, tw0 + ".pools[2]"}},
		},
		"negative replicas": {
			tweak: tweak(openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](-1)}),
			want:  []fieldErr{{field.ErrorTypeInvalid, tw0 + ".tweaks.replicas"}},
		},
		"images": {
			tweak: tweak(openyurtv1alpha1.Tweaks{ContainerImages: []openyurtv1alpha1.ContainerImage{
				{Name: "web", TargetImage: "a"}, {Name: "init", TargetImage: "b"}, {Name: "nope", TargetImage: "c"}, {},
			}}),
			want: []fieldErr{
				{field.ErrorTypeNotFound, tw0 + ".tweaks.containerImages[2].name"},
				{field.ErrorTypeRequired, tw0 + ".tweaks.containerImages[3].name"},
				{field.ErrorTypeRequired, tw0 + ".tweaks.containerImages[3].targetImage"},
			},
		},
		"valid patch": {tweak: tweak(patch(openyurtv1alpha1.PatchAdd, "/spec/template/spec/containers/0/env/-", valid))},
		"unsupported operation": {
			tweak: tweak(patch("move", "/spec/paused", nil)),
			want:  []fieldErr{{field.ErrorTypeNotSupported, tw0 + ".tweaks.patches[0].operation"}},
		},
		"not a JSON pointer": {
			tweak: tweak(patch(openyurtv1alpha1.PatchRemove, "spec/paused", nil)),
			want:  []fieldErr{{field.ErrorTypeInvalid, tw0 + ".tweaks.patches[0].path"}},
		},
		"bad escape": {
			tweak: tweak(patch(openyurtv1alpha1.PatchRemove, "/metadata/labels/a~2b", nil)),
			want:  []fieldErr{{field.ErrorTypeInvalid, tw0 + ".tweaks.patches[0].path"}},
		},
		"protected path": {
			tweak: tweak(patch(openyurtv1alpha1.PatchReplace, "/spec/selector/matchLabels", valid)),
			want:  []fieldErr{{field.ErrorTypeForbidden, tw0 + ".tweaks.patches[0].path"}},
		},
		"protected prefix is not a path prefix": {
			tweak: tweak(patch(openyurtv1alpha1.PatchAdd, "/metadata/nameless", valid)),
			want:  []fieldErr{{field.ErrorTypeInvalid, tw0 + ".tweaks.patches"}},
		},
		"missing value": {
			tweak: tweak(patch(openyurtv1alpha1.PatchReplace, "/spec/paused", nil)),
			want:  []fieldErr{{field.ErrorTypeRequired, tw0 + ".tweaks.patches[0].value"}},
		},
		"patch does not apply": {
			tweak: tweak(patch(openyurtv1alpha1.PatchRemove, "/spec/template/spec/containers/5", nil)),
			want:  []fieldErr{{field.ErrorTypeInvalid, tw0 + ".tweaks.patches[0]"}},
		},
		"patch of the toleration rendered for a pool taint": {
			tweak: tweak(patch(openyurtv1alpha1.PatchReplace, "/spec/template/spec/tolerations/0/operator", raw(t, "Exists"))),
		},
		"patched object does not decode": {
			tweak: tweak(patch(openyurtv1alpha1.PatchReplace, "/spec/template/spec/containers", raw(t, 1))),
			want:  []fieldErr{{field.ErrorTypeInvalid, tw0 + ".tweaks.patches"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{tc.tweak}
			if diff := cmp.Diff(tc.want, summarize(ValidateSpec(spec, field.NewPath("spec")))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidatePatchesInOrder: a tweak whose patch relies on an earlier tweak's add is accepted, as rendering
// applies matching tweaks in order; one that applies in no order is still refused.
func TestValidatePatchesInOrder(t *testing.T) {
	addArgs := tweak(patch(openyurtv1alpha1.PatchAdd, "/spec/template/spec/containers/0/args", raw(t, []string{"--a"})))
	appendArg := tweak(patch(openyurtv1alpha1.PatchAdd, "/spec/template/spec/containers/0/args/-", raw(t, "--b")))
	spec := deploySpec()
	spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{addArgs, appendArg}
	if errs := ValidateSpec(spec, field.NewPath("spec")); len(errs) != 0 {
		t.Errorf("tweak 1 after tweak 0: %v", errs)
	}
	spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{appendArg, addArgs}
	want := []fieldErr{{field.ErrorTypeInvalid, tw0 + ".tweaks.patches[0]"}}
	if diff := cmp.Diff(want, summarize(ValidateSpec(spec, field.NewPath("spec")))); diff != "" {
		t.Errorf("tweak 0 before the add (-want +got):\n%s", diff)
	}
	// Several tweaks that need the earlier ones, around tweaks that fail in any order (and are left out of
	// what the later ones are checked after).
	removeArgs := tweak(patch(openyurtv1alpha1.PatchRemove, "/spec/template/spec/containers/0/args", nil))
	missing := tweak(patch(openyurtv1alpha1.PatchRemove, "/spec/nothing", nil))
	spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{appendArg, addArgs, appendArg, missing, appendArg, removeArgs, appendArg, removeArgs}
	want = []fieldErr{
		{field.ErrorTypeInvalid, tw0 + ".tweaks.patches[0]"},
		{field.ErrorTypeInvalid, "spec.workloadTweaks[3].tweaks.patches[0]"},
		{field.ErrorTypeInvalid, "spec.workloadTweaks[6].tweaks.patches[0]"},
		{field.ErrorTypeInvalid, "spec.workloadTweaks[7].tweaks.patches[0]"},
	}
	if diff := cmp.Diff(want, summarize(ValidateSpec(spec, field.NewPath("spec")))); diff != "" {
		t.Errorf("a chain of tweaks (-want +got):\n%s", diff)
	}
}

func TestValidateSpecAccumulates(t *testing.T) {
	spec := stsSpec()
	spec.Selector = nil
	spec.NodePoolSelector = nil
	spec.RevisionHistoryLimit = ptr.To[int32](-3)
	spec.WorkloadTemplate.StatefulSetTemplate.Spec.Template.Labels[openyurtv1alpha1.LabelPoolName] = "x"
	spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{
		tweak(openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](1)}),
		{Tweaks: openyurtv1alpha1.Tweaks{Patches: []openyurtv1alpha1.Patch{{Operation: openyurtv1alpha1.PatchRemove, Path: "/status"}}}},
	}
	want := []fieldErr{
		{field.ErrorTypeRequired, "spec.selector"},
		{field.ErrorTypeForbidden, "spec.workloadTemplate.statefulSetTemplate.spec.template.metadata.labels"},
		{field.ErrorTypeRequired, "spec.nodepoolSelector"},
		{field.ErrorTypeRequired, "spec.workloadTweaks[1]"},
		{field.ErrorTypeForbidden, "spec.workloadTweaks[1].tweaks.patches[0].path"},
		{field.ErrorTypeInvalid, "spec.revisionHistoryLimit"},
	}
	if diff := cmp.Diff(want, summarize(ValidateSpec(spec, field.NewPath("spec")))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	// The controller's subset leaves out the revisionHistoryLimit and nodeSelector rules.
	if diff := cmp.Diff(want[:5], summarize(ValidateRenderable(spec, field.NewPath("spec")))); diff != "" {
		t.Errorf("ValidateRenderable errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]fieldErr{{field.ErrorTypeRequired, "x"}}, summarize(ValidateSpec(nil, field.NewPath("x")))); diff != "" {
		t.Errorf("nil spec (-want +got):\n%s", diff)
	}
}

func TestProtectedPaths(t *testing.T) {
	got := ProtectedPaths()
	want := []string{
		"/apiVersion", "/kind", "/metadata/name", "/metadata/namespace", "/metadata/generateName",
		"/metadata/ownerReferences", "/spec/selector", "/status",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ProtectedPaths (-want +got):\n%s", diff)
	}
	got[0] = "changed"
	if ProtectedPaths()[0] != "/apiVersion" {
		t.Errorf("ProtectedPaths returned its own slice")
	}
}
