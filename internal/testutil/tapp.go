package testutil

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// TAppWrapper builds a TApp:
//
//	app := testutil.MakeTApp("web", "default").Replicas(3).Template(testutil.PodTemplate(lbls, "nginx:1.7.9")).Obj()
type TAppWrapper struct{ tkestackv1.TApp }

// MakeTApp starts a TApp with the given name and namespace and nothing else set.
func MakeTApp(name, ns string) *TAppWrapper {
	return &TAppWrapper{tkestackv1.TApp{
		TypeMeta:   metav1.TypeMeta{APIVersion: tkestackv1.GroupVersion.String(), Kind: "TApp"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}}
}

// Obj returns a copy of the TApp built so far.
func (w *TAppWrapper) Obj() *tkestackv1.TApp { return w.DeepCopy() }

// UID sets metadata.uid.
func (w *TAppWrapper) UID(uid types.UID) *TAppWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Generation sets metadata.generation.
func (w *TAppWrapper) Generation(g int64) *TAppWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// Deleting marks the TApp as being deleted, with a finalizer (the API server requires one on such objects).
func (w *TAppWrapper) Deleting() *TAppWrapper {
	now := metav1.Now()
	w.DeletionTimestamp = &now
	if len(w.Finalizers) == 0 {
		w.Finalizers = []string{"test.drover.dev/hold"}
	}
	return w
}

// Replicas sets spec.replicas.
func (w *TAppWrapper) Replicas(n int32) *TAppWrapper {
	w.Spec.Replicas = n
	return w
}

// Template sets spec.template and, when spec.selector is unset, a selector matching its labels.
func (w *TAppWrapper) Template(tpl corev1.PodTemplateSpec) *TAppWrapper {
	w.Spec.Template = *tpl.DeepCopy()
	if w.Spec.Selector == nil && len(tpl.Labels) > 0 {
		w.Spec.Selector = &metav1.LabelSelector{MatchLabels: copyMap(tpl.Labels)}
	}
	return w
}

// Image sets the image of every container of spec.template.
func (w *TAppWrapper) Image(image string) *TAppWrapper {
	for i := range w.Spec.Template.Spec.Containers {
		w.Spec.Template.Spec.Containers[i].Image = image
	}
	return w
}

// Selector sets spec.selector to match the given labels (nil clears it).
func (w *TAppWrapper) Selector(matchLabels map[string]string) *TAppWrapper {
	if matchLabels == nil {
		w.Spec.Selector = nil
		return w
	}
	w.Spec.Selector = &metav1.LabelSelector{MatchLabels: copyMap(matchLabels)}
	return w
}

// Pool adds a templatePool entry.
func (w *TAppWrapper) Pool(name string, tpl corev1.PodTemplateSpec) *TAppWrapper {
	if w.Spec.TemplatePool == nil {
		w.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{}
	}
	w.Spec.TemplatePool[name] = *tpl.DeepCopy()
	return w
}

// InstanceTemplate sets spec.templates[id].
func (w *TAppWrapper) InstanceTemplate(id, name string) *TAppWrapper {
	w.Spec.Templates = mergeMap(w.Spec.Templates, map[string]string{id: name})
	return w
}

// DefaultTemplateName sets spec.defaultTemplateName.
func (w *TAppWrapper) DefaultTemplateName(name string) *TAppWrapper {
	w.Spec.DefaultTemplateName = name
	return w
}

// Killed sets spec.statuses[id] = Killed for each id.
func (w *TAppWrapper) Killed(ids ...string) *TAppWrapper {
	if w.Spec.Statuses == nil {
		w.Spec.Statuses = map[string]tkestackv1.InstanceStatus{}
	}
	for _, id := range ids {
		w.Spec.Statuses[id] = tkestackv1.InstanceKilled
	}
	return w
}

// MaxUnavailable sets spec.updateStrategy.maxUnavailable.
func (w *TAppWrapper) MaxUnavailable(v intstr.IntOrString) *TAppWrapper {
	w.Spec.UpdateStrategy.MaxUnavailable = &v
	return w
}

// ForceMaxUnavailable sets spec.updateStrategy.forceUpdate.maxUnavailable.
func (w *TAppWrapper) ForceMaxUnavailable(v intstr.IntOrString) *TAppWrapper {
	w.Spec.UpdateStrategy.ForceUpdate.MaxUnavailable = &v
	return w
}

// RollingTemplate sets spec.updateStrategy.template.
func (w *TAppWrapper) RollingTemplate(name string) *TAppWrapper {
	w.Spec.UpdateStrategy.Template = name
	return w
}

// ServiceName sets spec.serviceName.
func (w *TAppWrapper) ServiceName(name string) *TAppWrapper {
	w.Spec.ServiceName = name
	return w
}

// ForceDeletePod sets spec.forceDeletePod.
func (w *TAppWrapper) ForceDeletePod(v bool) *TAppWrapper {
	w.Spec.ForceDeletePod = v
	return w
}

// DeletePodAfterAppFinish sets spec.deletePodAfterAppFinish.
func (w *TAppWrapper) DeletePodAfterAppFinish(v bool) *TAppWrapper {
	w.Spec.DeletePodAfterAppFinish = &v
	return w
}

// AutoDeleteUnusedTemplate sets spec.autoDeleteUnusedTemplate.
func (w *TAppWrapper) AutoDeleteUnusedTemplate(v bool) *TAppWrapper {
	w.Spec.AutoDeleteUnusedTemplate = v
	return w
}

// VolumeClaim appends a volumeClaimTemplate of the name requesting the storage (ReadWriteOnce).
func (w *TAppWrapper) VolumeClaim(name, storage string) *TAppWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(storage)},
			},
		},
	})
	return w
}

// PVCRetention sets spec.persistentVolumeClaimRetentionPolicy.
func (w *TAppWrapper) PVCRetention(whenDeleted, whenScaled tkestackv1.PersistentVolumeClaimRetentionPolicyType) *TAppWrapper {
	w.Spec.PersistentVolumeClaimRetentionPolicy = &tkestackv1.PersistentVolumeClaimRetentionPolicy{
		WhenDeleted: whenDeleted, WhenScaled: whenScaled,
	}
	return w
}

// StatusStatuses sets status.statuses and status.appStatus (the previous status a pass starts from).
func (w *TAppWrapper) StatusStatuses(app tkestackv1.AppStatus, statuses map[string]tkestackv1.InstanceStatus) *TAppWrapper {
	w.Status.AppStatus = app
	w.Status.Statuses = nil
	for k, v := range statuses {
		if w.Status.Statuses == nil {
			w.Status.Statuses = map[string]tkestackv1.InstanceStatus{}
		}
		w.Status.Statuses[k] = v
	}
	return w
}

// Templates sets spec.templates (instance id → template name) to a copy of m.
func (w *TAppWrapper) Templates(m map[string]string) *TAppWrapper {
	w.Spec.Templates = copyMap(m)
	return w
}

// Mutate applies f to the TApp, for what no other method sets.
func (w *TAppWrapper) Mutate(f func(*tkestackv1.TApp)) *TAppWrapper {
	f(&w.TApp)
	return w
}

// The TApp of the TApp unit tests (the controller's and its core's): web in namespace ns, UID tapp-uid,
// generation 1, pods labelled app=web with one container named nginx.
const (
	WebTAppUID  = types.UID("tapp-uid")
	WebTAppName = "web"
	WebTAppNS   = "ns"
)

// WebTemplate returns the pod template of the web TApp with the container's image.
func WebTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: image}}},
	}
}

// MakeWebTApp starts the web TApp with replicas instances of WebTemplate(image).
func MakeWebTApp(replicas int32, image string) *TAppWrapper {
	return MakeTApp(WebTAppName, WebTAppNS).UID(WebTAppUID).Generation(1).Replicas(replicas).Template(WebTemplate(image))
}
