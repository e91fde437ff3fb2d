package tapp

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/tapp/core"
	"github.com/drover-dev/drover/internal/testutil"
)

// The controller's tests use the web TApp of testutil and the images and clock of the core's tests.

var (
	t0  = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mt0 = metav1.NewTime(t0)
)

const (
	testUID  = testutil.WebTAppUID
	testName = testutil.WebTAppName
	testNS   = testutil.WebTAppNS
	oldImage = "nginx:1.7.9"
	newImage = "nginx:1.8"
)

// tplWith returns the web template with the image; newApp the web TApp of oldImage (testutil.MakeWebTApp).
var tplWith = testutil.WebTemplate

func newApp(replicas int32) *testutil.TAppWrapper { return testutil.MakeWebTApp(replicas, oldImage) }

// runningPod returns the pod core.NewPod builds for id from the pass's resolved template, Running, Ready and
// with gate True since t0, its container reporting the spec image.
func runningPod(p *core.Pass, id int) *corev1.Pod {
	tpl, ok := p.Template(id)
	if !ok {
		tpl, _ = p.TemplateByName(tkestackv1.DefaultTemplateName)
	}
	pod := core.NewPod(p.App, id, tpl)
	pod.UID = types.UID(pod.Name + "-uid")
	pod.Spec.NodeName = "node-1"
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt0},
			core.NewGateCondition(corev1.ConditionTrue, t0),
		},
	}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "id-" + c.Image, ContainerID: "cid-" + c.Image,
		})
	}
	return pod
}

// setCond sets a pod condition's status, adding the condition when missing.
func setCond(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			p.Status.Conditions[i].Status = s
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: mt0})
}

// containerStatus returns the status of the named container, nil when it has none.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}
