package kit

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// MaxNamesInMessage caps the object names a message lists; MaxMessageBytes caps a condition or event
// message.
const (
	MaxNamesInMessage = 10
	MaxMessageBytes   = 1024
)

// ReasonStatusRefused is the reason of the Warning event raised when the API server refused a status write
// for its content (see EmitAfter).
const ReasonStatusRefused = "StatusRefused"

// Events buffers the events of one pass so that they are emitted after its status write: a reader who sees
// the event finds the status that explains it. The zero value is ready; not safe for concurrent use.
type Events struct {
	list []event
}

type event struct {
	regarding                 runtime.Object // nil: the object Emit is given
	eventtype, reason, action string
	related                   runtime.Object
	note                      string
}

// Target buffers events about another object than the one Emit is given (a node, where the pass is about
// its pool); Events.On returns one.
type Target struct {
	e         *Events
	regarding runtime.Object
}

// On returns a Target whose events regard obj.
func (e *Events) On(obj runtime.Object) Target { return Target{e: e, regarding: obj} }

// Normal buffers a Normal event about the Target's object.
func (t Target) Normal(reason, action string, related runtime.Object, format string, args ...any) {
	t.e.add(t.regarding, corev1.EventTypeNormal, reason, action, related, format, args...)
}

// Warning buffers a Warning event about the Target's object.
func (t Target) Warning(reason, action string, related runtime.Object, format string, args ...any) {
	t.e.add(t.regarding, corev1.EventTypeWarning, reason, action, related, format, args...)
}

// Normal buffers a Normal event. related is the object the event is about besides the regarding one (a pod,
// a node); nil for none.
func (e *Events) Normal(reason, action string, related runtime.Object, format string, args ...any) {
	e.add(nil, corev1.EventTypeNormal, reason, action, related, format, args...)
}

// Warning buffers a Warning event.
func (e *Events) Warning(reason, action string, related runtime.Object, format string, args ...any) {
	e.add(nil, corev1.EventTypeWarning, reason, action, related, format, args...)
}

func (e *Events) add(regarding runtime.Object, eventtype, reason, action string, related runtime.Object, format string, args ...any) {
	if isNil(related) {
		related = nil
	}
	note := Truncate(fmt.Sprintf(format, args...), MaxMessageBytes)
	e.list = append(e.list, event{regarding, eventtype, reason, action, related, note})
}

// Len is the number of buffered events.
func (e *Events) Len() int { return len(e.list) }

// Reasons lists the reasons of the buffered events, in order (for tests and logs).
func (e *Events) Reasons() []string {
	out := make([]string, len(e.list))
	for i, ev := range e.list {
		out[i] = ev.reason
	}
	return out
}

// Emit records the buffered events, each on its Target's object or else on regarding, and empties the
// buffer. A nil recorder drops them, and so does a nil object to record them on.
func (e *Events) Emit(rec events.EventRecorder, regarding runtime.Object) {
	for _, ev := range e.list {
		on := ev.regarding
		if on == nil {
			on = regarding
		}
		if rec != nil && !isNil(on) {
			rec.Eventf(on, ev.related, ev.eventtype, ev.reason, ev.action, "%s", ev.note)
		}
	}
	e.list = nil
}

// EmitAfter ends a pass: it runs write, the pass's status write (kit.WriteStatus or kit.PatchStatus, or a
// controller's function around one of them), and emits the buffered events as Emit does only if write
// returned no error: it wrote, or there was nothing to write (NotFound counts as done, as those functions
// have it). After a failed write (a conflict included) the events are dropped: the pass is retried and
// decides again from the stored status, so an event never announces what no status shows. The buffer is
// empty afterwards either way. It returns what write returned.
//
// Every pass that writes a status emits through EmitAfter; Emit is for a pass that writes no status (a
// missing pool, a spec patch that ends the pass, a generator).
//
// A status write the API server refused for its content (Refused: the CRD's schema, a validating webhook or
// policy) cannot be reported in the status, so it raises one Warning event StatusRefused with the API
// server's message instead; the pass does not retry it (see Outcome.Error).
func (e *Events) EmitAfter(rec events.EventRecorder, regarding runtime.Object, write func() (bool, error)) (bool, error) {
	wrote, err := write()
	if err != nil {
		e.list = nil
		if Refused(err) {
			e.Warning(ReasonStatusRefused, "WriteStatus", nil, "the API server refused the status drover computed: %v", err)
			e.Emit(rec, regarding)
		}
		return wrote, err
	}
	e.Emit(rec, regarding)
	return wrote, nil
}

// NameList renders names sorted, at most MaxNamesInMessage of them, followed by "and N more".
func NameList(names []string) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) <= MaxNamesInMessage {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:MaxNamesInMessage], ", "), len(names)-MaxNamesInMessage)
}

// Truncate cuts s to at most n bytes without splitting a UTF-8 sequence, marking the cut with "...".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "..."
	cut := max(n-len(ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// isNil reports whether an interface holds nil or a nil pointer (a typed nil must not reach the recorder).
func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
