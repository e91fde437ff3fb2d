package core

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Availability returns whether a desired-running pod is available and, when it only lacks
// minReadySeconds, how long until it will be (for RequeueAfter). Available iff the pod exists, is not
// terminating, is Running with Ready True, its gate condition is not False, no in-place update is in
// progress, there is no pending expectation (checked by the caller) and the later of the Ready and gate
// conditions' lastTransitionTime is at least minReadySeconds before now. A pod without a Ready condition is
// not available.
func Availability(pod *corev1.Pod, minReadySeconds int32, now time.Time) (available bool, wait time.Duration) {
	if pod == nil || isTerminating(pod) || pod.Status.Phase != corev1.PodRunning {
		return false, 0
	}
	ready := podCondition(pod, corev1.PodReady)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		return false, 0
	}
	gate := GateCondition(pod)
	if gate != nil && gate.Status == corev1.ConditionFalse {
		return false, 0 // also covers "in-place update in progress", which implies gate False
	}
	if minReadySeconds <= 0 {
		return true, 0
	}
	since := ready.LastTransitionTime.Time
	if gate != nil && gate.LastTransitionTime.After(since) {
		since = gate.LastTransitionTime.Time
	}
	remaining := since.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if remaining > 0 {
		return false, remaining
	}
	return true, 0
}

// readyOrAbsent reports whether the pod's Ready condition is True or absent.
func readyOrAbsent(pod *corev1.Pod) bool {
	c := podCondition(pod, corev1.PodReady)
	return c == nil || c.Status == corev1.ConditionTrue
}
