package render

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// onlyEmpty reports whether v is null or objects holding nothing but such values.
func onlyEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range x {
			if !onlyEmpty(e) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// sameAsJSON checks that got is encoding/json's output want without nulls and empty objects, except the
// empty objects got keeps.
func sameAsJSON(t *testing.T, path string, got, want any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: got %#v, want an object", path, got)
			return
		}
		for k, wv := range w {
			gv, found := g[k]
			if !found {
				if !onlyEmpty(wv) {
					t.Errorf("%s.%s missing, want %v", path, k, wv)
				}
				continue
			}
			sameAsJSON(t, path+"."+k, gv, wv)
		}
		for k := range g {
			if _, found := w[k]; !found {
				t.Errorf("%s.%s is extra", path, k)
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Errorf("%s: got %#v, want %#v", path, got, want)
			return
		}
		for i := range w {
			sameAsJSON(t, fmt.Sprintf("%s[%d]", path, i), g[i], w[i])
		}
	default:
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-json +walk):\n%s", path, diff)
		}
	}
}

func TestToJSONMapFollowsEncodingJSON(t *testing.T) {
	spec := deploySpec().WorkloadTemplate.DeploymentTemplate.Spec
	richPod(&spec.Template.Spec)
	defaultPod(&spec.Template)
	spec.Replicas = ptr.To[int32](0)
	spec.Paused = true
	spec.Strategy = appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1))}}
	pod := &spec.Template.Spec
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))},
	}})
	pod.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	pod.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}

	got, err := toJSONMap(&spec)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(&spec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := decodeJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	sameAsJSON(t, "spec", got, want)
	if _, found := got["strategy"].(map[string]any)["type"]; found {
		t.Errorf("empty strategy.type rendered")
	}
	if got["replicas"] != int64(0) {
		t.Errorf("explicit replicas 0 not rendered: %v", got["replicas"])
	}
}

func TestToJSONMapMetadata(t *testing.T) {
	got, err := toJSONMap(metav1.ObjectMeta{Name: "x", Labels: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"name": "x"}, got); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}
