package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/testutil"
)

func claimApp(policy *tkestackv1.PersistentVolumeClaimRetentionPolicy) *testutil.TAppWrapper {
	return newApp(2).Mutate(func(a *tkestackv1.TApp) {
		a.Spec.PersistentVolumeClaimRetentionPolicy = policy
		a.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{
			{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"disk": "ssd"}, Annotations: map[string]string{"n": "1"}},
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "logs"}},
		}
	})
}

func TestDesiredClaims(t *testing.T) {
	for name, tc := range map[string]struct {
		policy *tkestackv1.PersistentVolumeClaimRetentionPolicy
		owned  bool
	}{
		"default policy: owned": {owned: true},
		"whenDeleted Retain":    {policy: &tkestackv1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: "Retain"}},
		"only whenScaled given": {policy: &tkestackv1.PersistentVolumeClaimRetentionPolicy{WhenScaled: "Delete"}, owned: true},
	} {
		t.Run(name, func(t *testing.T) {
			p := passOf(claimApp(tc.policy))
			before := p.App.DeepCopy()
			got := DesiredClaims(p.App, 1, &p.Settings)
			var refs []metav1.OwnerReference
			if tc.owned {
				refs = []metav1.OwnerReference{OwnerReference(p.App)}
			}
			want := []*corev1.PersistentVolumeClaim{
				{ObjectMeta: metav1.ObjectMeta{Name: "data-web-1", Namespace: testNS, Labels: map[string]string{"disk": "ssd", "app": "web"},
					Annotations: map[string]string{"n": "1"}, OwnerReferences: refs}, Spec: p.App.Spec.VolumeClaimTemplates[0].Spec},
				{ObjectMeta: metav1.ObjectMeta{Name: "logs-web-1", Namespace: testNS, Labels: map[string]string{"app": "web"}, OwnerReferences: refs}},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
			got[0].Labels["x"] = "y"
			got[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("5Gi")
			if diff := cmp.Diff(before, p.App); diff != "" {
				t.Errorf("claim template modified:\n%s", diff)
			}
		})
	}
}

func TestParseClaimName(t *testing.T) {
	app := claimApp(nil).Obj()
	tests := map[string]struct {
		claim string
		id    int
		ok    bool
	}{
		"data-web-0":  {claim: "data", id: 0, ok: true},
		"logs-web-12": {claim: "logs", id: 12, ok: true},
		"data-web-01": {},
		"data-webx-1": {},
		"other-web-1": {},
		"data-web-":   {},
	}
	for in, tc := range tests {
		claim, id, ok := parseClaimName(app, in)
		if claim != tc.claim || id != tc.id || ok != tc.ok {
			t.Errorf("ParseClaimName(%q) = %q, %d, %v", in, claim, id, ok)
		}
	}
}

func pvc(name string, mod ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{"app": "web"}}}
	for _, m := range mod {
		m(c)
	}
	return c
}

func ownedBy(uid string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.tkestack.io/v1", Kind: "TApp", Name: testName,
			UID: types.UID(uid), Controller: ptr.To(true)}}
	}
}

func deleting(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = &mt0 }

func TestCheckClaim(t *testing.T) {
	app := claimApp(nil).Obj()
	tests := map[string]struct {
		pvc  *corev1.PersistentVolumeClaim
		want ClaimState
	}{
		"absent":             {want: ClaimMissing},
		"ours":               {pvc: pvc("data-web-0", ownedBy(string(testUID))), want: ClaimReady},
		"unowned (retained)": {pvc: pvc("data-web-0"), want: ClaimReady},
		"terminating":        {pvc: pvc("data-web-0", deleting), want: ClaimTerminating},
		"other owner":        {pvc: pvc("data-web-0", ownedBy("other")), want: ClaimConflict},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := CheckClaim(app, tc.pvc); got != tc.want {
				t.Errorf("CheckClaim = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestClaimOwnerFix(t *testing.T) {
	retain := &tkestackv1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: "Retain"}
	tests := map[string]struct {
		policy   *tkestackv1.PersistentVolumeClaimRetentionPolicy
		pvc      *corev1.PersistentVolumeClaim
		changed  bool
		wantRefs int
	}{
		"delete policy adds the reference":    {pvc: pvc("data-web-0"), changed: true, wantRefs: 1},
		"delete policy, already owned":        {pvc: pvc("data-web-1", ownedBy(string(testUID)))},
		"retain policy removes the reference": {policy: retain, pvc: pvc("data-web-1", ownedBy(string(testUID))), changed: true},
		"retain policy, not owned":            {policy: retain, pvc: pvc("data-web-1")},
		"out of range left alone":             {pvc: pvc("data-web-5")},
		"other owner left alone":              {policy: retain, pvc: pvc("data-web-0", ownedBy("other"))},
		"missing selector labels left alone":  {pvc: pvc("data-web-0", func(c *corev1.PersistentVolumeClaim) { c.Labels = nil })},
		"unrelated name left alone":           {pvc: pvc("cache-web-0")},
		"terminating left alone":              {pvc: pvc("data-web-0", deleting)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := passOf(claimApp(tc.policy))
			before := tc.pvc.DeepCopy()
			got, changed := ClaimOwnerFix(p.App, &p.Settings, tc.pvc)
			if changed != tc.changed {
				t.Fatalf("changed = %v, want %v", changed, tc.changed)
			}
			if changed && len(got.OwnerReferences) != tc.wantRefs {
				t.Errorf("owner references: %v", got.OwnerReferences)
			}
			if diff := cmp.Diff(before, tc.pvc); diff != "" {
				t.Errorf("input modified:\n%s", diff)
			}
		})
	}
}

func TestScaledClaimsToDelete(t *testing.T) {
	del := &tkestackv1.PersistentVolumeClaimRetentionPolicy{WhenScaled: "Delete"}
	pvcs := []*corev1.PersistentVolumeClaim{
		pvc("data-web-0", ownedBy(string(testUID))), // in range
		pvc("logs-web-3", ownedBy(string(testUID))), // out of range, pod gone
		pvc("data-web-3"), // retained (no owner), still managed
		pvc("data-web-4", ownedBy(string(testUID))), // pod still there
		pvc("data-web-5", ownedBy(string(testUID))), // expectation pending
		pvc("data-web-6", ownedBy("other")),         // other owner
		pvc("data-web-7", func(c *corev1.PersistentVolumeClaim) { c.Labels = nil }),
		pvc("data-web-8", deleting),
		pvc("cache-web-9"),
		nil,
	}
	p := passOf(claimApp(del))
	pods := podsOf(runningPod(p, 4, terminating))
	var got []string
	for _, c := range ScaledClaimsToDelete(p.App, &p.Settings, pvcs, pods, map[int]bool{5: true}) {
		got = append(got, c.Name)
	}
	if diff := cmp.Diff([]string{"data-web-3", "logs-web-3"}, got); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	retain := passOf(claimApp(nil))
	if got := ScaledClaimsToDelete(retain.App, &retain.Settings, pvcs, nil, nil); got != nil {
		t.Errorf("whenScaled Retain deletes nothing: %v", got)
	}
}
