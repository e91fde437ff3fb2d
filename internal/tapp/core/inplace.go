package core

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// UpdateRecord is the value of the drover.dev/inplace-update-record annotation: what an in-place
// update changed and what the pod reported for those containers when it was patched.
type UpdateRecord struct {
	// TargetHash is the template hash the update moves the pod to.
	TargetHash string `json:"targetHash"`
	// StartTime is when the pod patch was computed.
	StartTime metav1.Time `json:"startTime"`
	// Containers are the changed containers, plus incomplete ones carried over from the previous record.
	Containers []RecordedContainer `json:"containers"`
}

// RecordedContainer is one changed container of an UpdateRecord.
type RecordedContainer struct {
	// Name is the pod container's name.
	Name string `json:"name"`
	// Init is true for a (sidecar) init container.
	Init bool `json:"init,omitempty"`
	// Image is the new image.
	Image string `json:"image"`
	// ImageID, ContainerID and RestartCount are what the container status reported at patch time (empty or
	// zero when absent).
	ImageID      string `json:"imageID,omitempty"`
	ContainerID  string `json:"containerID,omitempty"`
	RestartCount int32  `json:"restartCount,omitempty"`
}

// RecordOf returns the pod's update record; false when the annotation is absent or does not parse (a pod
// with an unreadable record is treated like one without).
func RecordOf(pod *corev1.Pod) (*UpdateRecord, bool) {
	raw, ok := pod.Annotations[tkestackv1.InPlaceUpdateRecordKey]
	if !ok {
		return nil, false
	}
	var rec UpdateRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return nil, false
	}
	return &rec, true
}

// containerStatus returns the status of the named container (regular or init), nil when absent.
func containerStatus(pod *corev1.Pod, name string, init bool) *corev1.ContainerStatus {
	list := pod.Status.ContainerStatuses
	if init {
		list = pod.Status.InitContainerStatuses
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// containerDone reports whether a recorded container finished its in-place update: its status exists
// and (a) the recorded and current imageIDs are both non-empty and differ, or (b) it reports the new image and
// its imageID or containerID changed or its restartCount grew.
func containerDone(pod *corev1.Pod, rc RecordedContainer) bool {
	st := containerStatus(pod, rc.Name, rc.Init)
	if st == nil {
		return false
	}
	if rc.ImageID != "" && st.ImageID != "" && rc.ImageID != st.ImageID {
		return true
	}
	return imageMatches(rc.Image, st.Image, st.ImageID) &&
		(st.ImageID != rc.ImageID || st.ContainerID != rc.ContainerID || st.RestartCount > rc.RestartCount)
}

// updateIncomplete reports whether the pod's last in-place update has not finished: with a record,
// some recorded container is not done; without one but with the legacy inplace-update-state annotation, some
// regular container has no status, an empty imageID or a reported image that does not match its spec image;
// otherwise false.
func updateIncomplete(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	if rec, ok := RecordOf(pod); ok {
		for _, rc := range rec.Containers {
			if !containerDone(pod, rc) {
				return true
			}
		}
		return false
	}
	if pod.Annotations[tkestackv1.InPlaceUpdateStateKey] != tkestackv1.InPlaceUpdateStateValue {
		return false
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st := containerStatus(pod, c.Name, false)
		if st == nil || st.ImageID == "" || !imageMatches(c.Image, st.Image, st.ImageID) {
			return true
		}
	}
	return false
}

// inPlaceInProgress reports whether an in-place update is in progress: the gate condition is False,
// the update is incomplete, and the pod is neither terminating nor Succeeded/Failed.
func inPlaceInProgress(pod *corev1.Pod) bool {
	if pod == nil || isTerminating(pod) || isFinishedPhase(pod) {
		return false
	}
	c := GateCondition(pod)
	return c != nil && c.Status == corev1.ConditionFalse && updateIncomplete(pod)
}

// GateDecision is the gate reconciliation outcome for one pod.
type GateDecision struct {
	// Write is true when the gate condition must be written with Status.
	Write bool
	// Status is the desired gate status: False while an in-place update is in progress, else True.
	Status corev1.ConditionStatus
	// Completed is true when the write finishes an in-place update (gate False → True after an update was
	// started under it): event InPlaceUpdateCompleted and the duration metric (from the record's StartTime).
	Completed bool
}

// decideGate returns the gate reconciliation of a pod that is not being updated in place in this pass.
// Terminating and Succeeded/Failed pods get no gate writes. The gate is False iff it is False now and the
// update is incomplete; True otherwise (including pods without the condition). Only differing conditions
// are written.
func decideGate(pod *corev1.Pod) GateDecision {
	if pod == nil || isTerminating(pod) || isFinishedPhase(pod) {
		return GateDecision{}
	}
	cur := GateCondition(pod)
	want := corev1.ConditionTrue
	if cur != nil && cur.Status == corev1.ConditionFalse && updateIncomplete(pod) {
		want = corev1.ConditionFalse
	}
	d := GateDecision{Status: want, Write: cur == nil || cur.Status != want}
	if d.Write && want == corev1.ConditionTrue && cur != nil && cur.Status == corev1.ConditionFalse {
		d.Completed = startedUnderGate(pod, cur)
	}
	return d
}

// startedUnderGate tells a finished update (recorded after the gate went False) from a gate left False by a
// pod patch (step b) that failed, which is repaired without a completion event.
func startedUnderGate(pod *corev1.Pod, gate *corev1.PodCondition) bool {
	if rec, ok := RecordOf(pod); ok {
		return !rec.StartTime.Before(&gate.LastTransitionTime)
	}
	return pod.Annotations[tkestackv1.InPlaceUpdateStateKey] == tkestackv1.InPlaceUpdateStateValue
}
