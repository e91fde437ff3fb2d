package render

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// podTemplate returns a small pod template labelled app=web.
func testPodTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}},
			Containers: []corev1.Container{{
				Name: "web", Image: "nginx:1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				Env:   []corev1.EnvVar{{Name: "A", Value: "1"}},
			}},
		},
	}
}

// deploySpec returns a valid Deployment owner spec selecting app=web in every pool.
func deploySpec() *openyurtv1alpha1.YurtAppDaemonSpec {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	return &openyurtv1alpha1.YurtAppDaemonSpec{
		Selector: sel,
		WorkloadTemplate: openyurtv1alpha1.WorkloadTemplate{DeploymentTemplate: &openyurtv1alpha1.DeploymentTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "edge"}, Annotations: map[string]string{"note": "x"}},
			Spec:       appsv1.DeploymentSpec{Selector: sel.DeepCopy(), Template: testPodTemplate()},
		}},
		NodePoolSelector: &metav1.LabelSelector{},
	}
}

// stsSpec returns a valid StatefulSet owner spec.
func stsSpec() *openyurtv1alpha1.YurtAppDaemonSpec {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	return &openyurtv1alpha1.YurtAppDaemonSpec{
		Selector: sel,
		WorkloadTemplate: openyurtv1alpha1.WorkloadTemplate{StatefulSetTemplate: &openyurtv1alpha1.StatefulSetTemplateSpec{
			Spec: appsv1.StatefulSetSpec{
				Selector: sel.DeepCopy(), Template: testPodTemplate(), ServiceName: "web", Replicas: ptr.To[int32](2),
				PodManagementPolicy: appsv1.ParallelPodManagement,
			},
		}},
		NodePoolSelector: &metav1.LabelSelector{},
	}
}

func testInput(spec *openyurtv1alpha1.YurtAppDaemonSpec, pool Pool) Input {
	return Input{
		Owner:     OwnerRef{APIVersion: "apps.openyurt.io/v1alpha1", Kind: "YurtAppDaemon", Name: "web", UID: "uid-1"},
		Namespace: "ns", Spec: spec, Pool: pool, Revision: "web-abc", Name: ChildName(spec.TemplateType(), "web", pool.Name),
	}
}

func mustRender(t *testing.T, in Input) *Result {
	t.Helper()
	res, err := Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return res
}

// renderDeployment renders in and decodes the body into a Deployment.
func renderDeployment(t *testing.T, in Input) (*appsv1.Deployment, *Result) {
	t.Helper()
	res := mustRender(t, in)
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(res.Body.Object, d); err != nil {
		t.Fatalf("decoding the body: %v", err)
	}
	return d, res
}

func renderStatefulSet(t *testing.T, in Input) (*appsv1.StatefulSet, *Result) {
	t.Helper()
	res := mustRender(t, in)
	s := &appsv1.StatefulSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(res.Body.Object, s); err != nil {
		t.Fatalf("decoding the body: %v", err)
	}
	return s, res
}

// raw encodes v as a RawExtension for patch values.
func raw(t *testing.T, v any) *runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &runtime.RawExtension{Raw: b}
}
