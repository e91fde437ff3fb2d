package core

import (
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// ContainerChange is a container whose image an in-place update changes.
type ContainerChange struct {
	// Name is the live pod container's name (which may differ from the template's when matched by index).
	Name string
	// Init is true for a sidecar init container.
	Init bool
	// Image is the new image.
	Image string
}

// MergePod applies a desired pod to a live pod and returns the patched copy and the containers whose
// image changed. For each desired container the live container of the same name is used, else the live
// container at the same index when its name is not used by any desired container; only its image is
// copied. Sidecar init containers are treated the same way; regular init containers are never touched.
// Desired labels and annotations are added or overwritten, nothing is removed, and the live
// tkestack.io/portmapping value wins. No other field changes. Neither input is modified.
func MergePod(live, desired *corev1.Pod) (*corev1.Pod, []ContainerChange) {
	out := live.DeepCopy()
	changes := mergeImages(out.Spec.Containers, desired.Spec.Containers, false)
	changes = append(changes, mergeImages(out.Spec.InitContainers, desired.Spec.InitContainers, true)...)
	for k, v := range desired.Labels {
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[k] = v
	}
	for k, v := range desired.Annotations {
		if k == tkestackv1.PortMappingKey {
			if _, ok := live.Annotations[k]; ok {
				continue
			}
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	return out, changes
}

// mergeImages copies images from desired into live (in place) and returns the changes. With init set only
// desired sidecars are considered and only live sidecars may be matched by index.
func mergeImages(live, desired []corev1.Container, init bool) []ContainerChange {
	var changes []ContainerChange
	desiredName := func(name string) bool {
		return slices.ContainsFunc(desired, func(c corev1.Container) bool { return c.Name == name })
	}
	for i := range desired {
		d := &desired[i]
		if init && !isSidecar(d) {
			continue
		}
		j := slices.IndexFunc(live, func(c corev1.Container) bool { return c.Name == d.Name })
		if j < 0 && i < len(live) && !desiredName(live[i].Name) && (!init || isSidecar(&live[i])) {
			j = i
		}
		if j < 0 || live[j].Image == d.Image {
			continue
		}
		live[j].Image = d.Image
		changes = append(changes, ContainerChange{Name: live[j].Name, Init: init, Image: d.Image})
	}
	return changes
}

// StartInPlaceUpdate computes step (b) of the in-place protocol: gated is the pod object returned by
// the gate-False write (its resourceVersion guards the patch), desired the pod constructed for the resolved
// template. It returns the patched pod and the changed containers. When images change, the pod also gets
// tkestack.io/inplace-update-state "true" and an update record whose old container state is taken from
// gated; incomplete entries of a previous record are carried over. Without image changes (metadata-only
// update, no gate change needed) the merged pod is returned unannotated.
func StartInPlaceUpdate(gated, desired *corev1.Pod, now time.Time) (*corev1.Pod, []ContainerChange, error) {
	merged, changes := MergePod(gated, desired)
	if len(changes) == 0 {
		return merged, nil, nil
	}
	rec := UpdateRecord{TargetHash: desired.Labels[tkestackv1.TAppHashKey], StartTime: metav1.NewTime(now)}
	for _, ch := range changes {
		rc := RecordedContainer{Name: ch.Name, Init: ch.Init, Image: ch.Image}
		if st := containerStatus(gated, ch.Name, ch.Init); st != nil {
			rc.ImageID, rc.ContainerID, rc.RestartCount = st.ImageID, st.ContainerID, st.RestartCount
		}
		rec.Containers = append(rec.Containers, rc)
	}
	if prev, ok := RecordOf(gated); ok {
		for _, rc := range prev.Containers {
			replaced := slices.ContainsFunc(changes, func(ch ContainerChange) bool { return ch.Name == rc.Name && ch.Init == rc.Init })
			if !replaced && !containerDone(gated, rc) {
				rec.Containers = append(rec.Containers, rc)
			}
		}
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	if merged.Annotations == nil {
		merged.Annotations = map[string]string{}
	}
	merged.Annotations[tkestackv1.InPlaceUpdateStateKey] = tkestackv1.InPlaceUpdateStateValue
	merged.Annotations[tkestackv1.InPlaceUpdateRecordKey] = string(raw)
	return merged, changes, nil
}

// Restamp returns a copy of a pod with both hash labels set to the template's (a foreign-format pod
// that is up to date gets one metadata patch, no gate change, no budget). Another controller's hashes are
// kept in an annotation (UpstreamHashes) for a rollback.
func Restamp(pod *corev1.Pod, tpl *Template) *corev1.Pod {
	out := pod.DeepCopy()
	keepUpstreamHashes(pod, out, tpl.Hash)
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[tkestackv1.TAppHashKey] = tpl.Hash
	out.Labels[tkestackv1.TAppUniqHashKey] = tpl.UniqHash
	return out
}

// upToDateForeign reports whether a pod with a foreign-format hash runs the resolved template's images
// : every template container has a same-named pod container with an equal (normalised) image.
func upToDateForeign(pod *corev1.Pod, tpl *Template) bool {
	for _, c := range tpl.Spec.Spec.Containers {
		i := slices.IndexFunc(pod.Spec.Containers, func(pc corev1.Container) bool { return pc.Name == c.Name })
		if i < 0 || !imagesEquivalent(pod.Spec.Containers[i].Image, c.Image) {
			return false
		}
	}
	return true
}
