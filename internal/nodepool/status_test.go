package nodepool

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/testutil"
)

func TestComputeStatus(t *testing.T) {
	tests := map[string]struct {
		members []*corev1.Node
		want    openyurtv1beta2.NodePoolStatus
	}{
		"no members": {want: openyurtv1beta2.NodePoolStatus{}},
		"ready, not ready and no condition, names sorted": {
			members: []*corev1.Node{
				testutil.MakeNode("c").Ready(true).Obj(),
				testutil.MakeNode("a").Ready(false).Obj(),
				testutil.MakeNode("b").Obj(),
			},
			want: openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, UnreadyNodeNum: 2, Nodes: []string{"a", "b", "c"}},
		},
		"Ready Unknown counts as not ready": {
			members: []*corev1.Node{testutil.MakeNode("a").Condition(corev1.NodeReady, corev1.ConditionUnknown).Obj()},
			want:    openyurtv1beta2.NodePoolStatus{UnreadyNodeNum: 1, Nodes: []string{"a"}},
		},
		"other conditions do not make a node ready": {
			members: []*corev1.Node{
				testutil.MakeNode("a").Condition(corev1.NodeMemoryPressure, corev1.ConditionTrue).Obj(),
				testutil.MakeNode("b").Condition(corev1.NodeMemoryPressure, corev1.ConditionTrue).Ready(true).Obj(),
			},
			want: openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, UnreadyNodeNum: 1, Nodes: []string{"a", "b"}},
		},
		"a node listed twice counts once": {
			members: []*corev1.Node{testutil.MakeNode("a").Ready(true).Obj(), testutil.MakeNode("a").Ready(true).Obj()},
			want:    openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, Nodes: []string{"a"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ComputeStatus(tc.members)); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusEqual(t *testing.T) {
	base := openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, UnreadyNodeNum: 1, Nodes: []string{"a", "b"}}
	tests := map[string]struct {
		a, b openyurtv1beta2.NodePoolStatus
		want bool
	}{
		"same":                     {a: base, b: *base.DeepCopy(), want: true},
		"nil and empty nodes":      {a: openyurtv1beta2.NodePoolStatus{}, b: openyurtv1beta2.NodePoolStatus{Nodes: []string{}}, want: true},
		"ready count differs":      {a: base, b: openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 2, UnreadyNodeNum: 1, Nodes: base.Nodes}},
		"unready count differs":    {a: base, b: openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, Nodes: base.Nodes}},
		"node names differ":        {a: base, b: openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, UnreadyNodeNum: 1, Nodes: []string{"a", "c"}}},
		"node list length differs": {a: base, b: openyurtv1beta2.NodePoolStatus{ReadyNodeNum: 1, UnreadyNodeNum: 1, Nodes: []string{"a"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := StatusEqual(tc.a, tc.b); got != tc.want {
				t.Errorf("StatusEqual = %t, want %t", got, tc.want)
			}
		})
	}
}
