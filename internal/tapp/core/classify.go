package core

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// PodName returns the only name the pod of an instance may have: <tapp>-<id>.
func PodName(tappName string, id int) string {
	return tappName + "-" + tkestackv1.FormatInstanceID(id)
}

// idFromPodName returns the id encoded in a pod name <tapp>-<id>, when the suffix is canonical.
func idFromPodName(tappName, podName string) (int, bool) {
	suffix, ok := strings.CutPrefix(podName, tappName+"-")
	if !ok {
		return 0, false
	}
	return tkestackv1.ParseInstanceID(suffix)
}

// Pods maps instance ids to their pod. In an Observation it holds owned, well-formed pods only.
type Pods map[int]*corev1.Pod

// Clone returns a copy of the map; the pods are shared (replace an entry, never modify a pod in place).
func (p Pods) Clone() Pods {
	out := make(Pods, len(p))
	for id, pod := range p {
		out[id] = pod
	}
	return out
}

// IDs returns the ids of the map in ascending order.
func (p Pods) IDs() []int {
	ids := make([]int, 0, len(p))
	for id := range p {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Classified is the result of ClassifyPods.
type Classified struct {
	// Pods are the owned, well-formed pods by id: the only pods that take part in planning and status.
	Pods Pods
	// Malformed are owned pods whose name and instance label disagree or whose id is not canonical; they are
	// never acted on and are reported as MalformedPod.
	Malformed []*corev1.Pod
	// NameTaken holds the ids whose pod name <tapp>-<id> is taken by a malformed owned pod, so that the id
	// cannot be created (PodNameConflict). The reconciler adds ids whose name is taken by pods of other
	// controllers or orphans.
	NameTaken map[int]bool
}

// isControlledBy reports whether the pod's controller ownerReference names the TApp's UID.
func isControlledBy(pod *corev1.Pod, app *tkestackv1.TApp) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	return ref != nil && ref.UID == app.UID && app.UID != ""
}

// ClassifyPods splits the pods listed for a TApp (normally through the controller-UID index) into
// well-formed pods by id and malformed ones. Pods of other namespaces or not controlled by the TApp are
// ignored.
func ClassifyPods(app *tkestackv1.TApp, pods []*corev1.Pod) Classified {
	out := Classified{Pods: Pods{}, NameTaken: map[int]bool{}}
	for _, pod := range pods {
		if pod == nil || pod.Namespace != app.Namespace || !isControlledBy(pod, app) {
			continue
		}
		nameID, nameOK := idFromPodName(app.Name, pod.Name)
		labelValue, hasLabel := pod.Labels[tkestackv1.TAppInstanceKey]
		if nameOK && hasLabel && labelValue == tkestackv1.FormatInstanceID(nameID) {
			out.Pods[nameID] = pod
			continue
		}
		out.Malformed = append(out.Malformed, pod)
		if nameOK {
			out.NameTaken[nameID] = true
		}
	}
	slices.SortFunc(out.Malformed, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// CanAdopt reports whether an orphan pod may be adopted by the TApp: it has no controller, is in the
// TApp's namespace, matches the selector, carries a canonical instance label and is named <tapp>-<id> for
// that id. The reconciler adopts only while the TApp is not being deleted and after re-reading its UID.
func CanAdopt(app *tkestackv1.TApp, selector labels.Selector, pod *corev1.Pod) bool {
	if pod == nil || selector == nil || selector.Empty() || pod.Namespace != app.Namespace ||
		metav1.GetControllerOfNoCopy(pod) != nil || pod.DeletionTimestamp != nil {
		return false
	}
	id, ok := tkestackv1.ParseInstanceID(pod.Labels[tkestackv1.TAppInstanceKey])
	return ok && pod.Name == PodName(app.Name, id) && selector.Matches(labels.Set(pod.Labels))
}

// ShouldRelease reports whether an owned pod no longer matches the selector and loses the TApp's controller
// reference. An invalid (nil or empty) selector releases nothing.
func ShouldRelease(app *tkestackv1.TApp, selector labels.Selector, pod *corev1.Pod) bool {
	if pod == nil || selector == nil || selector.Empty() || !isControlledBy(pod, app) {
		return false
	}
	return !selector.Matches(labels.Set(pod.Labels))
}
