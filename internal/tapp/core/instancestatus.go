package core

import (
	corev1 "k8s.io/api/core/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// podInstanceStatus returns the instance status of an owned, well-formed pod, first match:
// (1) terminating and the previous status is not finished → Killing; (2) Pending/Running with an in-place
// update in progress → Updating; (3) Pending or empty phase → Pending; (4) Running with Ready True or absent
// → Running; (5) Running with Ready present and not True → Pending; (6) Succeeded/Failed → PodSucc/PodFailed
// if it will migrate, else Succ/Failed; (7) anything else → Unknown.
func podInstanceStatus(pod *corev1.Pod, prev tkestackv1.InstanceStatus, willMigrate bool) tkestackv1.InstanceStatus {
	phase := pod.Status.Phase
	switch {
	case isTerminating(pod) && !prev.IsFinished():
		return tkestackv1.InstanceKilling
	case (phase == corev1.PodPending || phase == corev1.PodRunning) && inPlaceInProgress(pod):
		return tkestackv1.InstanceUpdating
	case phase == corev1.PodPending || phase == "":
		return tkestackv1.InstancePending
	case phase == corev1.PodRunning && readyOrAbsent(pod):
		return tkestackv1.InstanceRunning
	case phase == corev1.PodRunning:
		return tkestackv1.InstancePending
	case phase == corev1.PodSucceeded && willMigrate:
		return tkestackv1.InstancePodSucc
	case phase == corev1.PodSucceeded:
		return tkestackv1.InstanceSucc
	case phase == corev1.PodFailed && willMigrate:
		return tkestackv1.InstancePodFailed
	case phase == corev1.PodFailed:
		return tkestackv1.InstanceFailed
	default:
		return tkestackv1.InstanceUnknown
	}
}

// missingInstanceStatus returns the status of an id in [0, replicas) without a pod: Killed when the
// spec marks Killed; else the previous status when it is finished (sticky); else NotCreated.
func missingInstanceStatus(killed bool, prev tkestackv1.InstanceStatus) tkestackv1.InstanceStatus {
	switch {
	case killed:
		return tkestackv1.InstanceKilled
	case prev.IsFinished():
		return prev
	default:
		return tkestackv1.InstanceNotCreated
	}
}

// InstanceStatuses derives status.statuses from a view of owned, well-formed pods: every pod (any id,
// also out of range) by podInstanceStatus, then every id in [0, replicas) without a pod by
// missingInstanceStatus. Out-of-range ids without pods drop out.
func (p *Pass) InstanceStatuses(pods Pods) map[string]tkestackv1.InstanceStatus {
	out := make(map[string]tkestackv1.InstanceStatus, max(p.Desired.Replicas, len(pods)))
	for id, pod := range pods {
		tpl, _ := p.Template(id)
		out[tkestackv1.FormatInstanceID(id)] = podInstanceStatus(pod, p.Desired.Prev(id), willMigrate(p.App.Spec.NeverMigrate, pod, tpl))
	}
	for id := 0; id < p.Desired.Replicas; id++ {
		if _, ok := pods[id]; !ok {
			out[tkestackv1.FormatInstanceID(id)] = missingInstanceStatus(p.Settings.Killed[id], p.Desired.Prev(id))
		}
	}
	return out
}
