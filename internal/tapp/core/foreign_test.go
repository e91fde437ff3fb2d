package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// What the API server and admission add to a pod is no difference from its template; what the template
// says differently, or no longer says in env, command and args, is.
func TestSpecMatchesExceptImages(t *testing.T) {
	desired := func() *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "nginx:1.27", Args: []string{"-v"},
				Env:       []corev1.EnvVar{{Name: "A", Value: "1"}},
				Ports:     []corev1.ContainerPort{{ContainerPort: 80}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}}},
			}},
			Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "tkestack.io/InPlaceUpdate"}},
		}}
	}
	defaulted := func() *corev1.Pod {
		p := desired()
		c := &p.Spec.Containers[0]
		c.Image = "nginx:1.26"
		c.TerminationMessagePath, c.ImagePullPolicy = corev1.TerminationMessagePathDefault, corev1.PullIfNotPresent
		c.Ports[0].Protocol = corev1.ProtocolTCP
		c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
		c.ReadinessProbe.TimeoutSeconds, c.ReadinessProbe.PeriodSeconds = 1, 10
		c.ReadinessProbe.HTTPGet.Scheme = corev1.URISchemeHTTP
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets"})
		p.Spec.Volumes[0].ConfigMap.DefaultMode = ptr.To[int32](420)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "kube-api-access-abcde"})
		p.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists}}
		p.Spec.RestartPolicy, p.Spec.DNSPolicy = corev1.RestartPolicyAlways, corev1.DNSClusterFirst
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
		p.Spec.NodeName = "node-1"
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "injected-sidecar", Image: "proxy"})
		return p
	}
	tests := map[string]struct {
		live func(*corev1.Pod)
		want bool
	}{
		"defaults, injected volumes, tolerations and sidecars": {live: func(*corev1.Pod) {}, want: true},
		"an argument changed": {live: func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"-q"} }, want: false},
		"an argument the template no longer has": {
			live: func(p *corev1.Pod) { p.Spec.Containers[0].Args = append(p.Spec.Containers[0].Args, "--old") }, want: false,
		},
		"an env var the template no longer has": {
			live: func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "B"})
			}, want: false,
		},
		"a command the template no longer has": {live: func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"sh"} }, want: false},
		"a limit changed": {
			live: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("2")
			}, want: false,
		},
		"a volume of the template missing": {live: func(p *corev1.Pod) { p.Spec.Volumes = p.Spec.Volumes[1:] }, want: false},
		"a port changed":                   {live: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8080 }, want: false},
		"the readiness gate missing":       {live: func(p *corev1.Pod) { p.Spec.ReadinessGates = nil }, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			live := defaulted()
			tc.live(live)
			if got := specMatchesExceptImages(live, desired()); got != tc.want {
				t.Errorf("specMatchesExceptImages = %v, want %v", got, tc.want)
			}
		})
	}
}
