package core

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// OwnerReference returns the controller ownerReference of pods (and of PVCs under whenDeleted: Delete) to
// the TApp: controller and blockOwnerDeletion true.
func OwnerReference(app *tkestackv1.TApp) metav1.OwnerReference {
	return *metav1.NewControllerRef(app, tkestackv1.GroupVersion.WithKind("TApp"))
}

// NewPod constructs the pod of instance id from the TApp and its resolved template: name <tapp>-<id>
// in the TApp's namespace; labels = template labels + instance label + both hash labels; annotations and
// finalizers from the template; spec = deep copy of the template spec + the in-place readiness gate (when
// missing) + hostname/subdomain (when serviceName is set) + claim volumes; controller ownerReference to the
// TApp. Neither the TApp nor the template is modified.
func NewPod(app *tkestackv1.TApp, id int, tpl *Template) *corev1.Pod {
	src := tpl.Spec
	lbls := maps.Clone(src.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[tkestackv1.TAppInstanceKey] = tkestackv1.FormatInstanceID(id)
	lbls[tkestackv1.TAppHashKey] = tpl.Hash
	lbls[tkestackv1.TAppUniqHashKey] = tpl.UniqHash
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodName(app.Name, id),
			Namespace:       app.Namespace,
			Labels:          lbls,
			Annotations:     maps.Clone(src.Annotations),
			Finalizers:      slices.Clone(src.Finalizers),
			OwnerReferences: []metav1.OwnerReference{OwnerReference(app)},
		},
		Spec: *src.Spec.DeepCopy(),
	}
	if !slices.ContainsFunc(pod.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool {
		return g.ConditionType == tkestackv1.InPlaceUpdateReady
	}) {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: tkestackv1.InPlaceUpdateReady})
	}
	if app.Spec.ServiceName != "" {
		pod.Spec.Hostname = PodName(app.Name, id)
		pod.Spec.Subdomain = app.Spec.ServiceName
	}
	pod.Spec.Volumes = withClaimVolumes(pod.Spec.Volumes, app, id)
	return pod
}

// withClaimVolumes puts one volume per claim template into vols: a volume of the claim's name is
// replaced in place, others are appended in claim-template order.
func withClaimVolumes(vols []corev1.Volume, app *tkestackv1.TApp, id int) []corev1.Volume {
	for i := range app.Spec.VolumeClaimTemplates {
		claim := &app.Spec.VolumeClaimTemplates[i]
		vol := corev1.Volume{
			Name: claim.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: ClaimName(claim.Name, app.Name, id),
			}},
		}
		if j := slices.IndexFunc(vols, func(v corev1.Volume) bool { return v.Name == claim.Name }); j >= 0 {
			vols[j] = vol
		} else {
			vols = append(vols, vol)
		}
	}
	return vols
}

// GateCondition returns the pod's in-place gate condition, or nil when it has none.
func GateCondition(pod *corev1.Pod) *corev1.PodCondition {
	return podCondition(pod, tkestackv1.InPlaceUpdateReady)
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	if pod == nil {
		return nil
	}
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// NewGateCondition returns the gate condition drover writes (strategic merge by type).
func NewGateCondition(status corev1.ConditionStatus, now time.Time) corev1.PodCondition {
	return corev1.PodCondition{
		Type:               tkestackv1.InPlaceUpdateReady,
		Status:             status,
		LastTransitionTime: metav1.NewTime(now),
	}
}

// WithGate returns a copy of pod whose gate condition has the status (the post-action view of a gate
// write). The transition time is kept when the status does not change.
func WithGate(pod *corev1.Pod, status corev1.ConditionStatus, now time.Time) *corev1.Pod {
	out := pod.DeepCopy()
	if c := GateCondition(out); c != nil {
		if c.Status != status {
			*c = NewGateCondition(status, now)
		}
		return out
	}
	out.Status.Conditions = append(out.Status.Conditions, NewGateCondition(status, now))
	return out
}

// AfterCreate returns the post-action view of a created pod: it exists, phase Pending, no conditions.
// Apply WithGate afterwards for the gate written right after the create.
func AfterCreate(created *corev1.Pod) *corev1.Pod {
	out := created.DeepCopy()
	out.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return out
}

// AfterGracefulDelete returns the post-action view of a gracefully deleted pod: terminating. (A force
// deleted pod is removed from the view.)
func AfterGracefulDelete(pod *corev1.Pod, now time.Time) *corev1.Pod {
	out := pod.DeepCopy()
	if out.DeletionTimestamp == nil {
		t := metav1.NewTime(now)
		out.DeletionTimestamp = &t
	}
	return out
}

// shouldForceDelete reports whether a pod is force deleted (grace 0, UID precondition):
// spec.forceDeletePod, the pod is terminating and bound to a node, and the node is absent from the cache
// (node == nil) or its Ready condition is False or Unknown. A node without a Ready condition does not
// qualify.
func shouldForceDelete(forceDeletePod bool, pod *corev1.Pod, node *corev1.Node) bool {
	if !forceDeletePod || pod == nil || pod.DeletionTimestamp == nil || pod.Spec.NodeName == "" {
		return false
	}
	if node == nil {
		return true
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionFalse || c.Status == corev1.ConditionUnknown
		}
	}
	return false
}

// willMigrate reports whether a pod in phase Succeeded or Failed is deleted and recreated, first match:
// neverMigrate → no; bound to a node but without any container or init-container status (rejected by the
// kubelet) → yes; restartPolicy (of the resolved template, else the pod's own) Always → yes; OnFailure →
// yes iff Failed; otherwise no. Pods in other phases never migrate.
func willMigrate(neverMigrate bool, pod *corev1.Pod, tpl *Template) bool {
	if pod == nil || !isFinishedPhase(pod) || neverMigrate {
		return false
	}
	if pod.Spec.NodeName != "" && len(pod.Status.ContainerStatuses) == 0 && len(pod.Status.InitContainerStatuses) == 0 {
		return true
	}
	policy := pod.Spec.RestartPolicy
	if tpl != nil {
		policy = tpl.Spec.Spec.RestartPolicy
	}
	switch policy {
	case corev1.RestartPolicyAlways, "":
		return true
	case corev1.RestartPolicyOnFailure:
		return pod.Status.Phase == corev1.PodFailed
	default:
		return false
	}
}

func isFinishedPhase(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func isTerminating(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil
}
