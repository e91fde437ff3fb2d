package kubestellarsim

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/drover-dev/drover/internal/scheme"
)

func TestParseScript(t *testing.T) {
	cases := map[string]struct {
		data    string
		want    []ScriptEntry
		wantErr bool
	}{
		"entries": {
			data: `
- cluster: "*"
  group: apps
  resource: deployments
  namespace: demo
  name: nginx
  status: {availableReplicas: 2, phase: Running}
- cluster: c1
  resource: namespaces
  name: demo
`,
			want: []ScriptEntry{
				{Cluster: "*", Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx",
					Status: map[string]any{"availableReplicas": float64(2), "phase": "Running"}},
				{Cluster: "c1", Resource: "namespaces", Name: "demo"},
			},
		},
		"empty":           {data: ""},
		"unknown key":     {data: "- {cluster: c1, resource: r, name: n, stauts: {}}", wantErr: true},
		"missing cluster": {data: "- {resource: r, name: n}", wantErr: true},
		"not a list":      {data: "cluster: c1", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseScript([]byte(tc.data))
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseScript error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScriptStore(t *testing.T) {
	ref := ObjectRef{Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx"}
	t1, t2, t3 := t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(3*time.Second)
	st := newScriptStore()
	if _, _, found := st.lookup("c1", ref); found {
		t.Fatal("an empty script has an entry")
	}
	st.set(AllClusters, ref, map[string]any{"n": int64(1)}, t0)
	st.set("c1", ref, map[string]any{"n": int64(2)}, t1)
	check := func(cluster string, want map[string]any, wantChanged time.Time) {
		t.Helper()
		got, changed, found := st.lookup(cluster, ref)
		if !found || !cmp.Equal(want, got) || !changed.Equal(wantChanged) {
			t.Errorf("lookup(%s) = %v, %v, %v; want %v, %v", cluster, got, changed, found, want, wantChanged)
		}
	}
	check("c1", map[string]any{"n": int64(2)}, t1) // the cluster's own, later entry
	check("c2", map[string]any{"n": int64(1)}, t0) // the wildcard
	st.set("c1", ref, map[string]any{"n": int64(2)}, t2)
	check("c1", map[string]any{"n": int64(2)}, t1) // same status: the change time stays
	st.set(AllClusters, ref, map[string]any{"n": int64(3)}, t3)
	check("c1", map[string]any{"n": int64(3)}, t3) // a later wildcard wins
	st.clear(AllClusters, ref)
	check("c1", map[string]any{"n": int64(2)}, t1)
	st.set("c1", ref, nil, t3)
	check("c1", nil, t3) // explicitly not reported

	other := ObjectRef{Resource: "configmaps", Namespace: "demo", Name: "x"}
	changed := st.replace([]ScriptEntry{
		{Cluster: "c1", Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx"},
		{Cluster: "c2", Resource: "configmaps", Namespace: "demo", Name: "x", Status: map[string]any{}},
	}, t3.Add(time.Second))
	if diff := cmp.Diff(map[ObjectRef]bool{other: true}, changed); diff != "" {
		t.Errorf("changed objects (-want +got):\n%s", diff)
	}
	check("c1", nil, t3) // unchanged by the replacement: same status, same change time
}

func TestAutoMemo(t *testing.T) {
	m := newAutoMemo()
	calls := 0
	compute := func() (map[string]any, error) {
		calls++
		return map[string]any{"ready": int64(1)}, nil
	}
	st, _, wait, err := m.observe("u", "c1", t0, 10*time.Second, compute)
	if err != nil || st != nil || wait != 10*time.Second || calls != 0 {
		t.Fatalf("first sight = %v, %v, %v, %d calls; want nothing for 10s", st, wait, err, calls)
	}
	st, _, wait, _ = m.observe("u", "c1", t0.Add(4*time.Second), 10*time.Second, compute)
	if st != nil || wait != 6*time.Second {
		t.Fatalf("4s later = %v, %v; want nothing for 6s more", st, wait)
	}
	due := t0.Add(10 * time.Second)
	st, changed, wait, _ := m.observe("u", "c1", due, 10*time.Second, compute)
	if st == nil || wait != 0 || !changed.Equal(due) {
		t.Fatalf("when due = %v, %v, %v; want the status, changed now", st, changed, wait)
	}
	_, changed, _, _ = m.observe("u", "c1", due.Add(time.Minute), 10*time.Second, compute)
	if !changed.Equal(due) {
		t.Errorf("an unchanged status moved its change time to %v", changed)
	}
	m.forget("u")
	if st, _, _, _ := m.observe("u", "c1", due.Add(time.Minute), 10*time.Second, compute); st != nil {
		t.Error("a forgotten object is not held back again")
	}
}

func TestDeploymentsAutoStatus(t *testing.T) {
	deploy := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": spec}}
	}
	all := func(n int64) map[string]any {
		return map[string]any{"replicas": n, "readyReplicas": n, "availableReplicas": n, "updatedReplicas": n}
	}
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		want map[string]any
	}{
		"replicas set":     {obj: deploy(map[string]any{"replicas": int64(3)}), want: all(3)},
		"replicas unset":   {obj: deploy(map[string]any{}), want: all(1)},
		"zero replicas":    {obj: deploy(map[string]any{"replicas": int64(0)}), want: all(0)},
		"not a Deployment": {obj: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DeploymentsAutoStatus("c1", tc.obj)); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReloadScript(t *testing.T) {
	cm := func(ns, name string, labelled bool, data map[string]string) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
		if labelled {
			c.Labels = map[string]string{ScriptConfigMapLabel: "true"}
		}
		return c
	}
	entry := func(cluster string, n int) string {
		return "- {cluster: '" + cluster + "', group: apps, resource: deployments, namespace: demo, name: nginx, " +
			"status: {availableReplicas: " + strconv.Itoa(n) + "}}\n"
	}
	reader := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		cm("b", "later", true, map[string]string{ScriptConfigMapKey: entry("*", 3)}),
		cm("a", "first", true, map[string]string{ScriptConfigMapKey: entry("*", 1) + entry("c1", 2)}),
		cm("a", "broken", true, map[string]string{ScriptConfigMapKey: "- {cluster: c9}"}),
	).Build()
	s := New(Config{Logger: testr.New(t)})
	s.reloadScript(context.Background(), reader)
	ref := ObjectRef{Group: "apps", Resource: "deployments", Namespace: "demo", Name: "nginx"}
	for cluster, want := range map[string]int64{"c1": 3, "c2": 3} { // b/later comes last and wins
		got, _, found := s.scripts.lookup(cluster, ref)
		if !found || !cmp.Equal(map[string]any{"availableReplicas": want}, got) {
			t.Errorf("lookup(%s) = %v, %v; want availableReplicas %d", cluster, got, found, want)
		}
	}
	if _, _, found := s.scripts.lookup("c9", ObjectRef{}); found {
		t.Error("the broken ConfigMap was loaded")
	}
}
