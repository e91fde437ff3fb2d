package whitelist

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

func TestCacheByObject(t *testing.T) {
	got := CacheByObject(testNamespace, DefaultConfigMapName)
	if len(got.Namespaces) != 1 {
		t.Fatalf("namespaces %v, want only %s", got.Namespaces, testNamespace)
	}
	cfg, ok := got.Namespaces[testNamespace]
	if !ok || cfg.FieldSelector == nil {
		t.Fatalf("no field selector for namespace %s: %+v", testNamespace, got.Namespaces)
	}
	if s := cfg.FieldSelector.String(); s != "metadata.name="+DefaultConfigMapName {
		t.Errorf("field selector %q", s)
	}
	if got.Label != nil || got.Field != nil {
		t.Errorf("unexpected object-wide selectors: label %v, field %v", got.Label, got.Field)
	}
}

func TestRunnableNeedsNoLeaderElection(t *testing.T) {
	r := newTestStore(nil, nil).Runnable(&informertest.FakeInformers{})
	le, ok := r.(manager.LeaderElectionRunnable)
	if !ok || le.NeedLeaderElection() {
		t.Error("the whitelist runnable must run on every replica (NeedLeaderElection false)")
	}
}

// signalInformer is a fake informer that reports when a handler is added and removed.
type signalInformer struct {
	*controllertest.FakeInformer
	added, removed chan struct{}
}

func (i *signalInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.FakeInformer.AddEventHandler(h)
	close(i.added)
	return reg, err
}

func (i *signalInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	close(i.removed)
	return nil
}

// oneInformerCache serves inf for ConfigMaps and fails for anything else.
type oneInformerCache struct {
	cache.Cache
	inf *signalInformer
}

func (c *oneInformerCache) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	if _, ok := obj.(*corev1.ConfigMap); !ok {
		return nil, errors.New("unexpected informer type")
	}
	return c.inf, nil
}

func TestRunnableStart(t *testing.T) {
	inf := &signalInformer{FakeInformer: controllertest.NewFakeInformer(controllertest.Synced),
		added: make(chan struct{}), removed: make(chan struct{})}
	s := newTestStore(nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Runnable(&oneInformerCache{inf: inf}).Start(ctx) }()
	waitFor(t, inf.added, "the handler to be added")

	inf.Add(configMap(valueFoo, "1"))
	expectEntries(t, s, "after add", []Entry{foo})
	other := configMap(valueFooBar, "2")
	other.Namespace = "elsewhere"
	inf.Add(other)
	expectEntries(t, s, "after another ConfigMap", []Entry{foo})
	inf.Update(configMap(valueFoo, "1"), configMap(valueFooBar, "3"))
	expectEntries(t, s, "after update", []Entry{foo, bar})
	inf.Delete(configMap(valueFooBar, "3"))
	expectEntries(t, s, "after delete", nil)

	select {
	case err := <-done:
		t.Fatalf("Start returned before its context was done: %v", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return after its context was done")
	}
	waitFor(t, inf.removed, "the handler to be removed")
}

func TestRunnableStartInformerError(t *testing.T) {
	r := newTestStore(nil, nil).Runnable(&informertest.FakeInformers{Error: errors.New("boom")})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Start(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("Start = %v (context %v), want the informer error at once", err, ctx.Err())
	}
}

func TestStoreHandle(t *testing.T) {
	ours := configMap(valueFoo, "1")
	renamed := configMap(valueFooBar, "2")
	renamed.Name = "other"
	tests := map[string]struct {
		obj     any
		deleted bool
		want    []Entry
	}{
		"update of ours":           {obj: configMap(valueFooBar, "2"), want: []Entry{foo, bar}},
		"other namespace":          {obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: DefaultConfigMapName}, Data: map[string]string{DataKey: valueFooBar}}, want: []Entry{foo}},
		"other name":               {obj: renamed, want: []Entry{foo}},
		"other name deleted":       {obj: renamed, deleted: true, want: []Entry{foo}},
		"not a ConfigMap":          {obj: &corev1.Secret{ObjectMeta: ours.ObjectMeta}, deleted: true, want: []Entry{foo}},
		"nil ConfigMap":            {obj: (*corev1.ConfigMap)(nil), deleted: true, want: []Entry{foo}},
		"ours deleted":             {obj: ours, deleted: true},
		"ours deleted, tombstone":  {obj: toolscache.DeletedFinalStateUnknown{Key: "k", Obj: ours}, deleted: true},
		"other deleted, tombstone": {obj: toolscache.DeletedFinalStateUnknown{Key: "k", Obj: renamed}, deleted: true, want: []Entry{foo}},
		"invalid value of ours":    {obj: configMap(valueInvalid, "2"), want: []Entry{foo}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newTestStore(nil, nil)
			if err := s.Apply(ours); err != nil {
				t.Fatal(err)
			}
			s.handle(tc.obj, tc.deleted)
			if diff := cmp.Diff(tc.want, s.Load().Entries()); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func expectEntries(t *testing.T, s *Store, when string, want []Entry) {
	t.Helper()
	if diff := cmp.Diff(want, s.Load().Entries()); diff != "" {
		t.Errorf("%s (-want +got):\n%s", when, diff)
	}
}
