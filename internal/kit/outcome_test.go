package kit

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

var (
	gr          = schema.GroupResource{Resource: "pods"}
	errConflict = apierrors.NewConflict(gr, "x", errors.New("stale"))
	errBoom     = errors.New("boom")
)

// terminatingErr is what the API server answers a create in a namespace being deleted.
func terminatingErr() error {
	err := apierrors.NewForbidden(gr, "x", errors.New("namespace is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	return err
}

func TestBackoffResult(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	cases := map[string]struct {
		outcome   func(o *Outcome)
		want      ctrl.Result
		wantError bool
	}{
		"clean pass":                  {outcome: func(*Outcome) {}, want: ctrl.Result{}},
		"nil errors are ignored":      {outcome: func(o *Outcome) { o.Error(nil, nil) }, want: ctrl.Result{}},
		"an error is returned":        {outcome: func(o *Outcome) { o.Error(errBoom, errConflict) }, wantError: true},
		"a conflict requeues quietly": {outcome: func(o *Outcome) { o.Error(errConflict) }, want: ctrl.Result{RequeueAfter: time.Second}},
		"wrapped conflict too": {
			outcome: func(o *Outcome) { o.Error(errors.Join(errors.New("ctx"), errConflict)) },
			want:    ctrl.Result{RequeueAfter: time.Second},
		},
		"terminating namespace is harmless": {outcome: func(o *Outcome) { o.Error(terminatingErr()) }, want: ctrl.Result{}},
		"a refused write is neither retried nor an error": {
			outcome: func(o *Outcome) { o.Error(apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x", nil)) },
			want:    ctrl.Result{},
		},
		"a refusal next to an error: the error is returned": {
			outcome: func(o *Outcome) { o.Error(apierrors.NewBadRequest("too large"), errBoom) }, wantError: true,
		},
		"earliest requeue wins": {
			outcome: func(o *Outcome) { o.RequeueAfter(5 * time.Second); o.RequeueAfter(0); o.RequeueAfter(2 * time.Second) },
			want:    ctrl.Result{RequeueAfter: 2 * time.Second},
		},
		"requeue earlier than the conflict delay": {
			outcome: func(o *Outcome) { o.Conflict(); o.RequeueAfter(300 * time.Millisecond) },
			want:    ctrl.Result{RequeueAfter: 300 * time.Millisecond},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var o Outcome
			tc.outcome(&o)
			got, err := NewBackoff().Result(key, &o)
			if err != nil && Refused(err) {
				t.Errorf("a refusal was returned as an error: %v", err)
			}
			if (err != nil) != tc.wantError {
				t.Fatalf("error = %v, want error %v", err, tc.wantError)
			}
			if got != tc.want {
				t.Errorf("result = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestBackoffDoublesAndResets(t *testing.T) {
	b := NewBackoff()
	a, other := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}
	conflicted := func(key types.NamespacedName) time.Duration {
		var o Outcome
		o.Conflict()
		res, err := b.Result(key, &o)
		if err != nil {
			t.Fatal(err)
		}
		return res.RequeueAfter
	}
	var got []time.Duration
	for range 7 {
		got = append(got, conflicted(a))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i := range want {
		want[i] *= time.Second
	}
	if !equalDurations(got, want) {
		t.Errorf("delays = %v, want %v", got, want)
	}
	if d := conflicted(other); d != time.Second {
		t.Errorf("another object's first conflict waits %v, want 1s", d)
	}
	if _, err := b.Result(a, &Outcome{}); err != nil {
		t.Fatal(err)
	}
	if d := conflicted(a); d != time.Second {
		t.Errorf("after a clean pass the first conflict waits %v, want 1s", d)
	}
	// An error neither counts nor resets.
	var o Outcome
	o.Error(errBoom)
	if _, err := b.Result(a, &o); err == nil {
		t.Fatal("want the error returned")
	}
	if d := conflicted(a); d != 2*time.Second {
		t.Errorf("after an error the next conflict waits %v, want 2s", d)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRefused(t *testing.T) {
	gk := schema.GroupKind{Group: "apps.kruise.io", Kind: "PersistentPodState"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"the schema refuses", apierrors.NewInvalid(gk, "x", nil), true},
		{"a bad request", apierrors.NewBadRequest("malformed"), true},
		{"too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), true},
		{"a webhook denies", apierrors.NewForbidden(gr, "x",
			errors.New(`admission webhook "vpersistentpodstate.drover.dev" denied the request: already targeted`)), true},
		{"RBAC forbids", apierrors.NewForbidden(gr, "x", errors.New("User cannot create resource")), false},
		{"the namespace is terminating", terminatingErr(), false},
		{"a conflict", errConflict, false},
		{"a network error", errBoom, false},
	}
	for _, tt := range tests {
		if got := Refused(tt.err); got != tt.want {
			t.Errorf("%s: Refused = %t, want %t", tt.name, got, tt.want)
		}
	}
}

// A refusal is no error for the retry, but a failed write for what must not follow it.
func TestOutcomeFailedOnRefusal(t *testing.T) {
	var o Outcome
	o.Error(apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x", nil))
	if !o.Failed() {
		t.Error("Failed() = false after a refused write")
	}
	var clean Outcome
	clean.Error(errConflict, terminatingErr())
	if clean.Failed() {
		t.Error("Failed() = true after a conflict and a harmless refusal")
	}
}
