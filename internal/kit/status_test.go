package kit

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func podStatus(p *corev1.Pod) *corev1.PodStatus { return &p.Status }

func TestWriteStatus(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	var updates int
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pod).WithStatusSubresource(pod).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			updates++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	cached := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), cached); err != nil {
		t.Fatal(err)
	}

	same := cached.Status
	if wrote, err := WriteStatus(ctx, c, cached, podStatus, &same, nil); err != nil || wrote || updates != 0 {
		t.Fatalf("unchanged status: wrote %v, err %v, updates %d; want no write", wrote, err, updates)
	}

	want := corev1.PodStatus{Phase: corev1.PodRunning}
	if wrote, err := WriteStatus(ctx, c, cached, podStatus, &want, nil); err != nil || !wrote || updates != 1 {
		t.Fatalf("changed status: wrote %v, err %v, updates %d; want one write", wrote, err, updates)
	}
	if cached.Status.Phase != corev1.PodPending {
		t.Error("WriteStatus modified the cached object")
	}
	stored := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), stored); err != nil || stored.Status.Phase != corev1.PodRunning {
		t.Fatalf("stored phase %q (err %v), want Running", stored.Status.Phase, err)
	}

	// cached is now stale: the optimistic lock refuses the write with a conflict.
	again := corev1.PodStatus{Phase: corev1.PodFailed}
	if _, err := WriteStatus(ctx, c, cached, podStatus, &again, nil); !apierrors.IsConflict(err) {
		t.Errorf("stale write: err %v, want a conflict", err)
	}

	// A custom equality decides what counts as a change.
	never := func(*corev1.PodStatus, *corev1.PodStatus) bool { return true }
	if wrote, err := WriteStatus(ctx, c, stored, podStatus, &again, never); err != nil || wrote {
		t.Errorf("custom equality: wrote %v, err %v; want no write", wrote, err)
	}

	// Deleted meanwhile: no error, no write.
	if err := c.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if wrote, err := WriteStatus(ctx, c, stored, podStatus, &again, nil); err != nil || wrote {
		t.Errorf("deleted object: wrote %v, err %v; want neither", wrote, err)
	}
}

var _ runtime.Object = &corev1.Pod{}

func TestPatchStatus(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Message: "kept", Reason: "Old"}}
	var patches []string
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pod).WithStatusSubresource(pod).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			patches = append(patches, string(data))
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()
	cached := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), cached); err != nil {
		t.Fatal(err)
	}

	same := cached.Status
	if wrote, err := PatchStatus(ctx, c, cached, podStatus, &same, nil); err != nil || wrote || len(patches) != 0 {
		t.Fatalf("unchanged status: wrote %v, err %v, patches %q; want no write", wrote, err, patches)
	}

	want := corev1.PodStatus{Phase: corev1.PodRunning, Message: "kept"}
	if wrote, err := PatchStatus(ctx, c, cached, podStatus, &want, nil); err != nil || !wrote {
		t.Fatalf("changed status: wrote %v, err %v; want a write", wrote, err)
	}
	// Only what changed travels (phase set, reason removed), with the cached resourceVersion as a precondition.
	wantPatch := `{"metadata":{"resourceVersion":"` + cached.ResourceVersion + `"},"status":{"phase":"Running","reason":null}}`
	if len(patches) != 1 || patches[0] != wantPatch {
		t.Errorf("patches %q, want [%s]", patches, wantPatch)
	}
	if cached.Status.Phase != corev1.PodPending {
		t.Error("PatchStatus modified the cached object")
	}

	// cached is now stale: the precondition refuses the write with a conflict.
	again := corev1.PodStatus{Phase: corev1.PodFailed}
	if _, err := PatchStatus(ctx, c, cached, podStatus, &again, nil); !apierrors.IsConflict(err) {
		t.Errorf("stale write: err %v, want a conflict", err)
	}
}
