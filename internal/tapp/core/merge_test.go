package core

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

func containers(kv ...string) []corev1.Container {
	var out []corev1.Container
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, corev1.Container{Name: kv[i], Image: kv[i+1]})
	}
	return out
}

func images(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+"="+c.Image)
	}
	return out
}

func TestMergePodContainers(t *testing.T) {
	tests := map[string]struct {
		live, desired []corev1.Container
		want          []string
		changes       []ContainerChange
	}{
		"by name": {
			live: containers("a", "a:1", "b", "b:1"), desired: containers("b", "b:2", "a", "a:1"),
			want: []string{"a=a:1", "b=b:2"}, changes: []ContainerChange{{Name: "b", Image: "b:2"}},
		},
		"index fallback for a renamed container": {
			live: containers("old", "x:1"), desired: containers("new", "x:2"),
			want: []string{"old=x:2"}, changes: []ContainerChange{{Name: "old", Image: "x:2"}},
		},
		"no index fallback when the live name is desired elsewhere": {
			live: containers("b", "b:1", "a", "a:1"), desired: containers("c", "c:2", "b", "b:2"),
			want: []string{"b=b:2", "a=a:1"}, changes: []ContainerChange{{Name: "b", Image: "b:2"}},
		},
		"extra live containers are kept": {
			live: containers("a", "a:1", "istio-proxy", "istio:1"), desired: containers("a", "a:2"),
			want: []string{"a=a:2", "istio-proxy=istio:1"}, changes: []ContainerChange{{Name: "a", Image: "a:2"}},
		},
		"desired container beyond live ones is ignored": {
			live: containers("a", "a:1"), desired: containers("a", "a:1", "b", "b:1"),
			want: []string{"a=a:1"},
		},
		"unchanged": {live: containers("a", "a:1"), desired: containers("a", "a:1"), want: []string{"a=a:1"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			live := &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.live}}
			live.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "INJECTED", Value: "1"}}
			desired := &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.desired}}
			before := live.DeepCopy()
			got, changes := MergePod(live, desired)
			if diff := cmp.Diff(tc.want, images(got.Spec.Containers)); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.changes, changes); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if got.Spec.Containers[0].Env[0].Name != "INJECTED" {
				t.Error("fields other than image must survive")
			}
			if diff := cmp.Diff(before, live); diff != "" {
				t.Errorf("live pod modified:\n%s", diff)
			}
		})
	}
}

func TestMergePodInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(name, image string) corev1.Container {
		return corev1.Container{Name: name, Image: image, RestartPolicy: &always}
	}
	live := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{
		{Name: "init", Image: "busybox:1"}, sidecar("proxy", "envoy:1"), sidecar("injected", "x:1"),
	}}}
	desired := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{
		{Name: "init", Image: "busybox:2"}, sidecar("proxy", "envoy:2"),
	}}}
	got, changes := MergePod(live, desired)
	if diff := cmp.Diff([]string{"init=busybox:1", "proxy=envoy:2", "injected=x:1"}, images(got.Spec.InitContainers)); diff != "" {
		t.Errorf("init containers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]ContainerChange{{Name: "proxy", Init: true, Image: "envoy:2"}}, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	// A renamed sidecar falls back by index only onto a live sidecar.
	live2 := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}}}}
	desired2 := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{sidecar("proxy", "envoy:2")}}}
	if _, changes := MergePod(live2, desired2); len(changes) != 0 {
		t.Errorf("a regular live init container must not get a sidecar image: %v", changes)
	}
}

func TestMergePodMetadata(t *testing.T) {
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{"keep": "1", "over": "old", tkestackv1.TAppHashKey: "v1-old"},
		Annotations: map[string]string{tkestackv1.PortMappingKey: "live", "keep": "1"},
		Finalizers:  []string{"f"},
	}, Spec: corev1.PodSpec{NodeName: "n1"}}
	desired := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{"over": "new", "add": "1", tkestackv1.TAppHashKey: "v1-new"},
		Annotations: map[string]string{tkestackv1.PortMappingKey: "desired", "add": "1"},
	}, Spec: corev1.PodSpec{NodeName: "other"}}
	got, _ := MergePod(live, desired)
	want := live.DeepCopy()
	want.Labels = map[string]string{"keep": "1", "over": "new", "add": "1", tkestackv1.TAppHashKey: "v1-new"}
	want.Annotations = map[string]string{tkestackv1.PortMappingKey: "live", "keep": "1", "add": "1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	// Without a live portmapping the desired one is added; with nil live maps nothing panics.
	got, _ = MergePod(&corev1.Pod{}, desired)
	if got.Annotations[tkestackv1.PortMappingKey] != "desired" || got.Labels["add"] != "1" {
		t.Errorf("merged onto an empty pod: %+v", got.ObjectMeta)
	}
}

func TestStartInPlaceUpdate(t *testing.T) {
	p := passOf(newApp(1).Image(newImage))
	tpl, _ := p.Template(0)
	desired := NewPod(p.App, 0, tpl)
	gated := runningPod(passOf(newApp(1)), 0, gateFalse)
	gated.Status.ContainerStatuses[0].RestartCount = 4
	// A previous record with an incomplete container that this update does not touch is carried over.
	prevRec := RecordedContainer{Name: "sidecar-gone", Init: true, Image: "envoy:2", ImageID: "e1"}
	gated = withRecordKeep(gated, prevRec, RecordedContainer{Name: "nginx", Image: "nginx:1.7.9", ImageID: "other"})

	patched, changes, err := StartInPlaceUpdate(gated, desired, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ContainerChange{{Name: "nginx", Image: newImage}}, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	rec, ok := RecordOf(patched)
	if !ok {
		t.Fatal("no record")
	}
	want := &UpdateRecord{TargetHash: tpl.Hash, StartTime: metav1.NewTime(t0.Add(time.Second)), Containers: []RecordedContainer{
		{Name: "nginx", Image: newImage, ImageID: "id-" + oldImage, ContainerID: "cid-" + oldImage, RestartCount: 4},
		prevRec,
	}}
	if diff := cmp.Diff(want, rec); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if patched.Annotations[tkestackv1.InPlaceUpdateStateKey] != "true" || patched.Spec.Containers[0].Image != newImage ||
		patched.Labels[tkestackv1.TAppHashKey] != tpl.Hash {
		t.Errorf("patched pod: %+v", patched.ObjectMeta)
	}
	if patched.ResourceVersion != gated.ResourceVersion {
		t.Error("the patch is based on the gated pod")
	}

	// Metadata-only: no record, no state annotation.
	same := runningPod(p, 0, label(tkestackv1.TAppHashKey, "v1-0000000000000000"))
	patched, changes, err = StartInPlaceUpdate(same, desired, t0)
	if err != nil || len(changes) != 0 || patched.Annotations[tkestackv1.InPlaceUpdateStateKey] != "" ||
		patched.Labels[tkestackv1.TAppHashKey] != tpl.Hash {
		t.Errorf("metadata-only: changes %v err %v annotations %v", changes, err, patched.Annotations)
	}
}

// withRecordKeep adds a record to a pod, keeping its other annotations.
func withRecordKeep(pod *corev1.Pod, rcs ...RecordedContainer) *corev1.Pod {
	out := pod.DeepCopy()
	ann := withRecord(&corev1.Pod{}, rcs...).Annotations
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[tkestackv1.InPlaceUpdateRecordKey] = ann[tkestackv1.InPlaceUpdateRecordKey]
	return out
}

func TestRestamp(t *testing.T) {
	p := passOf(newApp(1))
	tpl, _ := p.Template(0)
	pod := runningPod(p, 0, label(tkestackv1.TAppHashKey, "12345"), label(tkestackv1.TAppUniqHashKey, "678"))
	got := Restamp(pod, tpl)
	if got.Labels[tkestackv1.TAppHashKey] != tpl.Hash || got.Labels[tkestackv1.TAppUniqHashKey] != tpl.UniqHash {
		t.Errorf("labels = %v", got.Labels)
	}
	if pod.Labels[tkestackv1.TAppHashKey] != "12345" {
		t.Error("Restamp modified its input")
	}
}

func TestUpToDateForeign(t *testing.T) {
	p := passOf(newApp(1))
	tpl, _ := p.Template(0)
	tests := map[string]struct {
		podContainers []corev1.Container
		want          bool
	}{
		"same image":          {podContainers: containers("nginx", oldImage), want: true},
		"normalised image":    {podContainers: containers("nginx", "docker.io/library/nginx:1.7.9"), want: true},
		"extra pod container": {podContainers: containers("nginx", oldImage, "sidecar", "x"), want: true},
		"other image":         {podContainers: containers("nginx", newImage)},
		"container missing":   {podContainers: containers("other", oldImage)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.podContainers}}
			if got := upToDateForeign(pod, tpl); got != tc.want {
				t.Errorf("upToDateForeign = %v", got)
			}
		})
	}
}
