package tapp

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/tapp/core"
)

// upstreamPod is a pod as TKEStack's controller leaves it: decimal hash labels, its controller reference,
// the in-place readiness gate, running and ready.
func upstreamPod(app *tkestackv1.TApp, id, image string, owned bool) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name + "-" + id, Namespace: app.Namespace, GenerateName: app.Name + "-",
			Labels: map[string]string{"app": "web", tkestackv1.TAppInstanceKey: id,
				tkestackv1.TAppHashKey: "8412749301923", tkestackv1.TAppUniqHashKey: "5523019277"}},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "nginx", Image: image, ImagePullPolicy: corev1.PullIfNotPresent}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: tkestackv1.InPlaceUpdateReady}},
			NodeName:       "node-1",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: tkestackv1.InPlaceUpdateReady, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if owned {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: tkestackv1.GroupVersion.String(), Kind: "TApp",
			Name: app.Name, UID: app.UID, Controller: ptr.To(true)}}
	}
	return pod
}

// The preview of a TApp as TKEStack left it names what drover's first passes do to each pod, and why.
func TestPreviewUpstreamTApp(t *testing.T) {
	app := makeTApp(func(a *tkestackv1.TApp) {
		a.UID = types.UID("tapp-uid")
		a.Spec.Replicas = 5
		a.Spec.UpdateStrategy.Template = "removed"
	})
	recreated := upstreamPod(app, "2", "nginx:0", true)
	recreated.Spec.Containers[0].Args = []string{"--old"}
	objs := []client.Object{app,
		upstreamPod(app, "0", "nginx:1", true),
		upstreamPod(app, "1", "nginx:0", true),
		recreated,
		upstreamPod(app, "3", "nginx:1", false), // an orphan: adopted, then relabelled
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	reports, err := Preview(context.Background(), c, "ns", core.Options{DeletePodAfterAppFinish: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 {
		t.Fatalf("%d reports, want 1", len(reports))
	}
	r := reports[0]
	var got []string
	for _, it := range r.Items {
		got = append(got, string(it.Effect)+" "+it.Object)
	}
	want := []string{"adopt pod web-3", "relabel pod web-0", "update-in-place pod web-1", "recreate pod web-2",
		"relabel pod web-3", "create pod web-4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	whys := map[string]string{}
	for _, it := range r.Items {
		whys[it.Object+" "+string(it.Effect)] = it.Why
	}
	for key, part := range map[string]string{
		"pod web-1 update-in-place": "nginx: nginx:0 -> nginx:1",
		"pod web-2 recreate":        `spec.containers[nginx].args: the template has nothing, the pod ["--old"]`,
	} {
		if !strings.Contains(whys[key], part) {
			t.Errorf("%s: why %q does not contain %q", key, whys[key], part)
		}
	}
	if len(r.Notices) != 1 || !strings.Contains(r.Notices[0], `spec.updateStrategy.template names "removed"`) {
		t.Errorf("notices: %q", r.Notices)
	}
	var out bytes.Buffer
	if err := preview.Write(&out, reports, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "1 owner(s): 2 object(s) restart or roll") {
		t.Errorf("summary line missing:\n%s", out.String())
	}
}
