package core

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/testutil"
)

var (
	t0  = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mt0 = metav1.NewTime(t0)
)

const (
	testUID   = testutil.WebTAppUID
	testName  = testutil.WebTAppName
	testNS    = testutil.WebTAppNS
	oldImage  = "nginx:1.7.9"
	newImage  = "nginx:1.8"
	oldDigest = "docker.io/library/nginx@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	newDigest = "docker.io/library/nginx@sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// tplWith returns the web template with the image; newApp the web TApp of oldImage (testutil.MakeWebTApp).
var tplWith = testutil.WebTemplate

func newApp(replicas int32) *testutil.TAppWrapper { return testutil.MakeWebTApp(replicas, oldImage) }

// passOf returns the pass of the TApp built so far (deletePodAfterAppFinish defaulting to true).
func passOf(w *testutil.TAppWrapper) *Pass {
	return NewPass(w.Obj(), Options{DeletePodAfterAppFinish: true})
}

func pairs(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// statuses returns instance statuses from id, status pairs.
func statuses(kv ...string) map[string]tkestackv1.InstanceStatus {
	m := map[string]tkestackv1.InstanceStatus{}
	for k, v := range pairs(kv...) {
		m[k] = tkestackv1.InstanceStatus(v)
	}
	return m
}

func intBudget(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }

func pctBudget(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }

// podOpt modifies a test pod.
type podOpt func(*corev1.Pod)

// runningPod returns the pod NewPod builds for id from the pass's resolved template, Running, Ready and
// with gate True since t0, its container reporting the spec image.
func runningPod(p *Pass, id int, opts ...podOpt) *corev1.Pod {
	tpl, ok := p.Template(id)
	if !ok {
		tpl, _ = p.TemplateByName(tkestackv1.DefaultTemplateName)
	}
	pod := NewPod(p.App, id, tpl)
	pod.UID = types.UID(pod.Name + "-uid")
	pod.Spec.NodeName = "node-1"
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt0},
			NewGateCondition(corev1.ConditionTrue, t0),
		},
	}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "id-" + c.Image, ContainerID: "cid-" + c.Image,
		})
	}
	for _, o := range opts {
		o(pod)
	}
	return pod
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func terminating(p *corev1.Pod) { p.DeletionTimestamp = &mt0 }

func notReady(p *corev1.Pod) { setCond(p, corev1.PodReady, corev1.ConditionFalse) }

func noReady(p *corev1.Pod) { dropCond(p, corev1.PodReady) }

func gateFalse(p *corev1.Pod) { setCond(p, tkestackv1.InPlaceUpdateReady, corev1.ConditionFalse) }

func noGate(p *corev1.Pod) { dropCond(p, tkestackv1.InPlaceUpdateReady) }

func label(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Labels = maps.Clone(p.Labels); p.Labels[k] = v }
}

func annotate(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func restartPolicy(rp corev1.RestartPolicy) podOpt {
	return func(p *corev1.Pod) { p.Spec.RestartPolicy = rp }
}

func setCond(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			p.Status.Conditions[i].Status = s
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: mt0})
}

func dropCond(p *corev1.Pod, t corev1.PodConditionType) {
	var out []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	p.Status.Conditions = out
}

// podsOf builds a Pods map.
func podsOf(pods ...*corev1.Pod) Pods {
	out := Pods{}
	for _, p := range pods {
		id, _ := tkestackv1.ParseInstanceID(p.Labels[tkestackv1.TAppInstanceKey])
		out[id] = p
	}
	return out
}

// actionsByID returns the plan's actions as id → action (ids as strings for readable diffs).
func actionsByID(plan *Plan) map[string]Action {
	out := map[string]Action{}
	for _, a := range plan.Actions {
		out[tkestackv1.FormatInstanceID(a.ID)] = a.Action
	}
	return out
}
