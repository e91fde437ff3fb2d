package core

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// updating marks a pod as being updated in place to newImage: gate False, record not yet reflected.
func updating(p *corev1.Pod) {
	gateFalse(p)
	p.Spec.Containers[0].Image = newImage
	rec := UpdateRecord{TargetHash: "v1-0000000000000001", StartTime: mt0, Containers: []RecordedContainer{{
		Name: "nginx", Image: newImage, ImageID: "id-" + oldImage, ContainerID: "cid-" + oldImage,
	}}}
	raw, _ := json.Marshal(rec)
	annotate(tkestackv1.InPlaceUpdateRecordKey, string(raw))(p)
	annotate(tkestackv1.InPlaceUpdateStateKey, "true")(p)
}

func TestPodInstanceStatus(t *testing.T) {
	p := passOf(newApp(3))
	tests := map[string]struct {
		opts    []podOpt
		prev    tkestackv1.InstanceStatus
		migrate bool
		want    tkestackv1.InstanceStatus
	}{
		"1 terminating, prev unfinished":            {opts: []podOpt{terminating}, prev: "Running", want: "Killing"},
		"1 terminating, no prev":                    {opts: []podOpt{terminating}, want: "Killing"},
		"1 terminating, prev finished → phase":      {opts: []podOpt{terminating, phase(corev1.PodSucceeded)}, prev: "Succ", want: "Succ"},
		"1 terminating, prev Killed → phase":        {opts: []podOpt{terminating}, prev: "Killed", want: "Running"},
		"2 running, update in progress":             {opts: []podOpt{updating}, want: "Updating"},
		"2 pending, update in progress":             {opts: []podOpt{updating, phase(corev1.PodPending)}, want: "Updating"},
		"2 terminating beats updating":              {opts: []podOpt{updating, terminating}, prev: "Running", want: "Killing"},
		"2 gate True with incomplete record":        {opts: []podOpt{updating, func(p *corev1.Pod) { setCond(p, tkestackv1.InPlaceUpdateReady, "True") }}, want: "Running"},
		"3 pending":                                 {opts: []podOpt{phase(corev1.PodPending)}, want: "Pending"},
		"3 empty phase":                             {opts: []podOpt{phase("")}, want: "Pending"},
		"4 running, ready":                          {want: "Running"},
		"4 running, ready absent":                   {opts: []podOpt{noReady}, want: "Running"},
		"5 running, not ready":                      {opts: []podOpt{notReady}, want: "Pending"},
		"5 running, ready unknown":                  {opts: []podOpt{func(p *corev1.Pod) { setCond(p, corev1.PodReady, "Unknown") }}, want: "Pending"},
		"6 succeeded, migrating":                    {opts: []podOpt{phase(corev1.PodSucceeded)}, migrate: true, want: "PodSucc"},
		"6 succeeded, staying":                      {opts: []podOpt{phase(corev1.PodSucceeded)}, want: "Succ"},
		"6 failed, migrating":                       {opts: []podOpt{phase(corev1.PodFailed)}, migrate: true, want: "PodFailed"},
		"6 failed, staying":                         {opts: []podOpt{phase(corev1.PodFailed)}, want: "Failed"},
		"7 unknown":                                 {opts: []podOpt{phase(corev1.PodUnknown)}, want: "Unknown"},
		"7 other phase":                             {opts: []podOpt{phase("Weird")}, want: "Unknown"},
		"spec killed but pod running reports pod":   {want: "Running"},
		"prev Succ but pod running reports the pod": {prev: "Succ", want: "Running"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := runningPod(p, 1, tc.opts...)
			if got := podInstanceStatus(pod, tc.prev, tc.migrate); got != tc.want {
				t.Errorf("PodInstanceStatus = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMissingInstanceStatus(t *testing.T) {
	tests := map[string]struct {
		killed bool
		prev   tkestackv1.InstanceStatus
		want   tkestackv1.InstanceStatus
	}{
		"killed":                    {killed: true, prev: "Running", want: "Killed"},
		"killed, prev Succ":         {killed: true, prev: "Succ", want: "Killed"},
		"prev Killed stays Killed":  {prev: "Killed", want: "Killed"},
		"prev Succ sticky":          {prev: "Succ", want: "Succ"},
		"prev Failed sticky":        {prev: "Failed", want: "Failed"},
		"prev Running → NotCreated": {prev: "Running", want: "NotCreated"},
		"prev Killing → NotCreated": {prev: "Killing", want: "NotCreated"},
		"prev PodSucc → NotCreated": {prev: "PodSucc", want: "NotCreated"},
		"no prev → NotCreated":      {want: "NotCreated"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := missingInstanceStatus(tc.killed, tc.prev); got != tc.want {
				t.Errorf("MissingInstanceStatus = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestWillMigrate: Succeeded/Failed × restartPolicy × neverMigrate × kubelet-rejected.
func TestWillMigrate(t *testing.T) {
	for _, ph := range []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed} {
		for _, rp := range []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever, ""} {
			for _, never := range []bool{false, true} {
				for _, rejected := range []bool{false, true} {
					name := fmt.Sprintf("%s/%q/never=%v/rejected=%v", ph, rp, never, rejected)
					t.Run(name, func(t *testing.T) {
						app := passOf(newApp(1).Mutate(func(a *tkestackv1.TApp) { a.Spec.Template.Spec.RestartPolicy = rp }))
						pod := runningPod(app, 0, phase(ph))
						if rejected {
							pod.Status.ContainerStatuses = nil
						}
						want := false
						switch {
						case never:
						case rejected:
							want = true
						case rp == corev1.RestartPolicyAlways || rp == "":
							want = true
						case rp == corev1.RestartPolicyOnFailure:
							want = ph == corev1.PodFailed
						}
						tpl, _ := app.Template(0)
						if got := willMigrate(never, pod, tpl); got != want {
							t.Errorf("WillMigrate = %v, want %v", got, want)
						}
					})
				}
			}
		}
	}
	app := passOf(newApp(1))
	if willMigrate(false, runningPod(app, 0), nil) {
		t.Error("a running pod never migrates")
	}
	unbound := runningPod(app, 0, phase(corev1.PodFailed), restartPolicy(corev1.RestartPolicyNever))
	unbound.Spec.NodeName, unbound.Status.ContainerStatuses = "", nil
	if willMigrate(false, unbound, nil) {
		t.Error("without a node the pod's own restartPolicy Never applies (no template)")
	}
}

// TestInstanceStatuses: the whole map over a view, including out-of-range pods and ids without pods.
func TestInstanceStatuses(t *testing.T) {
	b := newApp(5).Killed("1", "2").StatusStatuses(tkestackv1.AppRunning, statuses("0", "Running", "1", "Running", "3", "Succ", "4", "Killed", "7", "Succ")).
		Mutate(func(a *tkestackv1.TApp) { a.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever })
	p := passOf(b)
	pods := podsOf(
		runningPod(p, 0, phase(corev1.PodFailed)),
		runningPod(p, 1), // spec Killed but not yet terminating: reports the pod
		runningPod(p, 9, terminating),
	)
	want := map[string]tkestackv1.InstanceStatus{
		"0": "Failed", "1": "Running", "2": "Killed", "3": "Succ", "4": "Killed", "9": "Killing",
	}
	if diff := cmp.Diff(want, p.InstanceStatuses(pods)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}
