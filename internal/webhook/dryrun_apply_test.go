package webhook

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestApplyCauses checks that a child server-side apply cannot hold (two list entries of one key, which a
// create accepts with a warning) is reported at the field apply names, and a clean child is not.
func TestApplyCauses(t *testing.T) {
	child := func(ports ...corev1.ContainerPort) *appsv1.Deployment {
		return &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "d"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "nginx", Image: "nginx", Ports: ports}},
			}}},
		}
	}
	if causes := applyCauses(child(corev1.ContainerPort{ContainerPort: 80})); len(causes) != 0 {
		t.Errorf("clean child: causes = %v, want none", causes)
	}
	causes := applyCauses(child(corev1.ContainerPort{ContainerPort: 80}, corev1.ContainerPort{ContainerPort: 80}))
	if len(causes) != 1 {
		t.Fatalf("causes = %v, want one", causes)
	}
	c := causes[0]
	if c.Field != `spec.template.spec.containers[name="nginx"].ports` || !strings.Contains(c.Message, "duplicate entries") {
		t.Errorf("cause = %+v, want the duplicate ports at spec.template.spec.containers[name=\"nginx\"].ports", c)
	}
}

// TestApplyCausesTypedWithoutKind checks that a typed object without apiVersion and kind is checked as its kind.
func TestApplyCausesTypedWithoutKind(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "a"}}}}
	if causes := applyCauses(pod); len(causes) != 1 || !strings.HasPrefix(causes[0].Field, "spec.containers") {
		t.Errorf("causes = %v, want one at spec.containers", causes)
	}
	if causes := applyCauses(&corev1.Pod{}); len(causes) != 0 {
		t.Errorf("causes = %v, want none", causes)
	}
}
