package kubestellarsim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

func TestResolveBinding(t *testing.T) {
	clusters := []clusterInfo{{Name: "c2", Labels: map[string]string{"env": "dev"}}, {Name: "c1", Labels: map[string]string{"env": "dev"}}}
	otherDeployment := deployment
	otherDeployment.Name, otherDeployment.Namespace, otherDeployment.ResourceVersion = "a", "demo", "20"
	spec := controlv1alpha1.BindingPolicySpec{
		ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "dev"}}},
		Downsync: []controlv1alpha1.DownsyncPolicyClause{
			{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("apps")},
				DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"replicas"}}},
			{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{Resources: []string{"namespaces"}, Namespaces: []string{"*"}},
				DownsyncModulation: controlv1alpha1.DownsyncModulation{CreateOnly: true}},
		},
	}
	got := resolveBinding(&spec, clusters, []objectInfo{deployment, configMap, namespaceObj, otherDeployment}, testNamespaces)
	want := controlv1alpha1.BindingSpec{
		Destinations: []controlv1alpha1.Destination{{ClusterID: "c1"}, {ClusterID: "c2"}},
		Workload: controlv1alpha1.DownsyncObjectClauses{
			ClusterScope: []controlv1alpha1.ClusterScopeDownsyncClause{{
				ClusterScopeDownsyncObject: controlv1alpha1.ClusterScopeDownsyncObject{
					GroupVersionResource: metav1.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Name: "demo", ResourceVersion: "12",
				},
				DownsyncModulation: controlv1alpha1.DownsyncModulation{CreateOnly: true},
			}},
			NamespaceScope: []controlv1alpha1.NamespaceScopeDownsyncClause{
				{
					NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
						GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
						Namespace:            "demo", Name: "a", ResourceVersion: "20",
					},
					DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"replicas"}},
				},
				{
					NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
						GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
						Namespace:            "demo", Name: "nginx", ResourceVersion: "10",
					},
					DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"replicas"}},
				},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Binding spec (-want +got):\n%s", diff)
	}
}

func TestBindingUpToDate(t *testing.T) {
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "bp-uid"}}
	owner := bindingOwner(bp)
	spec := controlv1alpha1.BindingSpec{Destinations: []controlv1alpha1.Destination{{ClusterID: "c1"}}}
	stored := func(mutate func(*controlv1alpha1.Binding)) *controlv1alpha1.Binding {
		b := &controlv1alpha1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: []metav1.OwnerReference{owner}},
			Spec:       *spec.DeepCopy(),
			Status:     controlv1alpha1.BindingStatus{ObservedGeneration: 3},
		}
		mutate(b)
		return b
	}
	cases := map[string]struct {
		stored *controlv1alpha1.Binding
		want   bool
	}{
		"same": {stored: stored(func(*controlv1alpha1.Binding) {}), want: true},
		"empty vs nil lists": {stored: stored(func(b *controlv1alpha1.Binding) {
			b.Spec.Workload.NamespaceScope = []controlv1alpha1.NamespaceScopeDownsyncClause{}
		}), want: true},
		"status does not count":    {stored: stored(func(b *controlv1alpha1.Binding) { b.Status.Errors = []string{"x"} }), want: true},
		"other destinations":       {stored: stored(func(b *controlv1alpha1.Binding) { b.Spec.Destinations = nil })},
		"owner of an old policy":   {stored: stored(func(b *controlv1alpha1.Binding) { b.OwnerReferences[0].UID = "old" })},
		"owner without the flags":  {stored: stored(func(b *controlv1alpha1.Binding) { b.OwnerReferences[0].Controller = nil })},
		"an extra owner reference": {stored: stored(func(b *controlv1alpha1.Binding) { b.OwnerReferences = append(b.OwnerReferences, owner) })},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := bindingUpToDate(tc.stored, &spec, owner); got != tc.want {
				t.Errorf("bindingUpToDate = %v, want %v", got, tc.want)
			}
		})
	}
	wantOwner := metav1.OwnerReference{
		APIVersion: "control.kubestellar.io/v1alpha1", Kind: "BindingPolicy", Name: "p", UID: "bp-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
	}
	if diff := cmp.Diff(wantOwner, owner); diff != "" {
		t.Errorf("owner (-want +got):\n%s", diff)
	}
}

// TestBindingStatus: KubeStellar's controller-manager sets StatusCollectorsAvailable on the Binding and
// copies it to the BindingPolicy with the policy's generation as observedGeneration, but leaves the
// Binding's observedGeneration at 0 (here: as it was).
func TestBindingStatus(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(earlier.Add(time.Hour))
	available := controlv1alpha1.BindingPolicyCondition{
		Type: controlv1alpha1.TypeStatusCollectorsAvailable, Status: corev1.ConditionTrue, LastTransitionTime: earlier,
		Reason: controlv1alpha1.ReasonReconcileSuccess, Message: "All StatusCollector(s) are available",
	}
	cases := map[string]struct {
		conds   []controlv1alpha1.BindingPolicyCondition
		missing []string
		want    []controlv1alpha1.BindingPolicyCondition
	}{
		"first time": {
			want: []controlv1alpha1.BindingPolicyCondition{{
				Type: controlv1alpha1.TypeStatusCollectorsAvailable, Status: corev1.ConditionTrue, LastTransitionTime: now,
				Reason: controlv1alpha1.ReasonReconcileSuccess, Message: "All StatusCollector(s) are available",
			}},
		},
		"unchanged keeps its transition time": {
			conds: []controlv1alpha1.BindingPolicyCondition{available},
			want:  []controlv1alpha1.BindingPolicyCondition{available},
		},
		"missing collectors, sorted in Go slice form": {
			conds:   []controlv1alpha1.BindingPolicyCondition{available},
			missing: []string{"b", "a"},
			want: []controlv1alpha1.BindingPolicyCondition{{
				Type: controlv1alpha1.TypeStatusCollectorsAvailable, Status: corev1.ConditionFalse, LastTransitionTime: now,
				Reason: controlv1alpha1.ReasonReconcileError, Message: "Missing StatusCollector(s) [a b]",
			}},
		},
		"other conditions are kept": {
			conds: []controlv1alpha1.BindingPolicyCondition{{Type: controlv1alpha1.TypeReady, Status: corev1.ConditionUnknown}, available},
			want:  []controlv1alpha1.BindingPolicyCondition{{Type: controlv1alpha1.TypeReady, Status: corev1.ConditionUnknown}, available},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Generation: 4}, Status: controlv1alpha1.BindingStatus{Conditions: tc.conds}}
			got := desiredBindingStatus(b, tc.missing, now)
			want := controlv1alpha1.BindingStatus{Conditions: tc.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Generation: 7}}
	b := &controlv1alpha1.Binding{Status: controlv1alpha1.BindingStatus{Conditions: []controlv1alpha1.BindingPolicyCondition{available}}}
	want := controlv1alpha1.BindingPolicyStatus{ObservedGeneration: 7, Conditions: []controlv1alpha1.BindingPolicyCondition{available}}
	if diff := cmp.Diff(want, desiredPolicyStatus(bp, b)); diff != "" {
		t.Errorf("policy status (-want +got):\n%s", diff)
	}
}

func TestReferencedCollectors(t *testing.T) {
	spec := controlv1alpha1.BindingSpec{Workload: controlv1alpha1.DownsyncObjectClauses{
		ClusterScope: []controlv1alpha1.ClusterScopeDownsyncClause{{DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"b"}}}},
		NamespaceScope: []controlv1alpha1.NamespaceScopeDownsyncClause{
			{DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"c", "a"}}},
			{DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"b"}}},
		},
	}}
	if diff := cmp.Diff([]string{"a", "b", "c"}, referencedCollectors(&spec)); diff != "" {
		t.Errorf("collectors (-want +got):\n%s", diff)
	}
}

func TestBindingStatusWork(t *testing.T) {
	entry := func(name, rv string, collectors ...string) controlv1alpha1.NamespaceScopeDownsyncClause {
		return controlv1alpha1.NamespaceScopeDownsyncClause{
			NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
				GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
				Namespace:            "demo", Name: name, ResourceVersion: rv,
			},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: collectors},
		}
	}
	ref := func(name string) ObjectRef {
		return ObjectRef{Group: "apps", Resource: "deployments", Namespace: "demo", Name: name}
	}
	binding := func(dest string, entries ...controlv1alpha1.NamespaceScopeDownsyncClause) *controlv1alpha1.Binding {
		return &controlv1alpha1.Binding{Spec: controlv1alpha1.BindingSpec{
			Destinations: []controlv1alpha1.Destination{{ClusterID: dest}},
			Workload:     controlv1alpha1.DownsyncObjectClauses{NamespaceScope: entries},
		}}
	}
	cases := map[string]struct {
		oldB, newB *controlv1alpha1.Binding
		want       []ObjectRef
		sweep      bool
	}{
		"nothing changed":      {oldB: binding("c1", entry("a", "1")), newB: binding("c1", entry("a", "1"))},
		"entry changed":        {oldB: binding("c1", entry("a", "1"), entry("b", "1")), newB: binding("c1", entry("a", "2"), entry("b", "1")), want: []ObjectRef{ref("a")}},
		"collectors changed":   {oldB: binding("c1", entry("a", "1")), newB: binding("c1", entry("a", "1", "x")), want: []ObjectRef{ref("a")}},
		"entry added, removed": {oldB: binding("c1", entry("a", "1")), newB: binding("c1", entry("b", "1")), want: []ObjectRef{ref("a"), ref("b")}},
		"destinations changed": {oldB: binding("c1", entry("a", "1")), newB: binding("c2", entry("a", "1"), entry("b", "1")), want: []ObjectRef{ref("a"), ref("b")}, sweep: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, sweep := bindingStatusWork(tc.oldB, tc.newB)
			sortRefs := cmpopts.SortSlices(func(a, b ObjectRef) bool { return a.Name < b.Name })
			if diff := cmp.Diff(tc.want, got, sortRefs); diff != "" || sweep != tc.sweep {
				t.Errorf("refs (-want +got):\n%s\nsweep = %v, want %v", diff, sweep, tc.sweep)
			}
		})
	}
}

func TestFindEntry(t *testing.T) {
	gvr := func(group, resource string) metav1.GroupVersionResource {
		return metav1.GroupVersionResource{Group: group, Version: "v1", Resource: resource}
	}
	spec := controlv1alpha1.BindingSpec{Workload: controlv1alpha1.DownsyncObjectClauses{
		ClusterScope: []controlv1alpha1.ClusterScopeDownsyncClause{{
			ClusterScopeDownsyncObject: controlv1alpha1.ClusterScopeDownsyncObject{GroupVersionResource: gvr("", "namespaces"), Name: "demo", ResourceVersion: "1"},
		}},
		NamespaceScope: []controlv1alpha1.NamespaceScopeDownsyncClause{{
			NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
				GroupVersionResource: gvr("apps", "deployments"), Namespace: "demo", Name: "nginx", ResourceVersion: "2",
			},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"a"}},
		}},
	}}
	for _, want := range bindingEntries(&spec) {
		if got, ok := findEntry(&spec, want.Ref); !ok || !cmp.Equal(want, got) {
			t.Errorf("findEntry(%s) = %+v, %v; want %+v", want.Ref, got, ok, want)
		}
	}
	for _, ref := range []ObjectRef{
		{Resource: "namespaces", Namespace: "demo", Name: "demo"},
		{Group: "apps", Resource: "deployments", Name: "nginx"},
		{Group: "apps", Resource: "deployments", Namespace: "other", Name: "nginx"},
	} {
		if got, ok := findEntry(&spec, ref); ok {
			t.Errorf("findEntry(%s) = %+v, want none", ref, got)
		}
	}
}

// TestClauseSelectsEveryMatchingKind reproduces KubeStellar's binding controller: the stager example's
// clause (objectSelectors on app.kubernetes.io/name: nginx, no resources) selects the Deployment and every
// ReplicaSet, Pod and ConfigMap carrying the label, each with the clause's collector; the kinds a Deployment
// brings are watched by default.
func TestClauseSelectsEveryMatchingKind(t *testing.T) {
	nginx := map[string]string{"app.kubernetes.io/name": "nginx"}
	labelled := func(group, resource, name string) objectInfo {
		return objectInfo{ObjectRef: ObjectRef{Group: group, Resource: resource, Namespace: "demo", Name: name},
			Version: "v1", Namespaced: true, Labels: nginx, ResourceVersion: "1"}
	}
	objects := []objectInfo{
		labelled("apps", "deployments", "nginx"), labelled("apps", "replicasets", "nginx-5d4f"),
		labelled("", "pods", "nginx-5d4f-x1"), labelled("", "configmaps", "nginx-conf"), configMap,
	}
	spec := controlv1alpha1.BindingPolicySpec{Downsync: []controlv1alpha1.DownsyncPolicyClause{{
		DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{{MatchLabels: nginx}}},
		DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"deployments-aggregator"}},
	}}}
	var got []string
	for _, e := range resolveBinding(&spec, nil, objects, testNamespaces).Workload.NamespaceScope {
		got = append(got, e.Group+"/"+e.Resource+" "+e.Name+" "+e.StatusCollectors[0])
	}
	want := []string{
		"/configmaps nginx-conf deployments-aggregator", "/pods nginx-5d4f-x1 deployments-aggregator",
		"apps/deployments nginx deployments-aggregator", "apps/replicasets nginx-5d4f deployments-aggregator",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("selected objects (-want +got):\n%s", diff)
	}
	watched := map[string]bool{}
	for _, gvr := range DefaultResources {
		watched[gvr.Group+"/"+gvr.Resource] = true
	}
	for _, gr := range []string{"apps/deployments", "apps/replicasets", "/pods", "/configmaps"} {
		if !watched[gr] {
			t.Errorf("DefaultResources does not watch %s", gr)
		}
	}
}
