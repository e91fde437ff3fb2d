package core

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// statusPod returns a pod with one container "c" of the spec image and the reported status.
func statusPod(specImage string, st *corev1.ContainerStatus) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: specImage}}}}
	if st != nil {
		st.Name = "c"
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{*st}
	}
	return pod
}

func withRecord(pod *corev1.Pod, rcs ...RecordedContainer) *corev1.Pod {
	raw, _ := json.Marshal(UpdateRecord{TargetHash: "v1-0000000000000001", StartTime: mt0, Containers: rcs})
	pod.Annotations = map[string]string{tkestackv1.InPlaceUpdateRecordKey: string(raw), tkestackv1.InPlaceUpdateStateKey: "true"}
	return pod
}

func TestUpdateIncompleteWithRecord(t *testing.T) {
	rec := RecordedContainer{Name: "c", Image: "nginx:1.8", ImageID: "old-id", ContainerID: "old-cid", RestartCount: 2}
	tests := map[string]struct {
		rec        RecordedContainer
		st         *corev1.ContainerStatus
		incomplete bool
	}{
		"no status":                         {rec: rec, incomplete: true},
		"unchanged":                         {rec: rec, st: &corev1.ContainerStatus{Image: "nginx:1.7.9", ImageID: "old-id", ContainerID: "old-cid", RestartCount: 2}, incomplete: true},
		"(a) imageID changed":               {rec: rec, st: &corev1.ContainerStatus{Image: "nginx:1.7.9", ImageID: "new-id", ContainerID: "old-cid", RestartCount: 2}},
		"(a) current imageID empty":         {rec: rec, st: &corev1.ContainerStatus{Image: "nginx:1.7.9", ContainerID: "old-cid", RestartCount: 2}, incomplete: true},
		"(b) new image and new container":   {rec: rec, st: &corev1.ContainerStatus{Image: "docker.io/library/nginx:1.8", ImageID: "old-id", ContainerID: "new-cid", RestartCount: 2}},
		"(b) new image and restart":         {rec: rec, st: &corev1.ContainerStatus{Image: "nginx:1.8", ImageID: "old-id", ContainerID: "old-cid", RestartCount: 3}},
		"(b) new image but nothing changed": {rec: rec, st: &corev1.ContainerStatus{Image: "nginx:1.8", ImageID: "old-id", ContainerID: "old-cid", RestartCount: 2}, incomplete: true},
		"(b) restart with old image":        {rec: rec, st: &corev1.ContainerStatus{Image: "nginx:1.7.9", ImageID: "old-id", ContainerID: "new-cid", RestartCount: 3}, incomplete: true},
		"no recorded imageID: old image start is not completion": {
			rec: RecordedContainer{Name: "c", Image: "nginx:1.8"},
			st:  &corev1.ContainerStatus{Image: "nginx:1.7.9", ImageID: "old-id", ContainerID: "cid"}, incomplete: true,
		},
		"no recorded imageID: new image start completes": {
			rec: RecordedContainer{Name: "c", Image: "nginx:1.8"},
			st:  &corev1.ContainerStatus{Image: "nginx:1.8", ImageID: "new-id", ContainerID: "cid"},
		},
		"digest pinned image via imageID": {
			rec: RecordedContainer{Name: "c", Image: newDigest, ImageID: oldDigest, ContainerID: "x"},
			st:  &corev1.ContainerStatus{Image: "sha256:2222", ImageID: newDigest, ContainerID: "y"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := withRecord(statusPod(tc.rec.Image, tc.st), tc.rec)
			if got := updateIncomplete(pod); got != tc.incomplete {
				t.Errorf("UpdateIncomplete = %v, want %v", got, tc.incomplete)
			}
		})
	}
}

func TestUpdateIncompleteSidecarRecord(t *testing.T) {
	pod := withRecord(&corev1.Pod{}, RecordedContainer{Name: "proxy", Init: true, Image: "envoy:2", ImageID: "e1"})
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", Image: "envoy:2", ImageID: "e2"}}
	if !updateIncomplete(pod) {
		t.Error("an init record must be looked up among initContainerStatuses")
	}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", Image: "envoy:2", ImageID: "e2"}}
	if updateIncomplete(pod) {
		t.Error("the sidecar reports a new imageID: done")
	}
}

func TestUpdateIncompleteLegacy(t *testing.T) {
	legacy := func(pod *corev1.Pod) *corev1.Pod {
		pod.Annotations = map[string]string{tkestackv1.InPlaceUpdateStateKey: "true"}
		return pod
	}
	tests := map[string]struct {
		pod        *corev1.Pod
		incomplete bool
	}{
		"legacy: no status":              {pod: legacy(statusPod("nginx:1.8", nil)), incomplete: true},
		"legacy: empty imageID":          {pod: legacy(statusPod("nginx:1.8", &corev1.ContainerStatus{Image: "nginx:1.8"})), incomplete: true},
		"legacy: old image":              {pod: legacy(statusPod("nginx:1.8", &corev1.ContainerStatus{Image: "nginx:1.7.9", ImageID: "x"})), incomplete: true},
		"legacy: same image":             {pod: legacy(statusPod("nginx:1.8", &corev1.ContainerStatus{Image: "nginx:1.8", ImageID: "x"}))},
		"legacy: normalised image":       {pod: legacy(statusPod("nginx:1.8", &corev1.ContainerStatus{Image: "docker.io/library/nginx:1.8", ImageID: "x"}))},
		"legacy: bare image is latest":   {pod: legacy(statusPod("nginx", &corev1.ContainerStatus{Image: "docker.io/library/nginx:latest", ImageID: "x"}))},
		"legacy: multi-tagged image":     {pod: legacy(statusPod("nginx:stable", &corev1.ContainerStatus{Image: "nginx:1.8", ImageID: "x"})), incomplete: true},
		"legacy: digest matches imageID": {pod: legacy(statusPod(newDigest, &corev1.ContainerStatus{Image: "sha256:2", ImageID: newDigest}))},
		"legacy: digest differs":         {pod: legacy(statusPod(newDigest, &corev1.ContainerStatus{Image: "sha256:1", ImageID: oldDigest})), incomplete: true},
		"no annotation: image differs":   {pod: statusPod("nginx:stable", &corev1.ContainerStatus{Image: "nginx:1.8", ImageID: "x"})},
		"no annotation: no status":       {pod: statusPod("nginx:1.8", nil)},
		"state not true": {pod: func() *corev1.Pod {
			p := legacy(statusPod("nginx:1.8", nil))
			p.Annotations[tkestackv1.InPlaceUpdateStateKey] = "false"
			return p
		}()},
		"unparsable record falls back": {pod: func() *corev1.Pod {
			p := legacy(statusPod("nginx:1.8", nil))
			p.Annotations[tkestackv1.InPlaceUpdateRecordKey] = "{"
			return p
		}(), incomplete: true},
		"nil pod": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := updateIncomplete(tc.pod); got != tc.incomplete {
				t.Errorf("UpdateIncomplete = %v, want %v", got, tc.incomplete)
			}
		})
	}
}

func TestDecideGate(t *testing.T) {
	p := passOf(newApp(1))
	done := func(pod *corev1.Pod) { // the kubelet reported the new image
		pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "nginx", Image: newImage, ImageID: "id-" + newImage, ContainerID: "cid-new", RestartCount: 1}
	}
	failedPatch := func(pod *corev1.Pod) { // gate False written after the last record was made
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == tkestackv1.InPlaceUpdateReady {
				pod.Status.Conditions[i].LastTransitionTime.Time = t0.Add(time.Minute)
			}
		}
	}
	tests := map[string]struct {
		opts []podOpt
		want GateDecision
	}{
		"gate true, current":                      {want: GateDecision{Status: "True"}},
		"gate absent (new pod)":                   {opts: []podOpt{noGate}, want: GateDecision{Write: true, Status: "True"}},
		"gate false, update incomplete":           {opts: []podOpt{updating}, want: GateDecision{Status: "False"}},
		"gate false, update done":                 {opts: []podOpt{updating, done}, want: GateDecision{Write: true, Status: "True", Completed: true}},
		"gate false, nothing in progress":         {opts: []podOpt{gateFalse}, want: GateDecision{Write: true, Status: "True"}},
		"gate false, stale record (failed patch)": {opts: []podOpt{updating, done, failedPatch}, want: GateDecision{Write: true, Status: "True"}},
		"gate false, legacy annotation done":      {opts: []podOpt{gateFalse, annotate(tkestackv1.InPlaceUpdateStateKey, "true")}, want: GateDecision{Write: true, Status: "True", Completed: true}},
		"gate unknown":                            {opts: []podOpt{func(p *corev1.Pod) { setCond(p, tkestackv1.InPlaceUpdateReady, "Unknown") }}, want: GateDecision{Write: true, Status: "True"}},
		"gate true with incomplete record":        {opts: []podOpt{updating, func(p *corev1.Pod) { setCond(p, tkestackv1.InPlaceUpdateReady, "True") }}, want: GateDecision{Status: "True"}},
		"terminating: no write":                   {opts: []podOpt{noGate, terminating}},
		"succeeded: no write":                     {opts: []podOpt{noGate, phase(corev1.PodSucceeded)}},
		"failed: no write":                        {opts: []podOpt{gateFalse, phase(corev1.PodFailed)}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decideGate(runningPod(p, 0, tc.opts...))); diff != "" {
				t.Errorf("DecideGate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInPlaceInProgress(t *testing.T) {
	p := passOf(newApp(1))
	tests := map[string]struct {
		opts []podOpt
		want bool
	}{
		"updating":        {opts: []podOpt{updating}, want: true},
		"gate true":       {},
		"terminating":     {opts: []podOpt{updating, terminating}},
		"succeeded":       {opts: []podOpt{updating, phase(corev1.PodSucceeded)}},
		"gate false only": {opts: []podOpt{gateFalse}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := inPlaceInProgress(runningPod(p, 0, tc.opts...)); got != tc.want {
				t.Errorf("InPlaceInProgress = %v, want %v", got, tc.want)
			}
		})
	}
}
