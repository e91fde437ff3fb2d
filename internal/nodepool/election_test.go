package nodepool

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/testutil"
)

func withOperation(op admissionv1.Operation) context.Context {
	return admission.NewContextWithRequest(context.Background(),
		admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op}})
}

// The election defaults are set on CREATE only, as OpenYurt sets them; the type on both.
func TestDefaultElection(t *testing.T) {
	services := metav1.GroupVersionResource{Version: "v1", Resource: "services"}
	custom := metav1.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}
	for name, tc := range map[string]struct {
		op   admissionv1.Operation
		in   openyurtv1beta2.NodePoolSpec
		want openyurtv1beta2.NodePoolSpec
	}{
		"create: every default": {op: admissionv1.Create,
			want: openyurtv1beta2.NodePoolSpec{Type: openyurtv1beta2.Edge, LeaderElectionStrategy: "random", LeaderReplicas: 1,
				PoolScopeMetadata: openyurtv1beta2.DefaultPoolScopeMetadata()}},
		"create: the missing defaults are appended": {op: admissionv1.Create,
			in: openyurtv1beta2.NodePoolSpec{Type: openyurtv1beta2.Cloud, LeaderElectionStrategy: "mark", LeaderReplicas: -1,
				PoolScopeMetadata: []metav1.GroupVersionResource{custom, services}},
			want: openyurtv1beta2.NodePoolSpec{Type: openyurtv1beta2.Cloud, LeaderElectionStrategy: "mark", LeaderReplicas: 1,
				PoolScopeMetadata: []metav1.GroupVersionResource{custom, services, openyurtv1beta2.DefaultPoolScopeMetadata()[1]}}},
		"update: only the type": {op: admissionv1.Update,
			want: openyurtv1beta2.NodePoolSpec{Type: openyurtv1beta2.Edge}},
	} {
		t.Run(name, func(t *testing.T) {
			pool := &openyurtv1beta2.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: tc.in}
			if err := (Defaulter{}).Default(withOperation(tc.op), pool); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pool.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateElection(t *testing.T) {
	base := func() *openyurtv1beta2.NodePool { return testutil.MakeNodePool("p").Type(openyurtv1beta1.Edge).Hub() }
	with := func(f func(*openyurtv1beta2.NodePool)) *openyurtv1beta2.NodePool {
		p := base()
		f(p)
		return p
	}
	for name, tc := range map[string]struct {
		newPool, oldPool *openyurtv1beta2.NodePool
		want             []string
	}{
		"defaults": {newPool: base()},
		"mark with a selector": {newPool: with(func(p *openyurtv1beta2.NodePool) {
			p.Spec.LeaderElectionStrategy, p.Spec.LeaderNodeLabelSelector = "mark", map[string]string{"lead": "yes"}
		})},
		"unknown strategy": {newPool: with(func(p *openyurtv1beta2.NodePool) { p.Spec.LeaderElectionStrategy = "Random" }),
			want: []string{"FieldValueNotSupported spec.leaderElectionStrategy"}},
		"empty strategy on create": {newPool: with(func(p *openyurtv1beta2.NodePool) { p.Spec.LeaderElectionStrategy = "" }),
			want: []string{"FieldValueNotSupported spec.leaderElectionStrategy"}},
		"empty strategy kept on update": {
			newPool: with(func(p *openyurtv1beta2.NodePool) {
				p.Spec.LeaderElectionStrategy, p.Spec.Labels = "", map[string]string{"a": "b"}
			}),
			oldPool: with(func(p *openyurtv1beta2.NodePool) { p.Spec.LeaderElectionStrategy = "" })},
		"bad selector": {newPool: with(func(p *openyurtv1beta2.NodePool) { p.Spec.LeaderNodeLabelSelector = map[string]string{"bad key": "v"} }),
			want: []string{"FieldValueInvalid spec.leaderNodeLabelSelector"}},
		"interConnectivity changed": {newPool: with(func(p *openyurtv1beta2.NodePool) { p.Spec.InterConnectivity = true }),
			oldPool: base(), want: []string{"FieldValueForbidden spec.interConnectivity"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, testutil.ErrorSummary(Validate(tc.newPool, tc.oldPool))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// The controller writes the member fields of the status only; the election fields stay as they are.
func TestWithMembersKeepsElection(t *testing.T) {
	elected := metav1.Unix(1700000000, 0)
	current := openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 9, Nodes: []string{"old"}, LeaderNum: 1, LeaderLastElectedTime: elected,
		LeaderEndpoints: []openyurtv1beta2.Leader{{NodeName: "a", Address: "10.0.0.1"}},
		Conditions:      []openyurtv1beta2.NodePoolCondition{{Type: openyurtv1beta2.LeaderStatus, Status: corev1.ConditionTrue}}}
	counted := ComputeStatus([]*corev1.Node{testutil.MakeNode("a").Ready(true).Obj()})
	got := withMembers(current, counted)
	want := *current.DeepCopy()
	want.ReadyNodeNum, want.UnreadyNodeNum, want.Nodes = 1, 0, []string{"a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if current.Nodes[0] != "old" {
		t.Error("withMembers changed the current status")
	}
}
