package kit

import (
	"errors"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Conflict backoff: a pass that lost a race (its cache is behind a write) is retried after 1 s, and passes
// that keep losing wait twice as long each time, up to 30 s; a pass without a conflict resets the count.
const (
	ConflictBaseDelay = time.Second
	ConflictMaxDelay  = 30 * time.Second
)

// Outcome collects what the steps of one pass came to: errors, lost races and requeue wishes. Backoff.Result
// turns it into the pass's return. The zero value is ready; it is not safe for concurrent use (fold the
// executor's attempts into it from one goroutine).
type Outcome struct {
	errs     []error
	refused  bool
	conflict bool
	after    time.Duration
}

// Error records the errors of a step. nil is ignored; a conflict is a lost race, not an error; a create
// refused because its namespace is being deleted is harmless (the namespace's deletion ends the matter); a
// write the API server refused for its content (Refused) is recorded as a refusal, not an error: the same
// write would be refused again, so the pass is not retried for it (the step that made the write reports it
// in the object's conditions and events; a refused status write raises an event through Events.EmitAfter).
func (o *Outcome) Error(errs ...error) {
	for _, err := range errs {
		switch {
		case err == nil, Harmless(err):
		case apierrors.IsConflict(err):
			o.conflict = true
		case Refused(err):
			o.refused = true
		default:
			o.errs = append(o.errs, err)
		}
	}
}

// Conflict records a lost race that was not an API conflict error (say, a create that found its name taken
// before the cache showed the object).
func (o *Outcome) Conflict() { o.conflict = true }

// RequeueAfter asks for another pass after d; the earliest positive wish wins.
func (o *Outcome) RequeueAfter(d time.Duration) {
	if d > 0 && (o.after == 0 || d < o.after) {
		o.after = d
	}
}

// Failed reports whether a write failed: an error or a refusal of its content (not a conflict, not a harmless
// refusal). A step that must not follow a failed one (a deletion after the writes it depends on) checks it.
func (o *Outcome) Failed() bool { return len(o.errs) > 0 || o.refused }

// Harmless reports whether err needs no retry: a create refused because the namespace is terminating.
func Harmless(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// Refused reports whether the API server refused a write for what it contains: the CRD's schema or a
// validation rule (422), a malformed or too large request (400, 413), or a validating webhook or admission
// policy that denied it. The same write would be refused again, so a pass that computed it reports the
// refusal (a condition, an event) and waits for its input to change instead of retrying in a loop. A
// permission denied by RBAC is not a refusal of the content.
func Refused(err error) bool {
	switch {
	case err == nil:
		return false
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsRequestEntityTooLargeError(err):
		return true
	case apierrors.IsForbidden(err):
		msg := err.Error()
		return strings.Contains(msg, "denied the request") || strings.Contains(msg, "ValidatingAdmissionPolicy")
	}
	return false
}

// Backoff keeps, per object, how many passes in a row lost a race, and turns each pass's Outcome into its
// return. It is safe for concurrent use by the workers of one controller.
type Backoff struct {
	mu sync.Mutex
	n  map[types.NamespacedName]int
}

// NewBackoff returns an empty Backoff.
func NewBackoff() *Backoff { return &Backoff{n: map[types.NamespacedName]int{}} }

// Result is the return of a pass of key. Errors are returned joined, for controller-runtime's rate-limited
// retry and its error log. Conflicts requeue without an error (no error log), after the conflict backoff;
// otherwise the pass requeues after the earliest RequeueAfter wish, or not at all. Refusals alone neither
// fail nor requeue the pass: it runs again when the object or something it watches changes (a hot or
// backoff loop on a write that is refused every time would only load the API server).
//
// controller-runtime's own rate-limited requeue without an error (Result.Requeue) is deprecated, so the
// count of conflicted passes is kept here.
func (b *Backoff) Result(key types.NamespacedName, o *Outcome) (ctrl.Result, error) {
	if len(o.errs) > 0 {
		return ctrl.Result{}, errors.Join(o.errs...)
	}
	after := o.after
	if o.conflict {
		d := b.next(key)
		if after == 0 || d < after {
			after = d
		}
	} else {
		b.Forget(key)
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// Forget drops the count of key (the object is gone).
func (b *Backoff) Forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.n, key)
}

func (b *Backoff) next(key types.NamespacedName) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n[key]++
	return min(ConflictBaseDelay<<min(b.n[key]-1, 5), ConflictMaxDelay)
}
