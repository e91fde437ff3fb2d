package v1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTemplateResolution(t *testing.T) {
	pool := map[string]corev1.PodTemplateSpec{
		"a":       {ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		"default": {ObjectMeta: metav1.ObjectMeta{Name: "pool-default"}},
	}
	tests := map[string]struct {
		spec                     TAppSpec
		wantDefault, wantRolling string
		wantOf1, wantOf2         string
	}{
		"empty": {
			wantDefault: "default", wantRolling: "default", wantOf1: "default", wantOf2: "default",
		},
		"defaultTemplateName": {
			spec:        TAppSpec{DefaultTemplateName: "a", Templates: map[string]string{"1": "default"}},
			wantDefault: "a", wantRolling: "a", wantOf1: "default", wantOf2: "a",
		},
		"compat wins": {
			spec:        TAppSpec{DefaultTemplateName: "a", DefaultTemplateNameCompat: "b"},
			wantDefault: "b", wantRolling: "b", wantOf1: "b", wantOf2: "b",
		},
		"updateStrategy.template": {
			spec:        TAppSpec{UpdateStrategy: UpdateStrategy{Template: "a"}},
			wantDefault: "default", wantRolling: "a", wantOf1: "default", wantOf2: "default",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := []string{tc.spec.EffectiveDefaultTemplateName(), tc.spec.RollingTemplateName(),
				tc.spec.TemplateNameOf("1"), tc.spec.TemplateNameOf("2")}
			want := []string{tc.wantDefault, tc.wantRolling, tc.wantOf1, tc.wantOf2}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("default, rolling, of(1), of(2) (-want +got):\n%s", diff)
			}
		})
	}

	spec := TAppSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: "tmpl"}}, TemplatePool: pool}
	if tmpl, ok := spec.TemplateByName("default"); !ok || tmpl.Name != "tmpl" {
		t.Errorf("TemplateByName(default) = %v, %t; want spec.template (the pool entry default is never used)", tmpl, ok)
	}
	if tmpl, ok := spec.TemplateByName("a"); !ok || tmpl.Name != "a" {
		t.Errorf("TemplateByName(a) = %v, %t", tmpl, ok)
	}
	for _, name := range []string{"", "b"} {
		if _, ok := spec.TemplateByName(name); ok {
			t.Errorf("TemplateByName(%q) resolved", name)
		}
	}
}

func TestDefaultSelector(t *testing.T) {
	spec := TAppSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		"app": "x", TAppInstanceKey: "1", TAppHashKey: "h", TAppUniqHashKey: "u"}}}}
	want := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	if diff := cmp.Diff(want, spec.DefaultSelector()); diff != "" {
		t.Errorf("DefaultSelector (-want +got):\n%s", diff)
	}
	spec.Template.Labels = map[string]string{TAppInstanceKey: "1"}
	if s := spec.DefaultSelector(); s != nil {
		t.Errorf("DefaultSelector = %v, want nil", s)
	}
}

func TestEffectivePVCRetentionPolicy(t *testing.T) {
	tests := map[string]struct {
		in   *PersistentVolumeClaimRetentionPolicy
		want PersistentVolumeClaimRetentionPolicy
	}{
		"absent": {nil, PersistentVolumeClaimRetentionPolicy{
			WhenDeleted: DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: RetainPersistentVolumeClaimRetentionPolicyType}},
		"partial": {&PersistentVolumeClaimRetentionPolicy{WhenDeleted: RetainPersistentVolumeClaimRetentionPolicyType},
			PersistentVolumeClaimRetentionPolicy{
				WhenDeleted: RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: RetainPersistentVolumeClaimRetentionPolicyType}},
	}
	for name, tc := range tests {
		spec := TAppSpec{PersistentVolumeClaimRetentionPolicy: tc.in}
		if diff := cmp.Diff(tc.want, spec.EffectivePVCRetentionPolicy()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestStatusPredicates(t *testing.T) {
	finished := map[InstanceStatus]bool{InstanceKilled: true, InstanceFailed: true, InstanceSucc: true}
	for _, s := range []InstanceStatus{InstanceNotCreated, InstancePending, InstanceRunning, InstanceUpdating, InstancePodFailed,
		InstancePodSucc, InstanceKilling, InstanceKilled, InstanceFailed, InstanceSucc, InstanceUnknown} {
		if s.IsFinished() != finished[s] {
			t.Errorf("%s.IsFinished() = %t", s, s.IsFinished())
		}
	}
	appFinished := map[AppStatus]bool{AppFailed: true, AppSucc: true, AppKilled: true}
	for _, s := range []AppStatus{AppPending, AppRunning, AppFailed, AppSucc, AppKilled} {
		if s.IsFinished() != appFinished[s] {
			t.Errorf("%s.IsFinished() = %t", s, s.IsFinished())
		}
	}
}
