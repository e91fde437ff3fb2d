package render

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// richPod adds what API-server defaulting touches: probes, config map volumes, field refs, resources.
func richPod(pod *corev1.PodSpec) {
	c := &pod.Containers[0]
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}
	c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	c.Env = append(c.Env, corev1.EnvVar{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}})
	c.VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}
	pod.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
	}}}}
	pod.Tolerations = []corev1.Toleration{{Key: "user", Operator: corev1.TolerationOpExists}}
}

// defaultPod applies typical API-server defaults to a pod template.
func defaultPod(pt *corev1.PodTemplateSpec) {
	p := &pt.Spec
	p.RestartPolicy = corev1.RestartPolicyAlways
	p.TerminationGracePeriodSeconds = ptr.To[int64](30)
	p.DNSPolicy = corev1.DNSClusterFirst
	p.SecurityContext = &corev1.PodSecurityContext{}
	p.SchedulerName = corev1.DefaultSchedulerName
	for i := range p.Volumes {
		if cm := p.Volumes[i].ConfigMap; cm != nil && cm.DefaultMode == nil {
			cm.DefaultMode = ptr.To[int32](0o644)
		}
	}
	for _, cs := range [][]corev1.Container{p.InitContainers, p.Containers} {
		for i := range cs {
			c := &cs[i]
			c.TerminationMessagePath = corev1.TerminationMessagePathDefault
			c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
			c.ImagePullPolicy = corev1.PullIfNotPresent
			for j := range c.Ports {
				if c.Ports[j].Protocol == "" {
					c.Ports[j].Protocol = corev1.ProtocolTCP
				}
			}
			for j := range c.Env {
				if f := c.Env[j].ValueFrom; f != nil && f.FieldRef != nil && f.FieldRef.APIVersion == "" {
					f.FieldRef.APIVersion = "v1"
				}
			}
			if pr := c.ReadinessProbe; pr != nil {
				pr.TimeoutSeconds, pr.PeriodSeconds, pr.SuccessThreshold, pr.FailureThreshold = 1, 10, 1, 3
				if pr.HTTPGet != nil && pr.HTTPGet.Scheme == "" {
					pr.HTTPGet.Scheme = corev1.URISchemeHTTP
				}
			}
		}
	}
}

// serverMeta adds what the API server and the controllers put in metadata and status.
func serverMeta(o client.Object) {
	o.SetUID("child-uid")
	o.SetResourceVersion("42")
	o.SetGeneration(3)
	o.SetCreationTimestamp(metav1.Now())
	o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "drover-yurtappdaemon", Operation: metav1.ManagedFieldsOperationApply}})
	anns := o.GetAnnotations()
	anns["deployment.kubernetes.io/revision"] = "1"
	o.SetAnnotations(anns)
}

func defaultedDeployment(t *testing.T, in Input) (*appsv1.Deployment, *Result) {
	t.Helper()
	d, res := renderDeployment(t, in)
	serverMeta(d)
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%")),
	}}
	d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	defaultPod(&d.Spec.Template)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 1, ReadyReplicas: 1}
	return d, res
}

func defaultedStatefulSet(t *testing.T, in Input) (*appsv1.StatefulSet, *Result) {
	t.Helper()
	s, res := renderStatefulSet(t, in)
	serverMeta(s)
	if s.Spec.PodManagementPolicy == "" {
		s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
		Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)},
	}
	s.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	for i := range s.Spec.VolumeClaimTemplates {
		s.Spec.VolumeClaimTemplates[i].Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		s.Spec.VolumeClaimTemplates[i].Status.Phase = corev1.ClaimPending
	}
	defaultPod(&s.Spec.Template)
	s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 2}
	return s, res
}

func TestInSyncDeployment(t *testing.T) {
	cases := map[string]struct {
		edit func(d *appsv1.Deployment)
		want bool
	}{
		"defaulted live object":       {edit: func(*appsv1.Deployment) {}, want: true},
		"sidecar and extra env added": {edit: addSidecar, want: true},
		"keyed lists reordered":       {edit: reorderEnv, want: true},
		"extra label kept":            {edit: func(d *appsv1.Deployment) { d.Labels["other"] = "x" }, want: true},
		"image edited":                {edit: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "evil" }},
		"rendered label removed":      {edit: func(d *appsv1.Deployment) { delete(d.Labels, openyurtv1alpha1.LabelPoolName) }},
		"pod label removed": {edit: func(d *appsv1.Deployment) {
			delete(d.Spec.Template.Labels, openyurtv1alpha1.LabelPoolName)
		}},
		"extra toleration": {edit: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Tolerations = append(d.Spec.Template.Spec.Tolerations, corev1.Toleration{Key: "x", Operator: corev1.TolerationOpExists})
		}},
		"nodeSelector pool key changed": {edit: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.NodeSelector["apps.openyurt.io/nodepool"] = "other"
		}},
		"env edited":        {edit: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env[0].Value = "2" }},
		"container removed": {edit: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = nil }},
		"cpu request changed": {edit: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		}},
		"hash annotation differs": {edit: func(d *appsv1.Deployment) {
			d.Annotations[openyurtv1alpha1.AnnotationRenderedHash] = "0000000000000000"
		}},
		"owner reference removed": {edit: func(d *appsv1.Deployment) { d.OwnerReferences = nil }},
		"owner reference not controller": {edit: func(d *appsv1.Deployment) {
			d.OwnerReferences[0].Controller = ptr.To(false)
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			richPod(&spec.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec)
			live, res := defaultedDeployment(t, testInput(spec, Pool{Name: "hz", Taints: []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoSchedule}}}))
			tc.edit(live)
			if got := InSync(res.Body, live, "uid-1"); got != tc.want {
				t.Errorf("InSync = %v, want %v", got, tc.want)
			}
		})
	}
}

func addSidecar(d *appsv1.Deployment) {
	pod := &d.Spec.Template.Spec
	pod.Containers = append([]corev1.Container{{Name: "sidecar", Image: "proxy"}}, pod.Containers...)
	pod.Containers[1].Env = append(pod.Containers[1].Env, corev1.EnvVar{Name: "INJECTED", Value: "1"})
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "injected"})
}

func reorderEnv(d *appsv1.Deployment) {
	env := d.Spec.Template.Spec.Containers[0].Env
	env[0], env[1] = env[1], env[0]
}

func TestInSyncReplicas(t *testing.T) {
	cases := map[string]struct {
		template, live *int32
		want           bool
	}{
		"managed and equal":         {template: ptr.To[int32](3), live: ptr.To[int32](3), want: true},
		"managed and scaled":        {template: ptr.To[int32](3), live: ptr.To[int32](5)},
		"managed zero and scaled":   {template: ptr.To[int32](0), live: ptr.To[int32](2)},
		"managed zero and zero":     {template: ptr.To[int32](0), live: ptr.To[int32](0), want: true},
		"unmanaged, scaled by HPA":  {live: ptr.To[int32](7), want: true},
		"unmanaged, defaulted to 1": {live: ptr.To[int32](1), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			spec.WorkloadTemplate.DeploymentTemplate.Spec.Replicas = tc.template
			live, res := defaultedDeployment(t, testInput(spec, Pool{Name: "hz"}))
			live.Spec.Replicas = tc.live
			if got := InSync(res.Body, live, "uid-1"); got != tc.want {
				t.Errorf("InSync = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInSyncStatefulSet(t *testing.T) {
	spec := stsSpec()
	spec.WorkloadTemplate.StatefulSetTemplate.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	richPod(&spec.WorkloadTemplate.StatefulSetTemplate.Spec.Template.Spec)
	in := testInput(spec, Pool{Name: "hz", Taints: []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoExecute}}})
	live, res := defaultedStatefulSet(t, in)
	if !InSync(res.Body, live, "uid-1") {
		t.Errorf("a defaulted StatefulSet is not in sync")
	}
	live.Spec.ServiceName = "other"
	if InSync(res.Body, live, "uid-1") {
		t.Errorf("an edited serviceName is in sync")
	}
}

func TestInSyncUnstructuredLiveAndGuards(t *testing.T) {
	live, res := defaultedDeployment(t, testInput(deploySpec(), Pool{Name: "hz"}))
	u := res.Body.DeepCopy() // what an apply returns, in unstructured form
	if !InSync(res.Body, u, "uid-1") {
		t.Errorf("the body itself is not in sync")
	}
	if InSync(res.Body, live, "") || InSync(res.Body, live, "other") {
		t.Errorf("in sync with the wrong owner")
	}
	if InSync(nil, live, "uid-1") || InSync(res.Body, nil, "uid-1") || InSync(res.Body, (*appsv1.Deployment)(nil), "uid-1") {
		t.Errorf("in sync with nothing")
	}
	noHash := res.Body.DeepCopy()
	unstructured.RemoveNestedField(noHash.Object, "metadata", "annotations", openyurtv1alpha1.AnnotationRenderedHash)
	if InSync(noHash, live, "uid-1") {
		t.Errorf("in sync without a rendered hash")
	}
}

func TestIsSubset(t *testing.T) {
	ctr := func(name, image string) map[string]any { return map[string]any{"name": name, "image": image} }
	cases := map[string]struct {
		body, live map[string]any
		want       bool
	}{
		"zero body fields ignored": {
			body: map[string]any{"a": "", "b": int64(0), "c": false, "d": nil, "e": map[string]any{}, "f": []any{}},
			live: map[string]any{"c": true}, want: true,
		},
		"scalar mismatch":        {body: map[string]any{"a": "x"}, live: map[string]any{"a": "y"}},
		"missing key":            {body: map[string]any{"a": "x"}, live: map[string]any{}},
		"numbers by value":       {body: map[string]any{"a": int64(2)}, live: map[string]any{"a": float64(2)}, want: true},
		"type mismatch":          {body: map[string]any{"a": int64(2)}, live: map[string]any{"a": "2"}},
		"map vs scalar":          {body: map[string]any{"a": map[string]any{"b": "c"}}, live: map[string]any{"a": "x"}},
		"quantity by value":      {body: map[string]any{"limits": map[string]any{"cpu": "1000m"}}, live: map[string]any{"limits": map[string]any{"cpu": "1"}}, want: true},
		"quantity differs":       {body: map[string]any{"requests": map[string]any{"cpu": "1"}}, live: map[string]any{"requests": map[string]any{"cpu": "2"}}},
		"sizeLimit by value":     {body: map[string]any{"sizeLimit": "1Gi"}, live: map[string]any{"sizeLimit": "1024Mi"}, want: true},
		"not a quantity context": {body: map[string]any{"value": "1000m"}, live: map[string]any{"value": "1"}},
		"keyed list, extra live item and reordered": {
			body: map[string]any{"containers": []any{ctr("a", "1"), ctr("b", "2")}},
			live: map[string]any{"containers": []any{ctr("c", "3"), ctr("b", "2"), ctr("a", "1")}}, want: true,
		},
		"keyed list, item missing": {
			body: map[string]any{"containers": []any{ctr("a", "1")}}, live: map[string]any{"containers": []any{ctr("b", "1")}},
		},
		"keyed list, item differs": {
			body: map[string]any{"containers": []any{ctr("a", "1")}}, live: map[string]any{"containers": []any{ctr("a", "2")}},
		},
		"ports keyed with the TCP default": {
			body: map[string]any{"ports": []any{map[string]any{"containerPort": int64(80)}}},
			live: map[string]any{"ports": []any{
				map[string]any{"containerPort": int64(80), "protocol": "UDP"}, map[string]any{"containerPort": int64(80), "protocol": "TCP"},
			}}, want: true,
		},
		"keyed list item without key falls back to element-wise": {
			body: map[string]any{"env": []any{map[string]any{"value": "x"}}},
			live: map[string]any{"env": []any{map[string]any{"name": "a", "value": "x"}, map[string]any{"name": "b"}}},
		},
		"atomic list, extra live item": {
			body: map[string]any{"tolerations": []any{map[string]any{"key": "a"}}},
			live: map[string]any{"tolerations": []any{map[string]any{"key": "a"}, map[string]any{"key": "b"}}},
		},
		"atomic list, reordered": {
			body: map[string]any{"args": []any{"a", "b"}}, live: map[string]any{"args": []any{"b", "a"}},
		},
		"atomic list, element subset": {
			body: map[string]any{"tolerations": []any{map[string]any{"key": "a"}}},
			live: map[string]any{"tolerations": []any{map[string]any{"key": "a", "tolerationSeconds": int64(30)}}}, want: true,
		},
		"nil live": {body: map[string]any{"a": "x"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsSubset(tc.body, tc.live); got != tc.want {
				t.Errorf("IsSubset = %v, want %v", got, tc.want)
			}
		})
	}
}
