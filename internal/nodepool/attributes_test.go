package nodepool

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/testutil"
)

const prevKey = openyurtv1beta2.AnnotationPrevAttrs

func taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

// mustEncode returns the annotation value of a, failing the test on error.
func mustEncode(t *testing.T, a Attributes) string {
	t.Helper()
	s, err := EncodeAttributes(a)
	if err != nil {
		t.Fatalf("EncodeAttributes: %v", err)
	}
	return s
}

func TestEncodeAttributes(t *testing.T) {
	tests := map[string]struct {
		in   Attributes
		want string
	}{
		"empty is no annotation": {in: Attributes{}, want: ""},
		"empty maps and lists are empty": {
			in:   Attributes{Labels: map[string]string{}, Annotations: map[string]string{}, Taints: []corev1.Taint{}},
			want: "",
		},
		"labels only, other members omitted": {
			in:   Attributes{Labels: map[string]string{"b": "2", "a": "1"}},
			want: `{"labels":{"a":"1","b":"2"}}`,
		},
		"taints only": {
			in:   Attributes{Taints: []corev1.Taint{taint("k", "", corev1.TaintEffectNoExecute)}},
			want: `{"taints":[{"key":"k","effect":"NoExecute"}]}`,
		},
		"all members in OpenYurt's order": {
			in: Attributes{
				Labels:      map[string]string{"region": "east"},
				Annotations: map[string]string{"owner": "ops"},
				Taints:      []corev1.Taint{taint("edge", "true", corev1.TaintEffectNoSchedule)},
			},
			want: `{"labels":{"region":"east"},"annotations":{"owner":"ops"},"taints":[{"key":"edge","value":"true","effect":"NoSchedule"}]}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := EncodeAttributes(tc.in)
			if err != nil {
				t.Fatalf("EncodeAttributes: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("annotation (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeAttributes(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    Attributes
		wantErr bool
	}{
		"absent":  {in: "", want: Attributes{}},
		"garbage": {in: "{not json", want: Attributes{}, wantErr: true},
		"wrong shape": {
			in: `{"labels":["a"]}`, want: Attributes{}, wantErr: true,
		},
		"written by OpenYurt": {
			in: `{"labels":{"a":"1"},"annotations":{"x":"y"},"taints":[{"key":"k","value":"v","effect":"NoSchedule"}]}`,
			want: Attributes{
				Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"x": "y"},
				Taints: []corev1.Taint{taint("k", "v", corev1.TaintEffectNoSchedule)},
			},
		},
		"unknown fields ignored": {
			in:   `{"labels":{"a":"1"},"future":true}`,
			want: Attributes{Labels: map[string]string{"a": "1"}},
		},
		"reserved keys dropped": {
			in:   `{"labels":{"apps.openyurt.io/nodepool":"p","a":"1"}}`,
			want: Attributes{Labels: map[string]string{"a": "1"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeAttributes(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("DecodeAttributes error = %v, want error %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("attributes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	added := metav1.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	in := Attributes{
		Labels:      map[string]string{"a": "1"},
		Annotations: map[string]string{"x": "y"},
		Taints:      []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}},
	}
	got, err := DecodeAttributes(mustEncode(t, in))
	if err != nil {
		t.Fatalf("DecodeAttributes: %v", err)
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestPoolAttributes(t *testing.T) {
	pool := testutil.MakeNodePool("p").
		Labels(map[string]string{"a": "1", openyurtv1beta2.LabelCurrentNodePool: "other", openyurtv1beta2.LabelDesiredNodePool: "x"}).
		Annotations(map[string]string{"x": "y", prevKey: "{}"}).
		Taints(taint("k", "v1", corev1.TaintEffectNoSchedule), taint("k", "v2", corev1.TaintEffectNoSchedule),
			taint("k", "v3", corev1.TaintEffectNoExecute)).
		Hub()
	want := Attributes{
		Labels:      map[string]string{"a": "1"},
		Annotations: map[string]string{"x": "y"},
		Taints:      []corev1.Taint{taint("k", "v1", corev1.TaintEffectNoSchedule), taint("k", "v3", corev1.TaintEffectNoExecute)},
	}
	got := PoolAttributes(pool)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PoolAttributes (-want +got):\n%s", diff)
	}
	got.Labels["a"] = "changed"
	if pool.Spec.Labels["a"] != "1" {
		t.Errorf("PoolAttributes shares its labels with the pool")
	}
}

// nodeAttrs is what TestConciliateNode compares: the written parts of a node.
type nodeAttrs struct {
	Labels      map[string]string
	Annotations map[string]string
	Taints      []corev1.Taint
}

func attrsOf(n *corev1.Node) nodeAttrs {
	return nodeAttrs{Labels: n.Labels, Annotations: n.Annotations, Taints: n.Spec.Taints}
}

func TestConciliateNode(t *testing.T) {
	ns := corev1.TaintEffectNoSchedule
	ne := corev1.TaintEffectNoExecute
	early := metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	withTime := func(tt corev1.Taint, at *metav1.Time) corev1.Taint { tt.TimeAdded = at; return tt }
	enc := func(a Attributes) string { return mustEncode(t, a) }

	tests := map[string]struct {
		node        *corev1.Node
		want        Attributes
		hostNetwork bool
		wantAttrs   nodeAttrs
		wantChanged bool
		wantErr     bool
	}{
		"new member gets every attribute and the annotation": {
			node: testutil.MakeNode("n").Pool("p").Labels(map[string]string{"own": "x"}).
				Taints(taint("node.kubernetes.io/not-ready", "", ne)).Obj(),
			want: Attributes{
				Labels: map[string]string{"region": "east"}, Annotations: map[string]string{"owner": "ops"},
				Taints: []corev1.Taint{taint("edge", "true", ns)},
			},
			wantAttrs: nodeAttrs{
				Labels: map[string]string{openyurtv1beta2.LabelCurrentNodePool: "p", "own": "x", "region": "east"},
				Annotations: map[string]string{"owner": "ops", prevKey: `{"labels":{"region":"east"},` +
					`"annotations":{"owner":"ops"},"taints":[{"key":"edge","value":"true","effect":"NoSchedule"}]}`},
				Taints: []corev1.Taint{taint("node.kubernetes.io/not-ready", "", ne), taint("edge", "true", ns)},
			},
			wantChanged: true,
		},
		"in sync: nothing changes": {
			node: testutil.MakeNode("n").Labels(map[string]string{"a": "1"}).
				Annotations(map[string]string{prevKey: `{"labels":{"a":"1"}}`}).Obj(),
			want: Attributes{Labels: map[string]string{"a": "1"}},
			wantAttrs: nodeAttrs{
				Labels: map[string]string{"a": "1"}, Annotations: map[string]string{prevKey: `{"labels":{"a":"1"}}`},
			},
		},
		"attribute removed by hand is put back": {
			node: testutil.MakeNode("n").Annotations(map[string]string{prevKey: `{"labels":{"a":"1"}}`}).Obj(),
			want: Attributes{Labels: map[string]string{"a": "1"}},
			wantAttrs: nodeAttrs{
				Labels: map[string]string{"a": "1"}, Annotations: map[string]string{prevKey: `{"labels":{"a":"1"}}`},
			},
			wantChanged: true,
		},
		"changed label and annotation values are overwritten": {
			node: testutil.MakeNode("n").Labels(map[string]string{"a": "1"}).
				Annotations(map[string]string{"x": "old", prevKey: enc(Attributes{
					Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"x": "old"}})}).Obj(),
			want: Attributes{Labels: map[string]string{"a": "2"}, Annotations: map[string]string{"x": "new"}},
			wantAttrs: nodeAttrs{
				Labels: map[string]string{"a": "2"},
				Annotations: map[string]string{"x": "new",
					prevKey: `{"labels":{"a":"2"},"annotations":{"x":"new"}}`},
			},
			wantChanged: true,
		},
		"a wanted key overwrites a value set by someone else": {
			node:        testutil.MakeNode("n").Labels(map[string]string{"a": "theirs"}).Obj(),
			want:        Attributes{Labels: map[string]string{"a": "1"}},
			wantAttrs:   nodeAttrs{Labels: map[string]string{"a": "1"}, Annotations: map[string]string{prevKey: `{"labels":{"a":"1"}}`}},
			wantChanged: true,
		},
		"removed attributes with the recorded value are removed": {
			node: testutil.MakeNode("n").Labels(map[string]string{"a": "1", "b": "2"}).
				Annotations(map[string]string{"x": "y", prevKey: enc(Attributes{
					Labels: map[string]string{"a": "1", "b": "2"}, Annotations: map[string]string{"x": "y"}})}).Obj(),
			want: Attributes{Labels: map[string]string{"a": "1"}},
			wantAttrs: nodeAttrs{
				Labels: map[string]string{"a": "1"}, Annotations: map[string]string{prevKey: `{"labels":{"a":"1"}}`},
			},
			wantChanged: true,
		},
		"value-equality guard: removed attributes changed since are kept": {
			node: testutil.MakeNode("n").Labels(map[string]string{"b": "someone-else"}).
				Annotations(map[string]string{"x": "theirs", prevKey: enc(Attributes{
					Labels: map[string]string{"b": "2"}, Annotations: map[string]string{"x": "y"}})}).Obj(),
			want: Attributes{},
			wantAttrs: nodeAttrs{
				Labels: map[string]string{"b": "someone-else"}, Annotations: map[string]string{"x": "theirs"},
			},
			wantChanged: true,
		},
		"taint value change replaces the taint of the same key and effect": {
			node: testutil.MakeNode("n").Taints(taint("k", "v1", ns)).
				Annotations(map[string]string{prevKey: enc(Attributes{Taints: []corev1.Taint{taint("k", "v1", ns)}})}).Obj(),
			want: Attributes{Taints: []corev1.Taint{taint("k", "v2", ns)}},
			wantAttrs: nodeAttrs{
				Annotations: map[string]string{prevKey: `{"taints":[{"key":"k","value":"v2","effect":"NoSchedule"}]}`},
				Taints:      []corev1.Taint{taint("k", "v2", ns)},
			},
			wantChanged: true,
		},
		"same key with another effect is another taint": {
			node: testutil.MakeNode("n").Taints(taint("k", "theirs", ne)).Obj(),
			want: Attributes{Taints: []corev1.Taint{taint("k", "v", ns)}},
			wantAttrs: nodeAttrs{
				Annotations: map[string]string{prevKey: `{"taints":[{"key":"k","value":"v","effect":"NoSchedule"}]}`},
				Taints:      []corev1.Taint{taint("k", "theirs", ne), taint("k", "v", ns)},
			},
			wantChanged: true,
		},
		"a wanted taint replaces a foreign one of the same key and effect in place": {
			node: testutil.MakeNode("n").Taints(taint("a", "", ns), taint("k", "theirs", ns), taint("z", "", ns)).Obj(),
			want: Attributes{Taints: []corev1.Taint{taint("k", "v", ns)}},
			wantAttrs: nodeAttrs{
				Annotations: map[string]string{prevKey: `{"taints":[{"key":"k","value":"v","effect":"NoSchedule"}]}`},
				Taints:      []corev1.Taint{taint("a", "", ns), taint("k", "v", ns), taint("z", "", ns)},
			},
			wantChanged: true,
		},
		"removed taint with the recorded value is removed, others kept": {
			node: testutil.MakeNode("n").Taints(taint("a", "", ne), taint("k", "v", ns)).
				Annotations(map[string]string{prevKey: enc(Attributes{Taints: []corev1.Taint{taint("k", "v", ns)}})}).Obj(),
			want:        Attributes{},
			wantAttrs:   nodeAttrs{Annotations: map[string]string{}, Taints: []corev1.Taint{taint("a", "", ne)}},
			wantChanged: true,
		},
		"removed taint whose value changed since is kept": {
			node: testutil.MakeNode("n").Taints(taint("k", "changed", ns)).
				Annotations(map[string]string{prevKey: enc(Attributes{Taints: []corev1.Taint{taint("k", "v", ns)}})}).Obj(),
			want:        Attributes{},
			wantAttrs:   nodeAttrs{Annotations: map[string]string{}, Taints: []corev1.Taint{taint("k", "changed", ns)}},
			wantChanged: true,
		},
		"timeAdded of the node taint is kept when the pool sets none": {
			node: testutil.MakeNode("n").Taints(withTime(taint("k", "v", ne), &early)).
				Annotations(map[string]string{prevKey: enc(Attributes{Taints: []corev1.Taint{taint("k", "v", ne)}})}).Obj(),
			want: Attributes{Taints: []corev1.Taint{taint("k", "v", ne)}},
			wantAttrs: nodeAttrs{
				Annotations: map[string]string{prevKey: `{"taints":[{"key":"k","value":"v","effect":"NoExecute"}]}`},
				Taints:      []corev1.Taint{withTime(taint("k", "v", ne), &early)},
			},
		},
		"undecodable annotation counts as empty": {
			node: testutil.MakeNode("n").Labels(map[string]string{"b": "2"}).
				Annotations(map[string]string{prevKey: "{broken"}).Obj(),
			want: Attributes{Labels: map[string]string{"a": "1"}},
			wantAttrs: nodeAttrs{
				Labels: map[string]string{"a": "1", "b": "2"}, Annotations: map[string]string{prevKey: `{"labels":{"a":"1"}}`},
			},
			wantChanged: true,
			wantErr:     true,
		},
		"stripping a node that left removes the recorded attributes and the annotation": {
			node: testutil.MakeNode("n").Labels(map[string]string{"a": "1", "own": "x"}).Taints(taint("k", "v", ns)).
				Annotations(map[string]string{"x": "y", prevKey: enc(Attributes{
					Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"x": "y"},
					Taints: []corev1.Taint{taint("k", "v", ns)}})}).Obj(),
			want:        Attributes{},
			wantAttrs:   nodeAttrs{Labels: map[string]string{"own": "x"}, Annotations: map[string]string{}},
			wantChanged: true,
		},
		"hostNetwork pool adds the hostnetwork label": {
			node:        testutil.MakeNode("n").Obj(),
			hostNetwork: true,
			wantAttrs:   nodeAttrs{Labels: map[string]string{openyurtv1beta2.LabelNodePoolHostNetwork: "true"}},
			wantChanged: true,
		},
		"reserved keys are never pushed nor removed": {
			node: testutil.MakeNode("n").Pool("p").
				Annotations(map[string]string{prevKey: `{"labels":{"apps.openyurt.io/nodepool":"p"}}`}).Obj(),
			want: Attributes{Labels: map[string]string{openyurtv1beta2.LabelDesiredNodePool: "q"}},
			wantAttrs: nodeAttrs{
				Labels: map[string]string{openyurtv1beta2.LabelCurrentNodePool: "p"}, Annotations: map[string]string{},
			},
			wantChanged: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.node.DeepCopy()
			got, changed, err := ConciliateNode(tc.node, tc.want, tc.hostNetwork)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ConciliateNode error = %v, want error %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantAttrs, attrsOf(got)); diff != "" {
				t.Errorf("node attributes (-want +got):\n%s", diff)
			}
			if changed != tc.wantChanged {
				t.Errorf("changed = %t, want %t", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(before, tc.node); diff != "" {
				t.Errorf("ConciliateNode modified its input (-before +after):\n%s", diff)
			}
			// Idempotence: conciliating the result again changes nothing.
			if _, again, _ := ConciliateNode(got, tc.want, tc.hostNetwork); again {
				t.Errorf("a second ConciliateNode still reports a change")
			}
		})
	}
}
