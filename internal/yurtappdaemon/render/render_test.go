package render

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
)

func TestRenderIdentity(t *testing.T) {
	d, res := renderDeployment(t, testInput(deploySpec(), Pool{Name: "hz"}))
	if diff := cmp.Diff("apps/v1", res.Body.GetAPIVersion()); diff != "" {
		t.Errorf("apiVersion (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("Deployment", res.Body.GetKind()); diff != "" {
		t.Errorf("kind (-want +got):\n%s", diff)
	}
	wantMeta := metav1.ObjectMeta{
		Name: "web-hz", Namespace: "ns",
		Labels: map[string]string{
			"tier": "edge", "app": "web",
			openyurtv1alpha1.LabelPoolName: "hz", openyurtv1alpha1.LabelControllerRevisionHash: "web-abc",
		},
		Annotations: map[string]string{
			"note": "x", openyurtv1alpha1.AnnotationRefNodePool: "hz", openyurtv1alpha1.AnnotationRenderedHash: res.Hash,
		},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps.openyurt.io/v1alpha1", Kind: "YurtAppDaemon", Name: "web", UID: "uid-1",
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}
	if diff := cmp.Diff(wantMeta, d.ObjectMeta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	wantSel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", openyurtv1alpha1.LabelPoolName: "hz"}}
	if diff := cmp.Diff(wantSel, d.Spec.Selector); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	wantPodLabels := map[string]string{"app": "web", openyurtv1alpha1.LabelPoolName: "hz"}
	if diff := cmp.Diff(wantPodLabels, d.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels, with no revision label (-want +got):\n%s", diff)
	}
	if len(res.Hash) != 16 {
		t.Errorf("hash %q is not 16 characters", res.Hash)
	}
}

func TestRenderWebhookDryRunIdentity(t *testing.T) {
	in := testInput(deploySpec(), Pool{Name: "hz"})
	in.Name, in.Owner.UID, in.Revision = "", "", ""
	res := mustRender(t, in)
	if diff := cmp.Diff("web-hz-", res.Body.GetGenerateName()); diff != "" {
		t.Errorf("generateName (-want +got):\n%s", diff)
	}
	if res.Body.GetName() != "" || len(res.Body.GetOwnerReferences()) != 0 {
		t.Errorf("name %q, ownerReferences %v: want none", res.Body.GetName(), res.Body.GetOwnerReferences())
	}
	if _, ok := res.Body.GetLabels()[openyurtv1alpha1.LabelControllerRevisionHash]; ok {
		t.Errorf("revision label rendered without a revision")
	}
}

func TestRenderBodyOmitsUnsetFields(t *testing.T) {
	res := mustRender(t, testInput(deploySpec(), Pool{Name: "hz"}))
	absent := [][]string{
		{"status"}, {"metadata", "creationTimestamp"}, {"spec", "strategy"}, {"spec", "replicas"},
		{"spec", "template", "metadata", "creationTimestamp"}, {"metadata", "annotations", openyurtv1alpha1.AnnotationAppliedReplicas},
	}
	for _, path := range absent {
		if _, found, _ := unstructured.NestedFieldNoCopy(res.Body.Object, path...); found {
			t.Errorf("%v is rendered", path)
		}
	}
	c, _, _ := unstructured.NestedSlice(res.Body.Object, "spec", "template", "spec", "containers")
	if _, found := c[0].(map[string]any)["resources"]; found {
		t.Errorf("containers[0].resources is rendered")
	}
}

func TestRenderKeepsExplicitEmptyStructs(t *testing.T) {
	spec := deploySpec()
	pod := &spec.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec
	pod.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	res := mustRender(t, testInput(spec, Pool{Name: "hz"}))
	vols, _, _ := unstructured.NestedSlice(res.Body.Object, "spec", "template", "spec", "volumes")
	want := []any{map[string]any{"name": "cache", "emptyDir": map[string]any{}}}
	if diff := cmp.Diff(want, vols); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
}

func TestRenderScheduling(t *testing.T) {
	required := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}},
	}}}}
	anti := &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}}}
	cases := map[string]struct {
		nodeSelector map[string]string
		affinity     *corev1.Affinity
		wantSelector map[string]string
	}{
		"no nodeSelector, no affinity": {
			wantSelector: map[string]string{openyurtv1beta1.LabelCurrentNodePool: "hz"},
		},
		"user keys kept, pool key wins": {
			nodeSelector: map[string]string{"disk": "ssd", openyurtv1beta1.LabelCurrentNodePool: "other"},
			wantSelector: map[string]string{"disk": "ssd", openyurtv1beta1.LabelCurrentNodePool: "hz"},
		},
		"required node affinity kept": {
			affinity:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}},
			wantSelector: map[string]string{openyurtv1beta1.LabelCurrentNodePool: "hz"},
		},
		"affinity without nodeAffinity": {
			affinity:     &corev1.Affinity{PodAntiAffinity: anti},
			wantSelector: map[string]string{openyurtv1beta1.LabelCurrentNodePool: "hz"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			pod := &spec.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec
			pod.NodeSelector, pod.Affinity = tc.nodeSelector, tc.affinity
			d, _ := renderDeployment(t, testInput(spec, Pool{Name: "hz"}))
			if diff := cmp.Diff(tc.wantSelector, d.Spec.Template.Spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.affinity, d.Spec.Template.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderSelectorShapes(t *testing.T) {
	exprs := []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}
	cases := map[string]struct {
		selector *metav1.LabelSelector
		want     *metav1.LabelSelector
	}{
		"matchLabels": {
			selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			want:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", openyurtv1alpha1.LabelPoolName: "hz"}},
		},
		"only matchExpressions": {
			selector: &metav1.LabelSelector{MatchExpressions: exprs},
			want:     &metav1.LabelSelector{MatchLabels: map[string]string{openyurtv1alpha1.LabelPoolName: "hz"}, MatchExpressions: exprs},
		},
		"nil selector (invalid spec)": {
			want: &metav1.LabelSelector{MatchLabels: map[string]string{openyurtv1alpha1.LabelPoolName: "hz"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			spec.Selector = tc.selector
			d, _ := renderDeployment(t, testInput(spec, Pool{Name: "hz"}))
			if diff := cmp.Diff(tc.want, d.Spec.Selector); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderNilTemplateMetadataAndMaps(t *testing.T) {
	spec := deploySpec()
	tmpl := spec.WorkloadTemplate.DeploymentTemplate
	tmpl.ObjectMeta = metav1.ObjectMeta{}
	tmpl.Spec = appsv1.DeploymentSpec{}
	d, _ := renderDeployment(t, testInput(spec, Pool{Name: "hz"}))
	if diff := cmp.Diff(map[string]string{openyurtv1alpha1.LabelPoolName: "hz"}, d.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{openyurtv1alpha1.AnnotationRefNodePool: "hz"}, withoutHash(d.Annotations)); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func withoutHash(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if k != openyurtv1alpha1.AnnotationRenderedHash {
			out[k] = v
		}
	}
	return out
}

func TestRenderTolerations(t *testing.T) {
	noSched := corev1.TaintEffectNoSchedule
	noExec := corev1.TaintEffectNoExecute
	exists := func(key string, e corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: e}
	}
	user := corev1.Toleration{Key: "user", Operator: corev1.TolerationOpEqual, Value: "v", Effect: noSched}
	cases := map[string]struct {
		template []corev1.Toleration
		taints   []corev1.Taint
		want     []corev1.Toleration
	}{
		"no taints": {template: []corev1.Toleration{user}, want: []corev1.Toleration{user}},
		"appended after the template's, sorted by key then effect": {
			template: []corev1.Toleration{user},
			taints: []corev1.Taint{
				{Key: "z", Value: "1", Effect: noSched}, {Key: "a", Effect: noSched}, {Key: "a", Effect: noExec},
			},
			want: []corev1.Toleration{user, exists("a", noExec), exists("a", noSched), exists("z", noSched)},
		},
		"taint already tolerated": {
			template: []corev1.Toleration{user, exists("a", "")},
			taints:   []corev1.Taint{{Key: "a", Effect: noSched}, {Key: "user", Value: "v", Effect: noSched}},
			want:     []corev1.Toleration{user, exists("a", "")},
		},
		"same key with another value is not tolerated": {
			template: []corev1.Toleration{user},
			taints:   []corev1.Taint{{Key: "user", Value: "other", Effect: noSched}},
			want:     []corev1.Toleration{user, exists("user", noSched)},
		},
		"duplicate taints give one toleration": {
			taints: []corev1.Taint{{Key: "a", Value: "1", Effect: noSched}, {Key: "a", Value: "2", Effect: noSched}},
			want:   []corev1.Toleration{exists("a", noSched)},
		},
		"taint without key skipped": {
			taints: []corev1.Taint{{Effect: noSched}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			spec.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.Tolerations = tc.template
			d, _ := renderDeployment(t, testInput(spec, Pool{Name: "hz", Taints: tc.taints}))
			if diff := cmp.Diff(tc.want, d.Spec.Template.Spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderTolerationDroppedWhenTaintGoes(t *testing.T) {
	spec := deploySpec()
	tainted := Pool{Name: "hz", Taints: []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}}
	before, r1 := renderDeployment(t, testInput(spec, tainted))
	after, r2 := renderDeployment(t, testInput(spec, Pool{Name: "hz"}))
	if len(before.Spec.Template.Spec.Tolerations) != 1 || len(after.Spec.Template.Spec.Tolerations) != 0 {
		t.Errorf("tolerations before %v, after %v", before.Spec.Template.Spec.Tolerations, after.Spec.Template.Spec.Tolerations)
	}
	if r1.Hash == r2.Hash {
		t.Errorf("the hash did not change with the taints")
	}
	if len(spec.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.Tolerations) != 0 {
		t.Errorf("the template was modified")
	}
}

func TestRenderReplicas(t *testing.T) {
	cases := map[string]struct {
		template     *int32
		tweaks       []*int32
		want         *int32
		wantApplied  string
		wantReplicas bool
	}{
		"template unset, no tweak: unmanaged": {},
		"template set":                        {template: ptr.To[int32](3), want: ptr.To[int32](3), wantApplied: "3", wantReplicas: true},
		"template zero":                       {template: ptr.To[int32](0), want: ptr.To[int32](0), wantApplied: "0", wantReplicas: true},
		"tweak overrides the template": {
			template: ptr.To[int32](3), tweaks: []*int32{ptr.To[int32](5)}, want: ptr.To[int32](5), wantApplied: "5", wantReplicas: true,
		},
		"tweak sets replicas with the template unset": {
			tweaks: []*int32{ptr.To[int32](2)}, want: ptr.To[int32](2), wantApplied: "2", wantReplicas: true,
		},
		"the last tweak that sets replicas wins": {
			template: ptr.To[int32](3), tweaks: []*int32{ptr.To[int32](5), ptr.To[int32](7), nil},
			want: ptr.To[int32](7), wantApplied: "7", wantReplicas: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			spec.WorkloadTemplate.DeploymentTemplate.Spec.Replicas = tc.template
			for _, r := range tc.tweaks {
				spec.WorkloadTweaks = append(spec.WorkloadTweaks, openyurtv1alpha1.WorkloadTweak{
					Pools: []string{"hz"}, Tweaks: openyurtv1alpha1.Tweaks{Replicas: r},
				})
			}
			d, res := renderDeployment(t, testInput(spec, Pool{Name: "hz"}))
			if diff := cmp.Diff(tc.want, res.Replicas); diff != "" {
				t.Errorf("Result.Replicas (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, d.Spec.Replicas); diff != "" {
				t.Errorf("spec.replicas (-want +got):\n%s", diff)
			}
			got, ok := d.Annotations[openyurtv1alpha1.AnnotationAppliedReplicas]
			if ok != tc.wantReplicas || got != tc.wantApplied {
				t.Errorf("applied-replicas = %q (present %v), want %q (present %v)", got, ok, tc.wantApplied, tc.wantReplicas)
			}
		})
	}
}

// The handoff is the reconciler's; the render side of it is that the body of an unmanaged child
// carries neither spec.replicas nor the annotation, even when the template metadata has the annotation.
func TestRenderReplicasHandoffBody(t *testing.T) {
	spec := deploySpec()
	spec.WorkloadTemplate.DeploymentTemplate.Annotations[openyurtv1alpha1.AnnotationAppliedReplicas] = "4"
	spec.WorkloadTemplate.DeploymentTemplate.Annotations[openyurtv1alpha1.AnnotationRenderedHash] = "x"
	res := mustRender(t, testInput(spec, Pool{Name: "hz"}))
	if _, found, _ := unstructured.NestedFieldNoCopy(res.Body.Object, "spec", "replicas"); found {
		t.Errorf("spec.replicas rendered")
	}
	anns := res.Body.GetAnnotations()
	if _, ok := anns[openyurtv1alpha1.AnnotationAppliedReplicas]; ok {
		t.Errorf("applied-replicas rendered")
	}
	if anns[openyurtv1alpha1.AnnotationRenderedHash] != res.Hash {
		t.Errorf("rendered-hash %q, want %q", anns[openyurtv1alpha1.AnnotationRenderedHash], res.Hash)
	}
}

func TestRenderStatefulSet(t *testing.T) {
	spec := stsSpec()
	spec.WorkloadTemplate.StatefulSetTemplate.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
	}}
	spec.WorkloadTemplate.StatefulSetTemplate.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
		Type:          appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)},
	}
	s, res := renderStatefulSet(t, testInput(spec, Pool{Name: "hz"}))
	want := spec.WorkloadTemplate.StatefulSetTemplate.Spec.DeepCopy()
	want.Selector.MatchLabels[openyurtv1alpha1.LabelPoolName] = "hz"
	want.Template.Labels[openyurtv1alpha1.LabelPoolName] = "hz"
	want.Template.Spec.NodeSelector = map[string]string{openyurtv1beta1.LabelCurrentNodePool: "hz"}
	if diff := cmp.Diff(*want, s.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("StatefulSet", res.Body.GetKind()); diff != "" {
		t.Errorf("kind (-want +got):\n%s", diff)
	}
}

func TestRenderErrors(t *testing.T) {
	both := deploySpec()
	both.WorkloadTemplate.StatefulSetTemplate = stsSpec().WorkloadTemplate.StatefulSetTemplate
	none := deploySpec()
	none.WorkloadTemplate.DeploymentTemplate = nil
	cases := map[string]Input{
		"nil spec":           {Pool: Pool{Name: "hz"}},
		"no template":        testInput(none, Pool{Name: "hz"}),
		"both template kind": testInput(both, Pool{Name: "hz"}),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Render(in)
			var re *RenderError
			if err == nil || errors.As(err, &re) {
				t.Errorf("Render error = %v, want a plain error", err)
			}
		})
	}
}

func TestRenderIsDeterministicAndIndependent(t *testing.T) {
	spec := deploySpec()
	a := mustRender(t, testInput(spec, Pool{Name: "a"}))
	_ = mustRender(t, testInput(spec, Pool{Name: "b", Taints: []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}}))
	again := mustRender(t, testInput(spec, Pool{Name: "a"}))
	if diff := cmp.Diff(a, again); diff != "" {
		t.Errorf("second render differs (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(deploySpec(), spec); diff != "" {
		t.Errorf("the spec was modified (-want +got):\n%s", diff)
	}
}
