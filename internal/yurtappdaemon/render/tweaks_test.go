package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

func TestMatchingTweaks(t *testing.T) {
	edge := &metav1.LabelSelector{MatchLabels: map[string]string{"type": "edge"}}
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "type", Operator: "Bogus"}}}
	tweaks := []openyurtv1alpha1.WorkloadTweak{
		{Pools: []string{"hz", "sh"}, Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](0)}},
		{NodePoolSelector: edge, Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](1)}},
		{Pools: []string{"bj"}, NodePoolSelector: edge, Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](2)}},
		{Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](3)}},
		{NodePoolSelector: &metav1.LabelSelector{}, Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](4)}},
		{NodePoolSelector: bad, Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](5)}},
	}
	cases := map[string]struct {
		pool Pool
		want []int32
	}{
		"by name":                   {Pool{Name: "hz"}, []int32{0, 4}},
		"by selector":               {Pool{Name: "gz", Labels: map[string]string{"type": "edge"}}, []int32{1, 2, 4}},
		"by both, in list order":    {Pool{Name: "bj", Labels: map[string]string{"type": "edge"}}, []int32{1, 2, 4}},
		"by name in a selector one": {Pool{Name: "bj"}, []int32{2, 4}},
		"by neither (only {})":      {Pool{Name: "cloud", Labels: map[string]string{"type": "cloud"}}, []int32{4}},
	}
	spec := deploySpec()
	spec.WorkloadTweaks = tweaks
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []int32
			for _, tw := range MatchingTweaks(spec, tc.pool) {
				got = append(got, *tw.Tweaks.Replicas)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("matching tweaks (-want +got):\n%s", diff)
			}
		})
	}
	if got := MatchingTweaks(nil, Pool{Name: "hz"}); len(got) != 0 {
		t.Errorf("nil spec: %v", got)
	}
}

func TestTweakImages(t *testing.T) {
	spec := deploySpec()
	spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{
		{Pools: []string{"hz"}, Tweaks: openyurtv1alpha1.Tweaks{ContainerImages: []openyurtv1alpha1.ContainerImage{
			{Name: "web", TargetImage: "nginx:2"}, {Name: "init", TargetImage: "busybox:2"}, {Name: "gone", TargetImage: "x"},
		}}},
		{Pools: []string{"hz"}, Tweaks: openyurtv1alpha1.Tweaks{ContainerImages: []openyurtv1alpha1.ContainerImage{
			{Name: "web", TargetImage: "nginx:3"},
		}}},
	}
	d, _ := renderDeployment(t, testInput(spec, Pool{Name: "hz"}))
	pod := d.Spec.Template.Spec
	if diff := cmp.Diff([]string{"nginx:3", "busybox:2"}, []string{pod.Containers[0].Image, pod.InitContainers[0].Image}); diff != "" {
		t.Errorf("images, the later tweak winning (-want +got):\n%s", diff)
	}
	other, _ := renderDeployment(t, testInput(spec, Pool{Name: "sh"}))
	if got := other.Spec.Template.Spec.Containers[0].Image; got != "nginx:1" {
		t.Errorf("untweaked pool got image %q", got)
	}
	if got := spec.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.Containers[0].Image; got != "nginx:1" {
		t.Errorf("template image changed to %q", got)
	}
}

func TestTweakPatches(t *testing.T) {
	cases := map[string]struct {
		patches []openyurtv1alpha1.Patch
		check   func(t *testing.T, pod corev1.PodSpec, ann map[string]string)
	}{
		"add with the pool name substituted": {
			patches: []openyurtv1alpha1.Patch{{
				Operation: openyurtv1alpha1.PatchAdd, Path: "/spec/template/spec/containers/0/env/-",
				Value: raw(t, map[string]any{"name": "POOL", "value": "pool={{nodepool-name}}"}),
			}},
			check: func(t *testing.T, pod corev1.PodSpec, _ map[string]string) {
				want := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "POOL", Value: "pool=hz"}}
				if diff := cmp.Diff(want, pod.Containers[0].Env); diff != "" {
					t.Errorf("env (-want +got):\n%s", diff)
				}
			},
		},
		"replace": {
			patches: []openyurtv1alpha1.Patch{{
				Operation: openyurtv1alpha1.PatchReplace, Path: "/spec/template/spec/containers/0/env/0/value", Value: raw(t, "2"),
			}},
			check: func(t *testing.T, pod corev1.PodSpec, _ map[string]string) {
				if got := pod.Containers[0].Env[0].Value; got != "2" {
					t.Errorf("env value %q", got)
				}
			},
		},
		"remove": {
			patches: []openyurtv1alpha1.Patch{{Operation: openyurtv1alpha1.PatchRemove, Path: "/spec/template/spec/initContainers"}},
			check: func(t *testing.T, pod corev1.PodSpec, _ map[string]string) {
				if len(pod.InitContainers) != 0 {
					t.Errorf("initContainers %v", pod.InitContainers)
				}
			},
		},
		"substitution in keys and nested values": {
			patches: []openyurtv1alpha1.Patch{{
				Operation: openyurtv1alpha1.PatchAdd, Path: "/metadata/annotations/example.com~1pool",
				Value: raw(t, "{{nodepool-name}}-{{nodepool-name}}"),
			}},
			check: func(t *testing.T, _ corev1.PodSpec, ann map[string]string) {
				if got := ann["example.com/pool"]; got != "hz-hz" {
					t.Errorf("annotation %q", got)
				}
			},
		},
		"add to a field the rendered JSON has as {}": {
			patches: []openyurtv1alpha1.Patch{{
				Operation: openyurtv1alpha1.PatchAdd, Path: "/spec/template/spec/containers/0/resources/limits",
				Value: raw(t, map[string]any{"cpu": "500m"}),
			}},
			check: func(t *testing.T, pod corev1.PodSpec, _ map[string]string) {
				if got := pod.Containers[0].Resources.Limits.Cpu().String(); got != "500m" {
					t.Errorf("cpu limit %q", got)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Pools: []string{"hz"}, Tweaks: openyurtv1alpha1.Tweaks{Patches: tc.patches}}}
			d, _ := renderDeployment(t, testInput(spec, Pool{Name: "hz"}))
			tc.check(t, d.Spec.Template.Spec, d.Annotations)
		})
	}
}

func TestTweakPatchFailureIsPerPool(t *testing.T) {
	cases := map[string]openyurtv1alpha1.Patch{
		"remove a missing path":  {Operation: openyurtv1alpha1.PatchRemove, Path: "/spec/nothing"},
		"replace a missing path": {Operation: openyurtv1alpha1.PatchReplace, Path: "/spec/paused/x", Value: raw(t, 1)},
		"result does not decode": {Operation: openyurtv1alpha1.PatchReplace, Path: "/spec/template/spec/containers", Value: raw(t, "x")},
		"unknown field":          {Operation: openyurtv1alpha1.PatchAdd, Path: "/spec/bogus", Value: raw(t, 1)},
		"add without a value":    {Operation: openyurtv1alpha1.PatchAdd, Path: "/spec/paused"},
		"unsupported operation":  {Operation: "move", Path: "/spec/paused"},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Pools: []string{"bad"}, Tweaks: openyurtv1alpha1.Tweaks{Patches: []openyurtv1alpha1.Patch{p}}}}
			_, err := Render(testInput(spec, Pool{Name: "bad"}))
			var re *RenderError
			if !errors.As(err, &re) || re.Pool != "bad" {
				t.Fatalf("Render error = %v, want a RenderError for pool bad", err)
			}
			if !strings.Contains(err.Error(), "spec.workloadTweaks[0].tweaks.patches") {
				t.Errorf("error %q does not locate the tweak", err)
			}
			if _, err := Render(testInput(spec, Pool{Name: "good"})); err != nil {
				t.Errorf("other pool: %v", err)
			}
		})
	}
}

func TestTweakProtectedFieldsReasserted(t *testing.T) {
	patches := []openyurtv1alpha1.Patch{
		{Operation: openyurtv1alpha1.PatchReplace, Path: "/metadata/name", Value: raw(t, "other")},
		{Operation: openyurtv1alpha1.PatchReplace, Path: "/metadata/namespace", Value: raw(t, "other")},
		{Operation: openyurtv1alpha1.PatchRemove, Path: "/metadata/ownerReferences"},
		{Operation: openyurtv1alpha1.PatchReplace, Path: "/metadata/labels", Value: raw(t, map[string]string{"x": "y"})},
		{Operation: openyurtv1alpha1.PatchRemove, Path: "/metadata/annotations"},
		{Operation: openyurtv1alpha1.PatchReplace, Path: "/spec/selector", Value: raw(t, map[string]any{"matchLabels": map[string]string{"a": "b"}})},
		{Operation: openyurtv1alpha1.PatchRemove, Path: "/spec/template/metadata/labels"},
		{Operation: openyurtv1alpha1.PatchReplace, Path: "/spec/template/spec/nodeSelector", Value: raw(t, map[string]string{openyurtv1beta1.LabelCurrentNodePool: "other", "disk": "ssd"})},
		{Operation: openyurtv1alpha1.PatchRemove, Path: "/spec/template/spec/tolerations"},
		{Operation: openyurtv1alpha1.PatchReplace, Path: "/apiVersion", Value: raw(t, "apps/v1beta1")},
		{Operation: openyurtv1alpha1.PatchReplace, Path: "/status", Value: raw(t, map[string]any{"replicas": 9})},
	}
	spec := deploySpec()
	spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Pools: []string{"hz"}, Tweaks: openyurtv1alpha1.Tweaks{Patches: patches}}}
	pool := Pool{Name: "hz", Taints: []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}}
	d, res := renderDeployment(t, testInput(spec, pool))

	plain := deploySpec()
	want, _ := renderDeployment(t, testInput(plain, pool))
	if diff := cmp.Diff(want.OwnerReferences, d.OwnerReferences); diff != "" {
		t.Errorf("ownerReferences (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{
		"x": "y", "app": "web", openyurtv1alpha1.LabelPoolName: "hz", openyurtv1alpha1.LabelControllerRevisionHash: "web-abc",
	}
	if diff := cmp.Diff(wantLabels, d.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{openyurtv1alpha1.AnnotationRefNodePool: "hz"}, withoutHash(d.Annotations)); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Spec.Selector, d.Spec.Selector); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{openyurtv1alpha1.LabelPoolName: "hz"}, d.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	wantNS := map[string]string{openyurtv1beta1.LabelCurrentNodePool: "hz", "disk": "ssd"}
	if diff := cmp.Diff(wantNS, d.Spec.Template.Spec.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Spec.Template.Spec.Tolerations, d.Spec.Template.Spec.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	if d.Name != "web-hz" || d.Namespace != "ns" || res.Body.GetAPIVersion() != "apps/v1" {
		t.Errorf("identity %s/%s %s", d.Namespace, d.Name, res.Body.GetAPIVersion())
	}
	if _, found := res.Body.Object["status"]; found {
		t.Errorf("status rendered")
	}
}

func TestTweaksRenderEachPoolFromAFreshCopy(t *testing.T) {
	spec := deploySpec()
	spec.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Pools: []string{"a"}, Tweaks: openyurtv1alpha1.Tweaks{
		ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "web", TargetImage: "nginx:a"}},
		Patches: []openyurtv1alpha1.Patch{{
			Operation: openyurtv1alpha1.PatchAdd, Path: "/spec/template/spec/containers/0/args", Value: raw(t, []string{"--pool={{nodepool-name}}"}),
		}},
	}}}
	plain, _ := renderDeployment(t, testInput(spec, Pool{Name: "b"}))
	a, _ := renderDeployment(t, testInput(spec, Pool{Name: "a"}))
	b, _ := renderDeployment(t, testInput(spec, Pool{Name: "b"}))
	if diff := cmp.Diff(plain, b); diff != "" {
		t.Errorf("pool b changed after rendering pool a (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"--pool=a"}, a.Spec.Template.Spec.Containers[0].Args); diff != "" {
		t.Errorf("args of a (-want +got):\n%s", diff)
	}
}
