package webhook

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-dev/drover/internal/scheme"
)

func TestDroppedFields(t *testing.T) {
	tests := map[string]struct {
		sent, got any
		want      []string
	}{
		"a dropped leaf": {
			sent: map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"maxUnavailable": int64(2), "partition": int64(1)}}},
			got:  map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": int64(1)}}},
			want: []string{"spec.updateStrategy.rollingUpdate.maxUnavailable"},
		},
		"a dropped map is reported at the map, not below it": {
			sent: map[string]any{"a": map[string]any{"b": "x", "c": "y"}},
			got:  map[string]any{},
			want: []string{"spec.a"},
		},
		"empty values are never reported": {
			sent: map[string]any{"s": "", "n": int64(0), "f": float64(0), "b": false, "m": map[string]any{}, "l": []any{},
				"nested": map[string]any{"creationTimestamp": nil, "x": []any{map[string]any{}}}},
			got: map[string]any{},
		},
		"values the server changed or added are not reported": {
			sent: map[string]any{"cpu": "1000m", "n": int64(3)},
			got:  map[string]any{"cpu": "1", "n": int64(4), "added": "x"},
		},
		"a value the server set to null is dropped": {
			sent: map[string]any{"a": "x"},
			got:  map[string]any{"a": nil},
			want: []string{"spec.a"},
		},
		"lists compare by index": {
			sent: map[string]any{"containers": []any{
				map[string]any{"name": "a", "resizePolicy": []any{map[string]any{"resourceName": "cpu"}}},
				map[string]any{"name": "b"},
			}},
			got:  map[string]any{"containers": []any{map[string]any{"name": "a"}}},
			want: []string{"spec.containers[0].resizePolicy", "spec.containers[1]"},
		},
		"a value of another type is not compared further": {
			sent: map[string]any{"a": map[string]any{"b": "x"}},
			got:  map[string]any{"a": "x"},
		},
		"keys in order": {
			sent: map[string]any{"z": "1", "a": "1", "m": "1"},
			got:  map[string]any{},
			want: []string{"spec.a", "spec.m", "spec.z"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, p := range droppedFields(tc.sent, tc.got, field.NewPath("spec")) {
				got = append(got, p.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDroppedFieldCauses(t *testing.T) {
	sent := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		ServiceName: "db",
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{
			MaxUnavailable: new(intstr.FromInt32(2)),
		}},
	}}
	returned := sent.DeepCopy()
	returned.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = nil
	returned.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement // a default the server adds
	returned.Status.Replicas = 3                                         // outside spec
	want := []metav1.StatusCause{{Type: metav1.CauseType(field.ErrorTypeForbidden),
		Field: "spec.updateStrategy.rollingUpdate.maxUnavailable", Message: droppedFieldMessage}}
	if diff := cmp.Diff(want, droppedFieldCauses(sent, returned)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	if got := droppedFieldCauses(sent, sent.DeepCopy()); got != nil {
		t.Errorf("causes of an unchanged object = %v, want none", got)
	}
}

func TestCauseError(t *testing.T) {
	prefix := field.NewPath("spec", "template")
	tests := map[string]struct {
		cause metav1.StatusCause
		note  string
		want  string
	}{
		"the type prefix of the message is not repeated": {
			cause: metav1.StatusCause{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.containers[0].image", Message: "Required value"},
			want:  "spec.template.spec.containers[0].image: Required value",
		},
		"a message with the bad value is kept": {
			cause: metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.containers[0].name",
				Message: `Invalid value: "-x": a lowercase RFC 1123 label must consist of ...`},
			want: `spec.template.spec.containers[0].name: Invalid value: "-x": a lowercase RFC 1123 label must consist of ...`,
		},
		"a note is appended": {
			cause: metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.x", Message: "Invalid value: 1: bad"},
			note:  "with spec.workloadTweaks[0] applied",
			want:  "spec.template.spec.x: Invalid value: 1: bad (with spec.workloadTweaks[0] applied)",
		},
		"a cause without a field is reported at the prefix": {
			cause: metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: "no good"},
			want:  "spec.template: Invalid value: no good",
		},
		"a type that is not a field error type reads as Invalid": {
			cause: metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Field: "spec.x", Message: "odd"},
			want:  "spec.template.spec.x: Invalid value: odd",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := CauseError(prefix, tc.cause, tc.note).Error(); got != tc.want {
				t.Errorf("CauseError = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRunDryRuns: results keep the order of the objects whatever the order of the answers; Invalid is a result,
// any other failure stops the batches and is returned.
func TestRunDryRuns(t *testing.T) {
	pods := func(names ...string) []client.Object {
		var out []client.Object
		for _, n := range names {
			out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: n}})
		}
		return out
	}
	invalid := func(name string) error {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "", field.ErrorList{field.Required(field.NewPath("spec", name), "")})
	}
	respond := func(f func(name string) error) (client.Writer, *atomic.Int32) {
		var calls atomic.Int32
		return fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
			Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
				calls.Add(1)
				return f(obj.GetGenerateName())
			},
		}).Build(), &calls
	}

	t.Run("results in order", func(t *testing.T) {
		names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}
		w, calls := respond(invalid)
		results, err := RunDryRuns(context.Background(), w, pods(names...), false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range results {
			for _, c := range r.Causes {
				got = append(got, c.Field)
			}
		}
		var want []string
		for _, n := range names {
			want = append(want, "spec."+n)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("causes (-want +got):\n%s", diff)
		}
		if calls.Load() != int32(len(names)) {
			t.Errorf("%d dry runs, want %d", calls.Load(), len(names))
		}
	})
	t.Run("a failure that is not Invalid stops the batches", func(t *testing.T) {
		w, calls := respond(func(string) error {
			return &apierrors.StatusError{ErrStatus: metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: "violates PodSecurity"}}
		})
		results, err := RunDryRuns(context.Background(), w, pods("a", "b", "c"), false)
		if !apierrors.IsForbidden(err) {
			t.Errorf("err = %v, want the Forbidden", err)
		}
		if calls.Load() != 1 {
			t.Errorf("%d dry runs, want 1 (the first batch)", calls.Load())
		}
		if results[0] != nil || results[1] != nil {
			t.Errorf("results = %v, want none", results)
		}
	})
	t.Run("an accepted object has no causes", func(t *testing.T) {
		w, _ := respond(func(string) error { return nil })
		results, err := RunDryRuns(context.Background(), w, pods("a"), true)
		if err != nil || results[0] == nil || len(results[0].Causes) != 0 {
			t.Errorf("results = %v, %v; want one without causes", results, err)
		}
	})
	t.Run("the object given is not changed", func(t *testing.T) {
		w, _ := respond(func(string) error { return nil })
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"generateName": "a"}}}
		before := obj.DeepCopy()
		if _, err := RunDryRuns(context.Background(), w, []client.Object{obj}, true); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, obj); diff != "" {
			t.Errorf("object changed (-before +after):\n%s", diff)
		}
	})
	t.Run("a plain error is wrapped with the kind", func(t *testing.T) {
		w, _ := respond(func(string) error { return errors.New("connection refused") })
		_, err := RunDryRuns(context.Background(), w, pods("a"), false)
		if err == nil || err.Error() != "dry-run create of the Pod: connection refused" {
			t.Errorf("err = %v", err)
		}
	})
}
