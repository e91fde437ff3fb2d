package core

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// richTemplate exercises quantities, probes, ports, env, volumes and a sidecar.
func richTemplate() *corev1.PodTemplateSpec {
	always := corev1.ContainerRestartPolicyAlways
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"a": "1", "b": "2"},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "init", Image: "busybox:1.36"},
				{Name: "proxy", Image: "envoy:1.30", RestartPolicy: &always},
			},
			Containers: []corev1.Container{{
				Name:  "nginx",
				Image: "nginx:1.7.9",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				Env: []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("0.5"),
					corev1.ResourceMemory: resource.MustParse("128Mi"),
				}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/nginx"}},
			}},
			Volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}}},
		},
	}
}

// defaulted returns tpl with what the apiserver's defaulting would add to a pod, written by hand
// (k8s.io/kubernetes is not imported).
func defaulted(tpl *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	out := tpl.DeepCopy()
	s := &out.Spec
	s.RestartPolicy = corev1.RestartPolicyAlways
	s.DNSPolicy = corev1.DNSClusterFirst
	s.SchedulerName = "default-scheduler"
	s.TerminationGracePeriodSeconds = ptr.To(int64(30))
	s.SecurityContext = &corev1.PodSecurityContext{}
	s.EnableServiceLinks = ptr.To(true)
	def := func(c *corev1.Container) {
		c.TerminationMessagePath = "/dev/termination-log"
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
		for i := range c.Ports {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
		for i := range c.Env {
			if c.Env[i].ValueFrom != nil && c.Env[i].ValueFrom.FieldRef != nil {
				c.Env[i].ValueFrom.FieldRef.APIVersion = "v1"
			}
		}
		if len(c.Resources.Limits) > 0 && c.Resources.Requests == nil {
			c.Resources.Requests = c.Resources.Limits.DeepCopy()
		}
		if p := c.ReadinessProbe; p != nil {
			p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = 1, 10, 1, 3
			if p.HTTPGet != nil {
				p.HTTPGet.Path, p.HTTPGet.Scheme = "/", corev1.URISchemeHTTP
			}
		}
	}
	for i := range s.InitContainers {
		def(&s.InitContainers[i])
	}
	for i := range s.Containers {
		def(&s.Containers[i])
	}
	for i := range s.Volumes {
		if cm := s.Volumes[i].ConfigMap; cm != nil {
			cm.DefaultMode = ptr.To(int32(0o644))
		}
	}
	return out
}

func mustHashes(t *testing.T, tpl *corev1.PodTemplateSpec) [2]string {
	t.Helper()
	h, err := templateHash(tpl)
	if err != nil {
		t.Fatal(err)
	}
	u, err := uniqHash(tpl)
	if err != nil {
		t.Fatal(err)
	}
	return [2]string{h, u}
}

func TestHashGolden(t *testing.T) {
	// Changing these values changes every pod's hash labels: only with a new algorithm version prefix.
	got := mustHashes(t, richTemplate())
	want := [2]string{"v1-f242494669883b26", "v1-97a4e0fd1bc62fe2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("golden hashes (-want +got):\n%s", diff)
	}
	for _, h := range got {
		if !IsCurrentHashFormat(h) {
			t.Errorf("hash %q is not in the current format", h)
		}
	}
}

// TestHashStable: semantically equal templates hash alike.
func TestHashStable(t *testing.T) {
	base := richTemplate()
	tests := map[string]func(t *testing.T) *corev1.PodTemplateSpec{
		"json round trip": func(t *testing.T) *corev1.PodTemplateSpec {
			raw, err := json.Marshal(base)
			if err != nil {
				t.Fatal(err)
			}
			var out corev1.PodTemplateSpec
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatal(err)
			}
			return &out
		},
		"json with reordered keys": func(t *testing.T) *corev1.PodTemplateSpec {
			doc := `{"spec":{"volumes":[{"configMap":{"name":"conf"},"name":"conf"}],
"containers":[{"volumeMounts":[{"mountPath":"/etc/nginx","name":"conf"}],"readinessProbe":{"httpGet":{"port":80}},
"resources":{"limits":{"memory":"128Mi","cpu":"500m"}},
"env":[{"valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}},"name":"NODE"}],
"ports":[{"containerPort":80,"name":"http"}],"image":"nginx:1.7.9","name":"nginx"}],
"initContainers":[{"name":"init","image":"busybox:1.36"},{"restartPolicy":"Always","image":"envoy:1.30","name":"proxy"}]},
"metadata":{"annotations":{"b":"2","a":"1"},"labels":{"tier":"front","app":"web"}}}`
			var out corev1.PodTemplateSpec
			dec := json.NewDecoder(strings.NewReader(doc))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&out); err != nil {
				t.Fatal(err)
			}
			return &out
		},
		"apiserver defaults spelled out": func(*testing.T) *corev1.PodTemplateSpec { return defaulted(base) },
		"defaults and json round trip": func(t *testing.T) *corev1.PodTemplateSpec {
			raw, _ := json.Marshal(defaulted(base))
			var out corev1.PodTemplateSpec
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatal(err)
			}
			return &out
		},
		"quantity spellings": func(*testing.T) *corev1.PodTemplateSpec {
			out := base.DeepCopy()
			out.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("500m"),
				corev1.ResourceMemory: resource.MustParse("0.125Gi"), // canonical 128Mi; "134217728" would be DecimalSI
			}
			return out
		},
		"empty maps and slices instead of nil": func(*testing.T) *corev1.PodTemplateSpec {
			out := base.DeepCopy()
			out.Finalizers = []string{}
			out.Spec.NodeSelector = map[string]string{}
			out.Spec.Tolerations = []corev1.Toleration{}
			out.Spec.Containers[0].Args = []string{}
			out.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{}
			out.Spec.Affinity = &corev1.Affinity{}
			return out
		},
		"hash labels in the template": func(*testing.T) *corev1.PodTemplateSpec {
			out := base.DeepCopy()
			out.Labels[tkestackv1.TAppHashKey] = "v1-0000000000000000"
			out.Labels[tkestackv1.TAppUniqHashKey] = "123"
			return out
		},
	}
	want := mustHashes(t, base)
	for name, variant := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(want, mustHashes(t, variant(t))); diff != "" {
				t.Errorf("hashes changed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHashChanges: which edits change which hash.
func TestHashChanges(t *testing.T) {
	base := richTemplate()
	tests := map[string]struct {
		base, edit             func(*corev1.PodTemplateSpec) // base, when set, edits the template before and after
		templateSame, uniqSame bool
	}{
		"container image":    {edit: func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Image = "nginx:1.8" }, uniqSame: true},
		"sidecar image":      {edit: func(p *corev1.PodTemplateSpec) { p.Spec.InitContainers[1].Image = "envoy:1.31" }, uniqSame: true},
		"regular init image": {edit: func(p *corev1.PodTemplateSpec) { p.Spec.InitContainers[0].Image = "busybox:1.37" }},
		"label":              {edit: func(p *corev1.PodTemplateSpec) { p.Labels["x"] = "y" }, uniqSame: true},
		"annotation":         {edit: func(p *corev1.PodTemplateSpec) { p.Annotations["a"] = "3" }, uniqSame: true},
		"env":                {edit: func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Env[0].Name = "N" }},
		"resources": {edit: func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
		}},
		"container rename":    {edit: func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Name = "web" }},
		"restart policy":      {edit: func(p *corev1.PodTemplateSpec) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }},
		"non-default pull":    {edit: func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways }},
		"non-default grace":   {edit: func(p *corev1.PodTemplateSpec) { p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(5)) }},
		"volume":              {edit: func(p *corev1.PodTemplateSpec) { p.Spec.Volumes[0].ConfigMap.Name = "other" }},
		"image to latest tag": {edit: func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Image = "nginx:latest" }, uniqSame: true},
		// The uniq hash clears a pull policy equal to the default for the image (so that a template with the
		// defaults spelled out hashes like one without), and that default depends on the image: an explicit
		// IfNotPresent is cleared with nginx:1.7.9 but kept with nginx:latest. The change recreates the pod, the
		// conservative side: keeping both this case and "image to latest tag" in place while hashing spelled-out
		// defaults alike would leave the policy out of the uniq hash, and a policy change (which a pod cannot
		// take in place) would then pass for an image change.
		"image to latest tag, explicit IfNotPresent": {
			base: func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent },
			edit: func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Image = "nginx:latest" }},
		"template name ignored": {edit: func(p *corev1.PodTemplateSpec) { p.Labels[tkestackv1.TAppHashKey] = "x" }, templateSame: true, uniqSame: true},
	}
	want := mustHashes(t, base)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := base.DeepCopy()
			if tc.base != nil {
				tc.base(before)
			}
			want := mustHashes(t, before)
			edited := before.DeepCopy()
			tc.edit(edited)
			got := mustHashes(t, edited)
			if (got[0] == want[0]) != tc.templateSame {
				t.Errorf("template hash same = %v, want %v", got[0] == want[0], tc.templateSame)
			}
			if (got[1] == want[1]) != tc.uniqSame {
				t.Errorf("uniq hash same = %v, want %v", got[1] == want[1], tc.uniqSame)
			}
		})
	}
	if mustHashes(t, base) != want || base.Spec.Containers[0].Image != "nginx:1.7.9" {
		t.Error("hashing modified the template")
	}
}

func TestIsCurrentHashFormat(t *testing.T) {
	tests := map[string]bool{
		"v1-0123456789abcdef":  true,
		"":                     false,
		"1234567890":           false, // upstream TApp: decimal
		"v2-0123456789abcdef":  false,
		"v1-0123456789ABCDEF":  false,
		"v1-0123456789abcde":   false,
		"v1-0123456789abcdef0": false,
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := IsCurrentHashFormat(in); got != want {
				t.Errorf("IsCurrentHashFormat(%q) = %v", in, got)
			}
		})
	}
}

func TestCanonicalJSON(t *testing.T) {
	tests := map[string]struct {
		in   any
		want string
	}{
		"drops null, empty object, empty list": {
			in:   map[string]any{"a": nil, "b": map[string]any{}, "c": []any{}, "d": 1},
			want: `{"d":1}`,
		},
		"recursively":         {in: map[string]any{"a": map[string]any{"b": map[string]any{"c": nil}}}, want: `{}`},
		"sorted keys":         {in: map[string]any{"z": "1", "a": "2"}, want: `{"a":"2","z":"1"}`},
		"list elements kept":  {in: map[string]any{"l": []any{map[string]any{"x": nil}, "v"}}, want: `{"l":[{},"v"]}`},
		"false and zero kept": {in: map[string]any{"f": false, "z": 0, "s": ""}, want: `{"f":false,"s":"","z":0}`},
		"big numbers exact":   {in: json.RawMessage(`{"n":12345678901234567890}`), want: `{"n":12345678901234567890}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := canonicalJSON(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("CanonicalJSON = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestPodHashLabels: the hash labels of a constructed pod are the hash functions' outputs.
func TestPodHashLabels(t *testing.T) {
	p := passOf(newApp(1))
	tpl, _ := p.Template(0)
	pod := NewPod(p.App, 0, tpl)
	want := mustHashes(t, &p.App.Spec.Template)
	got := [2]string{pod.Labels[tkestackv1.TAppHashKey], pod.Labels[tkestackv1.TAppUniqHashKey]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod hash labels (-want +got):\n%s", diff)
	}
}
