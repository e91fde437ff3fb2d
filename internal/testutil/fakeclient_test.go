package testutil

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-dev/drover/internal/index"
)

func TestFakeClientCountsWritesAndKeepsIndexes(t *testing.T) {
	ctx := context.Background()
	byNode := index.Index{Object: &corev1.Pod{}, Field: "node", Extract: func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}}
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "b", nil)
	f := NewFakeClient(FakeClientOptions{
		Indexes:           []index.Index{byNode},
		StatusSubresource: []client.Object{&corev1.Pod{}},
		Hooks: interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			return refused
		}},
	})
	a := &corev1.Pod{}
	a.Namespace, a.Name, a.Spec.NodeName = "ns", "a", "n1"
	if err := f.Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.UID == "" {
		t.Error("create assigned no UID")
	}
	a.Status.Phase = corev1.PodRunning
	if err := f.Client.Status().Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.Delete(ctx, a); !apierrors.IsForbidden(err) {
		t.Errorf("delete: %v, want the hook's error", err)
	}
	var pods corev1.PodList
	if err := f.Client.List(ctx, &pods, client.MatchingFields{"node": "n1"}); err != nil || len(pods.Items) != 1 {
		t.Errorf("indexed list: %d pods, err %v; want 1", len(pods.Items), err)
	}
	if got := f.Writes.Get("total"); got != 3 {
		t.Errorf("total writes = %d, want 3", got)
	}
	want := map[string]int{"create Pod": 1, "status-update Pod": 1, "delete Pod": 1}
	if diff := cmp.Diff(want, f.Writes.Take()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if got := f.Writes.Get("total"); got != 0 {
		t.Errorf("after Take: total = %d, want 0", got)
	}
}
