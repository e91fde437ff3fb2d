package whitelist

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

const (
	testNamespace = "drover-system"
	valueFoo      = `{"workloads":[{"Group":"example.com","Version":"v1","Kind":"Foo"}]}`
	valueFooBar   = `{"workloads":[{"group":"example.com","version":"v1","kind":"Foo"},` +
		`{"group":"example.com","version":"v1","kind":"Bar","replicasPath":"spec.size"}]}`
	valueInvalid = `{"workloads":[{"Group":"example.com",`
)

// configMap returns the whitelist ConfigMap holding value under DataKey.
func configMap(value, resourceVersion string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: DefaultConfigMapName, ResourceVersion: resourceVersion},
		Data:       map[string]string{DataKey: value},
	}
}

func newTestStore(rec events.EventRecorder, counter prometheus.Counter) *Store {
	return NewStore(StoreOptions{Namespace: testNamespace, Recorder: rec, ParseErrors: counter})
}

func newCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "test_whitelist_parse_errors_total", Help: "test"})
}

func TestStoreKeepsLastGoodSnapshot(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	counter := newCounter()
	s := newTestStore(rec, counter)
	if s.Load() == nil || len(s.Load().Entries()) != 0 {
		t.Fatalf("a new store publishes %v, want the empty snapshot", s.Load())
	}
	if err := s.Apply(configMap(valueFoo, "1")); err != nil {
		t.Fatalf("Apply valid: %v", err)
	}
	good := s.Load()

	if err := s.Apply(configMap(valueInvalid, "2")); err == nil {
		t.Fatal("Apply invalid returned no error")
	}
	if s.Load() != good {
		t.Errorf("after an invalid value the store publishes %v, want the last good %v", s.Load().Entries(), good.Entries())
	}
	if got := promtestutil.ToFloat64(counter); got != 1 {
		t.Errorf("parse errors counted %v, want 1", got)
	}
	if len(rec.Events) != 1 {
		t.Fatalf("%d events recorded, want 1", len(rec.Events))
	}
	want := "Warning InvalidWhitelist Key " + DataKey + ": invalid whitelist JSON"
	if got := <-rec.Events; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "the previous whitelist stays in force (custom kinds: 1)") {
		t.Errorf("event %q, want prefix %q", got, want)
	}

	// The same invalid value again (a resync, or an edit of another key) is not parsed again.
	if err := s.Apply(configMap(valueInvalid, "3")); err != nil {
		t.Errorf("re-applying the same invalid value returned %v, want nil", err)
	}
	if got := promtestutil.ToFloat64(counter); got != 1 || len(rec.Events) != 0 {
		t.Errorf("re-applying the same invalid value counted %v errors and recorded %d events, want 1 and 0", got, len(rec.Events))
	}

	if err := s.Apply(configMap(valueFooBar, "4")); err != nil {
		t.Fatalf("Apply fixed value: %v", err)
	}
	if diff := cmp.Diff([]Entry{foo, bar}, s.Load().Entries()); diff != "" {
		t.Errorf("after the fix (-want +got):\n%s", diff)
	}
	if err := s.Apply(nil); err != nil {
		t.Fatalf("Apply(nil): %v", err)
	}
	if got := s.Load(); got == nil || len(got.Entries()) != 0 {
		t.Errorf("after deletion the store publishes %v, want the empty snapshot", got)
	}
}

func TestStoreInvalidAtStartupKeepsEmpty(t *testing.T) {
	s := NewStore(StoreOptions{Namespace: testNamespace}) // no recorder, no counter
	if err := s.Apply(configMap(valueInvalid, "1")); err == nil {
		t.Fatal("Apply invalid returned no error")
	}
	if s.Load() != Empty() {
		t.Errorf("store publishes %v, want the empty snapshot", s.Load().Entries())
	}
}

// captureRecorder keeps every event with the object it regards.
type captureRecorder struct{ got []capturedEvent }

type capturedEvent struct {
	regarding                       runtime.Object
	eventtype, reason, action, note string
}

func (r *captureRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.got = append(r.got, capturedEvent{regarding, eventtype, reason, action, fmt.Sprintf(note, args...)})
}

func TestStoreEventRegardsConfigMap(t *testing.T) {
	rec := &captureRecorder{}
	s := newTestStore(rec, nil)
	cm := configMap(valueInvalid, "1")
	if err := s.Apply(cm); err == nil {
		t.Fatal("Apply invalid returned no error")
	}
	if len(rec.got) != 1 {
		t.Fatalf("%d events, want 1", len(rec.got))
	}
	ev := rec.got[0]
	if ev.regarding != cm {
		t.Errorf("event regards %v, want the ConfigMap", ev.regarding)
	}
	got := []string{ev.eventtype, ev.reason, ev.action}
	if diff := cmp.Diff([]string{corev1.EventTypeWarning, "InvalidWhitelist", "ParseWhitelist"}, got); diff != "" {
		t.Errorf("type, reason, action (-want +got):\n%s", diff)
	}
}

func TestStoreSubscribe(t *testing.T) {
	s := newTestStore(nil, nil)
	type call struct{ prev, next []Entry }
	var calls []call
	s.Subscribe(func(prev, next *Snapshot) {
		if s.Load() != next {
			t.Error("a subscriber was called before the new snapshot was published")
		}
		calls = append(calls, call{prev.Entries(), next.Entries()})
	})
	steps := []struct {
		name string
		cm   *corev1.ConfigMap
		want []call // calls made by this step
	}{
		{name: "first value", cm: configMap(valueFoo, "1"), want: []call{{nil, []Entry{foo}}}},
		{name: "same value, new resourceVersion", cm: configMap(valueFoo, "2")},
		{name: "equal snapshot, other spelling", cm: configMap(` {"WORKLOADS":[{"kind":"Foo","group":"example.com","version":"v1"}]}`, "3")},
		{name: "invalid value", cm: configMap(valueInvalid, "4")},
		{name: "back to the published value", cm: configMap(valueFoo, "5")},
		{name: "kind added", cm: configMap(valueFooBar, "6"), want: []call{{[]Entry{foo}, []Entry{foo, bar}}}},
		{name: "deleted", cm: nil, want: []call{{[]Entry{foo, bar}, nil}}},
		{name: "deleted again", cm: nil},
		{name: "recreated without the key", cm: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: DefaultConfigMapName}}},
	}
	for _, step := range steps {
		calls = nil
		_ = s.Apply(step.cm)
		if diff := cmp.Diff(step.want, calls, cmp.AllowUnexported(call{})); diff != "" {
			t.Errorf("%s: subscriber calls (-want +got):\n%s", step.name, diff)
		}
	}
}

func TestStoreConcurrentLoadDuringApply(t *testing.T) {
	s := newTestStore(events.NewFakeRecorder(1000), newCounter())
	values := []string{valueFoo, valueFooBar, valueInvalid, ""}
	const rounds = 200
	var wg sync.WaitGroup
	stop := make(chan struct{})
	bad := make(chan string, 1)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				snap := s.Load()
				if n := len(snap.Entries()); snap == nil || n > 2 || (n > 0 && !snap.Allowed(fooK)) {
					select {
					case bad <- fmt.Sprintf("loaded an impossible snapshot: %v", snap.Entries()):
					default:
					}
				}
			}
		})
	}
	var appliers sync.WaitGroup
	for w := range 2 {
		appliers.Go(func() {
			for i := range rounds {
				_ = s.Apply(configMap(values[(i+w)%len(values)], fmt.Sprint(i)))
			}
		})
	}
	appliers.Wait()
	close(stop)
	wg.Wait()
	select {
	case msg := <-bad:
		t.Error(msg)
	default:
	}
}
