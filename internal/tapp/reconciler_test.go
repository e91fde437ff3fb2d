package tapp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/tapp/core"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/kit"
)

func TestReconcileCreatesMissingPods(t *testing.T) {
	f := newFixture(t, []client.Object{newApp(3).Obj()}, interceptor.Funcs{})
	got := f.pass()
	// Each create is one pod create and one gate write; one status write.
	want := map[string]int{"create Pod": 3, "status-patch Pod": 3, "status-update TApp": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"web-0", "web-1", "web-2"}, f.podNames()); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	for name, pod := range f.pods() {
		id := strings.TrimPrefix(name, "web-")
		if pod.Labels[tkestackv1.TAppInstanceKey] != id || pod.Labels["app"] != "web" ||
			!core.IsCurrentHashFormat(pod.Labels[tkestackv1.TAppHashKey]) || !core.IsCurrentHashFormat(pod.Labels[tkestackv1.TAppUniqHashKey]) {
			t.Errorf("pod %s labels: %v", name, pod.Labels)
		}
		if g := core.GateCondition(pod); g == nil || g.Status != corev1.ConditionTrue {
			t.Errorf("pod %s gate: %v", name, g)
		}
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != testUID {
			t.Errorf("pod %s controller: %v", name, ref)
		}
	}
	app := f.app()
	wantStatuses := map[string]tkestackv1.InstanceStatus{"0": "Pending", "1": "Pending", "2": "Pending"}
	if diff := cmp.Diff(wantStatuses, app.Status.Statuses); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if app.Status.Replicas != 3 || app.Status.AppStatus != tkestackv1.AppRunning || app.Status.ScaleLabelSelector != "app=web" ||
		app.Status.ObservedGeneration != 1 {
		t.Errorf("status: %+v", app.Status)
	}
	// Every instance has its pod at the resolved template: the rollout is complete, not yet available.
	if got := f.condition(tkestackv1.TAppProgressing); got != "False/RolloutComplete" {
		t.Errorf("Progressing = %s", got)
	}
	if got := f.condition(tkestackv1.TAppAvailable); got != "False/MinimumReplicasUnavailable" {
		t.Errorf("Available = %s", got)
	}
	// One event per reason per pass, naming the pods.
	if diff := cmp.Diff([]string{"Normal SuccessfulCreate Created 3 pods: web-0, web-1, web-2"}, f.drainEventLines()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestReconcileIdenticalPassWritesNothing(t *testing.T) {
	f := newFixture(t, []client.Object{newApp(3).Obj()}, interceptor.Funcs{})
	f.pass()
	f.drainEvents()
	if got := f.pass(); len(got) != 0 {
		t.Errorf("second pass wrote %v", got)
	}
	f.kubelet()
	f.pass()
	if got := f.pass(); len(got) != 0 {
		t.Errorf("steady-state pass wrote %v", got)
	}
	f.drainEvents()
	if got := f.pass(); len(got) != 0 {
		t.Errorf("steady-state pass wrote %v", got)
	}
	if ev := f.drainEvents(); len(ev) != 0 {
		t.Errorf("steady-state pass emitted %v", ev)
	}
	app := f.app()
	if app.Status.ReadyReplicas != 3 || app.Status.AvailableReplicas != 3 || app.Status.UpdatedReplicas != 3 {
		t.Errorf("status: %+v", app.Status)
	}
	for typ, want := range map[string]string{
		tkestackv1.TAppAvailable:      "True/MinimumReplicasAvailable",
		tkestackv1.TAppProgressing:    "False/RolloutComplete",
		tkestackv1.TAppReplicaFailure: "False/NoFailures",
	} {
		if got := f.condition(typ); got != want {
			t.Errorf("%s = %s, want %s", typ, got, want)
		}
	}
}

// staleCache makes the reconciler's pod reads come from a frozen copy of the store, as an informer cache that
// has not caught up would.
type staleCache struct {
	frozen client.WithWatch
}

func (s *staleCache) freeze(t *testing.T, f *fixture) {
	t.Helper()
	var objs []client.Object
	for _, pod := range f.pods() {
		objs = append(objs, pod)
	}
	objs = append(objs, f.app())
	s.frozen = newFixture(t, objs, interceptor.Funcs{}).inner
}

func (s *staleCache) hooks() interceptor.Funcs {
	return interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok && s.frozen != nil {
				return s.frozen.List(ctx, list, opts...)
			}
			return c.List(ctx, list, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Pod); ok && s.frozen != nil {
				return s.frozen.Get(ctx, key, obj, opts...)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}
}

func TestReconcileExpectationsStopDoubleWritesWithStaleCache(t *testing.T) {
	stale := &staleCache{}
	f := newFixture(t, []client.Object{newApp(3).Obj()}, stale.hooks())
	stale.freeze(t, f) // no pods yet
	if got := f.pass(); got["create Pod"] != 3 {
		t.Fatalf("first pass: %v", got)
	}
	if got := f.pass(); len(got) != 0 {
		t.Errorf("a stale cache caused writes: %v", got)
	}
	stale.frozen = nil
	f.kubelet()
	f.settle(5)

	// Kill 1: one delete, and none again while the cache still shows the pod.
	stale.freeze(t, f)
	f.updateApp(func(a *tkestackv1.TApp) { a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": "Killed"} })
	if got := f.pass(); got["delete Pod"] != 1 {
		t.Fatalf("kill pass: %v", got)
	}
	if got := f.pass(); got["delete Pod"] != 0 || got["create Pod"] != 0 {
		t.Errorf("a stale cache caused writes: %v", got)
	}

	// An in-place update is not started twice either.
	stale.frozen = nil
	f.settle(5)
	stale.freeze(t, f)
	f.updateApp(func(a *tkestackv1.TApp) { a.Spec.Template.Spec.Containers[0].Image = newImage })
	if got := f.pass(); got["patch Pod"] != 1 {
		t.Fatalf("update pass: %v", got)
	}
	if got := f.pass(); got["patch Pod"] != 0 || got["status-patch Pod"] != 0 {
		t.Errorf("a stale cache caused writes: %v", got)
	}
	if st := f.app().Status.Statuses["0"]; st != tkestackv1.InstanceUpdating {
		t.Errorf("status of 0 with a stale cache = %s, want Updating", st)
	}
}

func TestReconcileCreateErrorsAreReported(t *testing.T) {
	boom := errors.New("boom")
	f := newFixture(t, []client.Object{newApp(6).Obj()}, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() == "web-1" {
				return boom
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	f.writes.Take()
	_, err := f.reconcile()
	if !errors.Is(err, boom) {
		t.Fatalf("reconcile error = %v, want boom", err)
	}
	// Slow start: batches {0}, {1, 2}; the failure in the second batch stops the rest.
	if diff := cmp.Diff([]string{"web-0", "web-2"}, f.podNames()); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if got := f.writes.Take(); got["create Pod"] != 3 || got["status-update TApp"] != 1 {
		t.Errorf("writes: %v", got)
	}
	if got := f.condition(tkestackv1.TAppReplicaFailure); got != "True/FailedCreate" {
		t.Errorf("ReplicaFailure = %s", got)
	}
	if c := apimetaFind(f.app(), tkestackv1.TAppReplicaFailure); !strings.Contains(c.Message, "FailedCreate: 1") {
		t.Errorf("ReplicaFailure message = %q", c.Message)
	}
	if got := countOf(f.drainEvents(), "Warning FailedCreate"); got != 1 {
		t.Errorf("%d FailedCreate warnings, want 1", got)
	}
}

// TestReconcileFailuresAreOneEvent: the failed writes of a pass with one reason are one Warning naming the
// objects, with the first error.
func TestReconcileFailuresAreOneEvent(t *testing.T) {
	boom := errors.New("boom")
	f := newFixture(t, []client.Object{newApp(3).Obj()}, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() != "web-0" {
				return boom
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	if _, err := f.reconcile(); !errors.Is(err, boom) {
		t.Fatalf("reconcile error = %v, want boom", err)
	}
	want := []string{
		"Normal SuccessfulCreate Created pod web-0",
		"Warning FailedCreate Creating 2 objects failed: web-1, web-2: creating pod web-1: boom",
	}
	if diff := cmp.Diff(want, f.drainEventLines()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestReconcileNoEventsAfterFailedStatusWrite: a pass whose status write fails (an error or a lost race)
// emits none of its events, though its pod writes happened.
func TestReconcileNoEventsAfterFailedStatusWrite(t *testing.T) {
	for name, failure := range map[string]error{
		"error":    apierrors.NewInternalError(errors.New("boom")),
		"conflict": apierrors.NewConflict(schema.GroupResource{Resource: "tapps"}, testName, errors.New("stale")),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, []client.Object{newApp(2).Obj()}, interceptor.Funcs{
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					if _, ok := obj.(*tkestackv1.TApp); ok {
						return failure
					}
					return c.SubResource(sub).Update(ctx, obj, opts...)
				},
			})
			f.writes.Take()
			if _, err := f.reconcile(); (err != nil) == apierrors.IsConflict(failure) {
				t.Fatalf("reconcile error = %v; want an error only for a failure that is no conflict", err)
			}
			if got := f.writes.Take(); got["create Pod"] != 2 || got["status-update TApp"] != 1 {
				t.Errorf("writes %v, want the pods created and the status write tried", got)
			}
			if ev := f.drainEventLines(); len(ev) != 0 {
				t.Errorf("events after a failed status write: %v; want none", ev)
			}
		})
	}
}

// namespaceTerminatingError is the error the API server's NamespaceLifecycle admission returns for a create
// in a namespace that is being deleted.
func namespaceTerminatingError(resource, name string) error {
	err := apierrors.NewForbidden(schema.GroupResource{Resource: resource}, name,
		errors.New("unable to create new content in namespace "+testNS+" because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace " + testNS + " is being terminated", Field: "metadata.namespace"})
	return err
}

func TestReconcileCreateInTerminatingNamespaceIsNoFailure(t *testing.T) {
	for name, tc := range map[string]struct {
		app      *tkestackv1.TApp
		resource string
	}{
		"pod": {newApp(3).Obj(), "pods"},
		"PVC": {newApp(3).VolumeClaim("data", "1Gi").Obj(), "persistentvolumeclaims"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, []client.Object{tc.app}, interceptor.Funcs{
				Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
					return namespaceTerminatingError(tc.resource, obj.GetName())
				},
			})
			f.writes.Take()
			res, err := f.reconcile()
			if err != nil || res.RequeueAfter != 0 {
				t.Fatalf("result %+v, error %v; want neither an error nor a requeue", res, err)
			}
			// Slow start stops after the first refused create.
			if got := f.writes.Take(); got["create Pod"]+got["create PersistentVolumeClaim"] != 1 || got["status-update TApp"] != 1 {
				t.Errorf("writes: %v", got)
			}
			if got := f.podNames(); len(got) != 0 {
				t.Errorf("pods: %v", got)
			}
			if got := f.condition(tkestackv1.TAppReplicaFailure); got != "False/NoFailures" {
				t.Errorf("ReplicaFailure = %s, want False/NoFailures", got)
			}
			if got := f.app().Status.Statuses["0"]; got != tkestackv1.InstanceNotCreated {
				t.Errorf("status of 0 = %s, want NotCreated", got)
			}
			for _, e := range f.drainEvents() {
				if strings.HasPrefix(e, corev1.EventTypeWarning) {
					t.Errorf("warning event %q", e)
				}
			}
		})
	}

	t.Run("other forbidden creates still fail", func(t *testing.T) {
		f := newFixture(t, []client.Object{newApp(1).Obj()}, interceptor.Funcs{
			Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, obj.GetName(), errors.New("exceeded quota"))
			},
		})
		if _, err := f.reconcile(); !apierrors.IsForbidden(err) {
			t.Fatalf("reconcile error = %v, want the Forbidden error", err)
		}
		if got := f.condition(tkestackv1.TAppReplicaFailure); got != "True/FailedCreate" {
			t.Errorf("ReplicaFailure = %s, want True/FailedCreate", got)
		}
	})
}

func TestReconcileConflictsRequeueWithoutError(t *testing.T) {
	f := newFixture(t, []client.Object{newApp(1).Obj()}, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*tkestackv1.TApp); ok {
				return apierrors.NewConflict(schema.GroupResource{Resource: "tapps"}, obj.GetName(), errors.New("stale"))
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	// Passes that keep losing back off as errors do, without returning an error, up to the cap.
	s := time.Second
	for _, want := range []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, kit.ConflictMaxDelay, kit.ConflictMaxDelay} {
		res, err := f.reconcile()
		if err != nil || res.RequeueAfter != want {
			t.Fatalf("result %+v, error %v; want a requeue after %s without error", res, err, want)
		}
	}
}

// TestReconcileStatusOfDeletedTAppIsNoError: a TApp deleted between the read of the pass and its status write
// ends the pass without an error (its delete event follows), after the pod writes of the pass.
func TestReconcileStatusOfDeletedTAppIsNoError(t *testing.T) {
	f := newFixture(t, []client.Object{newApp(1).Obj()}, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*tkestackv1.TApp); ok {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "tapps"}, obj.GetName())
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	if _, err := f.reconcile(); err != nil {
		t.Fatalf("reconcile error = %v, want none", err)
	}
	if got := f.writes.Take(); got["create Pod"] != 1 || got["status-update TApp"] != 1 {
		t.Errorf("writes %v, want the pod created and the status write tried", got)
	}
}

// TestReconcileWarningNotesAreBounded: a failed write's Warning carries the error, cut to the size the kit
// allows an event note, however long the API server's message is.
func TestReconcileWarningNotesAreBounded(t *testing.T) {
	long := strings.Repeat("quota ", 1000)
	f := newFixture(t, []client.Object{newApp(1).Obj()}, interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, obj.GetName(), errors.New(long))
		},
	})
	if _, err := f.reconcile(); !apierrors.IsForbidden(err) {
		t.Fatalf("reconcile error = %v, want the Forbidden error", err)
	}
	var notes []string
	for len(f.events.Events) > 0 {
		if e, ok := strings.CutPrefix(<-f.events.Events, "Warning FailedCreate "); ok {
			notes = append(notes, e)
		}
	}
	if len(notes) != 1 {
		t.Fatalf("FailedCreate warnings %q, want one", notes)
	}
	if n := len(notes[0]); n > kit.MaxMessageBytes || !strings.HasSuffix(notes[0], "...") {
		t.Errorf("note of %d bytes ending %q, want at most %d ending with ...", n, notes[0][max(n-10, 0):], kit.MaxMessageBytes)
	}
}

func TestReconcileKillAndRestart(t *testing.T) {
	var uid types.UID
	f := newFixture(t, []client.Object{newApp(3).Obj()}, interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			o := &client.DeleteOptions{}
			o.ApplyOptions(opts)
			if o.Preconditions != nil && o.Preconditions.UID != nil {
				uid = *o.Preconditions.UID
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
	f.kubelet()
	f.settle(5)

	f.updateApp(func(a *tkestackv1.TApp) { a.Spec.Statuses = map[string]tkestackv1.InstanceStatus{"1": "Killed"} })
	if got := f.pass(); got["delete Pod"] != 1 || got["status-update TApp"] != 1 {
		t.Errorf("kill pass: %v", got)
	}
	if uid == "" {
		t.Error("delete without a UID precondition")
	}
	if st := f.app().Status.Statuses["1"]; st != tkestackv1.InstanceKilling {
		t.Errorf("status of 1 right after the delete = %s, want Killing", st)
	}
	f.settle(5)
	app := f.app()
	if app.Status.Statuses["1"] != tkestackv1.InstanceKilled || app.Status.Replicas != 3 || app.Status.ReadyReplicas != 2 {
		t.Errorf("after the kill: %+v", app.Status)
	}
	if diff := cmp.Diff([]string{"web-0", "web-2"}, f.podNames()); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}

	f.updateApp(func(a *tkestackv1.TApp) { a.Spec.Statuses = nil })
	if got := f.pass(); got["create Pod"] != 1 {
		t.Errorf("restart pass: %v", got)
	}
	f.kubelet()
	f.settle(5)
	if st := f.app().Status.Statuses["1"]; st != tkestackv1.InstanceRunning {
		t.Errorf("status of 1 after the restart = %s", st)
	}
}

func TestReconcileScaleDown(t *testing.T) {
	f := newFixture(t, []client.Object{newApp(4).Obj()}, interceptor.Funcs{})
	f.kubelet()
	f.settle(5)
	f.updateApp(func(a *tkestackv1.TApp) { a.Spec.Replicas = 1 })
	f.drainEvents()
	if got := f.pass(); got["delete Pod"] != 3 {
		t.Errorf("scale-down pass: %v", got)
	}
	if diff := cmp.Diff([]string{"Normal SuccessfulDelete Deleted 3 pods (scaled down): web-1, web-2, web-3"}, f.drainEventLines()); diff != "" {
		t.Errorf("events of the scale-down (-want +got):\n%s", diff)
	}
	f.settle(5)
	if diff := cmp.Diff([]string{"web-0"}, f.podNames()); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	want := map[string]tkestackv1.InstanceStatus{"0": "Running"}
	if diff := cmp.Diff(want, f.app().Status.Statuses); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

func TestReconcileInPlaceUpdate(t *testing.T) {
	f := newFixture(t, []client.Object{newApp(3).Obj()}, interceptor.Funcs{})
	f.kubelet()
	f.settle(5)

	f.updateApp(func(a *tkestackv1.TApp) { a.Spec.Template.Spec.Containers[0].Image = newImage })
	// (a) gate False, (b) the pod patch; the budget (1) allows one instance at a time, lowest id first.
	if diff := cmp.Diff(map[string]int{"status-patch Pod": 1, "patch Pod": 1, "status-update TApp": 1}, f.pass()); diff != "" {
		t.Errorf("first update pass (-want +got):\n%s", diff)
	}
	pod := f.pods()["web-0"]
	if pod.Spec.Containers[0].Image != newImage || pod.Annotations[tkestackv1.InPlaceUpdateStateKey] != "true" {
		t.Errorf("pod 0 not patched: %v %v", pod.Spec.Containers[0].Image, pod.Annotations)
	}
	if _, ok := core.RecordOf(pod); !ok {
		t.Error("pod 0 has no update record")
	}
	if g := core.GateCondition(pod); g == nil || g.Status != corev1.ConditionFalse {
		t.Errorf("pod 0 gate = %v, want False", g)
	}
	if st := f.app().Status.Statuses["0"]; st != tkestackv1.InstanceUpdating {
		t.Errorf("status of 0 = %s, want Updating", st)
	}
	// Nothing more while the kubelet has not reported the new image.
	if got := f.pass(); len(got) != 0 {
		t.Errorf("pass while updating wrote %v", got)
	}
	f.drainEvents()

	// The kubelet reports the new image: the gate goes True again.
	f.kubelet()
	if got := f.pass(); got["status-patch Pod"] != 1 || got["patch Pod"] != 0 {
		t.Errorf("completion pass: %v", got)
	}
	if g := core.GateCondition(f.pods()["web-0"]); g == nil || g.Status != corev1.ConditionTrue {
		t.Errorf("pod 0 gate after completion = %v", g)
	}
	if got := countOf(f.drainEvents(), "Normal InPlaceUpdateCompleted"); got != 1 {
		t.Errorf("%d InPlaceUpdateCompleted events, want 1", got)
	}

	f.kubelet()
	f.settle(20)
	for name, pod := range f.pods() {
		if pod.Spec.Containers[0].Image != newImage || pod.Status.ContainerStatuses[0].RestartCount != 1 {
			t.Errorf("pod %s not updated in place: %s restarts %d", name, pod.Spec.Containers[0].Image, pod.Status.ContainerStatuses[0].RestartCount)
		}
	}
	app := f.app()
	if app.Status.UpdatedReplicas != 3 || app.Status.AvailableReplicas != 3 {
		t.Errorf("status after the update: %+v", app.Status)
	}
	if got := f.condition(tkestackv1.TAppProgressing); got != "False/RolloutComplete" {
		t.Errorf("Progressing = %s", got)
	}
}

// TestReconcileInPlaceRetriesAfterKubeletRace covers the race between the gate write and the in-place patch:
// the kubelet recomputes Ready in between, the guarded patch conflicts, and a fresh read lets the same pass
// finish the update instead of flipping the gate back to True.
func TestReconcileInPlaceRetriesAfterKubeletRace(t *testing.T) {
	conflicts := 0
	race := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if _, isPod := obj.(*corev1.Pod); isPod && conflicts == 0 {
			conflicts++
			return apierrors.NewConflict(corev1.Resource("pods"), obj.GetName(), errors.New("the object has been modified"))
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
	f := newFixture(t, []client.Object{newApp(1).Obj()}, race)
	f.kubelet()
	f.settle(5)
	f.updateApp(func(a *tkestackv1.TApp) { a.Spec.Template.Spec.Containers[0].Image = newImage })
	got := f.pass()
	if conflicts != 1 {
		t.Fatalf("%d conflicts injected, want 1", conflicts)
	}
	// One gate write, the patch that lost the race and its retry; no gate flip back to True.
	if diff := cmp.Diff(map[string]int{"status-patch Pod": 1, "patch Pod": 2, "status-update TApp": 1}, got); diff != "" {
		t.Errorf("update pass after a lost race (-want +got):\n%s", diff)
	}
	if pod := f.pods()["web-0"]; pod.Spec.Containers[0].Image != newImage {
		t.Errorf("pod not patched in the same pass: %s", pod.Spec.Containers[0].Image)
	}
}

func TestReconcileRecreate(t *testing.T) {
	f := newFixture(t, []client.Object{newApp(2).Obj()}, interceptor.Funcs{})
	f.kubelet()
	f.settle(5)
	f.updateApp(func(a *tkestackv1.TApp) {
		a.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	})
	if got := f.pass(); got["delete Pod"] != 1 || got["patch Pod"] != 0 {
		t.Errorf("recreate pass: %v", got)
	}
	f.settle(20)
	for name, pod := range f.pods() {
		if len(pod.Spec.Containers[0].Env) != 1 {
			t.Errorf("pod %s not recreated", name)
		}
	}
}

func TestReconcilePVCs(t *testing.T) {
	f := newFixture(t, []client.Object{newApp(2).VolumeClaim("data", "1Gi").Obj()}, interceptor.Funcs{})
	if got := f.pass(); got["create PersistentVolumeClaim"] != 2 || got["create Pod"] != 2 {
		t.Errorf("writes: %v", got)
	}
	want := []string{"Normal SuccessfulCreate Created 2 PVCs: data-web-0, data-web-1; Created 2 pods: web-0, web-1"}
	if diff := cmp.Diff(want, f.drainEventLines()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, name := range []string{"data-web-0", "data-web-1"} {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := f.inner.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: name}, pvc); err != nil {
			t.Fatalf("PVC %s: %v", name, err)
		}
		if pvc.Labels["app"] != "web" {
			t.Errorf("PVC %s labels: %v", name, pvc.Labels)
		}
		if ref := metav1.GetControllerOf(pvc); ref == nil || ref.UID != testUID {
			t.Errorf("PVC %s controller: %v", name, ref)
		}
	}
	pod := f.pods()["web-1"]
	if v := pod.Spec.Volumes; len(v) != 1 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "data-web-1" {
		t.Errorf("pod volumes: %+v", v)
	}
	if got := f.pass(); len(got) != 0 {
		t.Errorf("second pass wrote %v", got)
	}
}

func TestReconcileNameConflict(t *testing.T) {
	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: testNS, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	f := newFixture(t, []client.Object{newApp(2).Obj(), foreign}, interceptor.Funcs{})
	if got := f.pass(); got["create Pod"] != 1 {
		t.Errorf("writes: %v", got)
	}
	if got := f.condition(tkestackv1.TAppReplicaFailure); got != "True/PodNameConflict" {
		t.Errorf("ReplicaFailure = %s", got)
	}
	if got := countOf(f.drainEvents(), "Warning PodNameConflict"); got != 1 {
		t.Errorf("%d PodNameConflict warnings, want 1", got)
	}
	if got := f.pass(); len(got) != 0 {
		t.Errorf("second pass wrote %v", got)
	}
	if ev := f.drainEvents(); len(ev) != 0 {
		t.Errorf("second pass emitted %v", ev)
	}
	if ref := metav1.GetControllerOf(f.pods()["web-1"]); ref != nil {
		t.Errorf("a pod without the instance label was adopted: %v", ref)
	}
}

func TestReconcileAdoptsOrphans(t *testing.T) {
	app := newApp(2).Obj()
	p := core.NewPass(app, core.Options{})
	orphan := runningPod(p, 0)
	orphan.OwnerReferences = nil
	f := newFixture(t, []client.Object{app, orphan}, interceptor.Funcs{})
	got := f.pass()
	if got["patch Pod"] != 1 || got["create Pod"] != 1 {
		t.Errorf("writes: %v", got)
	}
	if ref := metav1.GetControllerOf(f.pods()["web-0"]); ref == nil || ref.UID != testUID {
		t.Errorf("orphan not adopted: %v", ref)
	}
	if got := countOf(f.drainEvents(), "Normal Adopted"); got != 1 {
		t.Errorf("%d Adopted events, want 1", got)
	}
}

func TestReconcilePersistsDerivedSelector(t *testing.T) {
	app := newApp(2).Obj()
	app.Spec.Selector = nil
	f := newFixture(t, []client.Object{app}, interceptor.Funcs{})
	if diff := cmp.Diff(map[string]int{"patch TApp": 1}, f.pass()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if sel := f.app().Spec.Selector; sel == nil || sel.MatchLabels["app"] != "web" {
		t.Errorf("selector = %v", sel)
	}
	if got := f.pass(); got["create Pod"] != 2 || got["patch TApp"] != 0 {
		t.Errorf("next pass: %v", got)
	}
}

func TestReconcileForceDeletesOnLostNode(t *testing.T) {
	app := newApp(1).ForceDeletePod(true).Obj()
	pod := runningPod(core.NewPass(app, core.Options{}), 0)
	pod.Spec.NodeName = "gone"
	pod.DeletionTimestamp = &mt0
	pod.Finalizers = []string{"test.drover.dev/hold"}
	var grace *int64
	f := newFixture(t, []client.Object{app, pod}, interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			o := &client.DeleteOptions{}
			o.ApplyOptions(opts)
			grace = o.GracePeriodSeconds
			return c.Delete(ctx, obj, opts...)
		},
	})
	if got := f.pass(); got["delete Pod"] != 1 {
		t.Errorf("writes: %v", got)
	}
	if grace == nil || *grace != 0 {
		t.Errorf("grace period = %v, want 0", grace)
	}
	// An event about one pod keeps that pod's own message.
	want := "Normal SuccessfulDelete Deleted pod web-0 with grace period 0: its node gone is lost"
	if got := f.drainEventLines(); !slices.Contains(got, want) {
		t.Errorf("events %q, want %q among them", got, want)
	}
}

func TestReconcileDeletedTAppForgetsIt(t *testing.T) {
	f := newFixture(t, nil, interceptor.Funcs{})
	if res, err := f.reconcile(); err != nil || res.RequeueAfter != 0 {
		t.Errorf("missing TApp: %+v %v", res, err)
	}
	if got := f.writes.Take(); len(got) != 0 {
		t.Errorf("writes: %v", got)
	}
}

func apimetaFind(app *tkestackv1.TApp, typ string) metav1.Condition {
	for _, c := range app.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func TestReconcilePrunesUnusedTemplates(t *testing.T) {
	app := newApp(2).Pool("used", tplWith(oldImage)).Pool("unused", tplWith(newImage)).
		InstanceTemplate("1", "used").AutoDeleteUnusedTemplate(true).Obj()
	f := newFixture(t, []client.Object{app}, interceptor.Funcs{})
	if diff := cmp.Diff(map[string]int{"patch TApp": 1}, f.pass()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	pool := f.app().Spec.TemplatePool
	if _, ok := pool["unused"]; ok || len(pool) != 1 {
		t.Errorf("templatePool keys after pruning: %v", pool)
	}
	if got := countOf(f.drainEvents(), "Normal TemplatesPruned"); got != 1 {
		t.Errorf("%d TemplatesPruned events, want 1", got)
	}
	if got := f.pass(); got["patch TApp"] != 0 || got["create Pod"] != 2 {
		t.Errorf("next pass: %v", got)
	}
}

func TestReconcileRequeuesForMinReadySeconds(t *testing.T) {
	app := newApp(1).Obj()
	app.Spec.MinReadySeconds = 30
	f := newFixture(t, []client.Object{app}, interceptor.Funcs{})
	f.pass()
	f.kubelet() // Ready since t0
	res, err := f.reconcile()
	if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > 30*time.Second {
		t.Errorf("result %+v, error %v; want a requeue within minReadySeconds", res, err)
	}
	if got := f.app().Status.AvailableReplicas; got != 0 {
		t.Errorf("available before minReadySeconds: %d", got)
	}
	f.clock.SetTime(t0.Add(time.Minute))
	f.pass()
	if got := f.app().Status.AvailableReplicas; got != 1 {
		t.Errorf("available after minReadySeconds: %d", got)
	}
}

// TestReconcileRequeuesWhatNoEventEnds: a create blocked by another owner's PVC (PVCs are not watched) and a
// create that found the name taken before the cache showed it are looked at again on their own.
func TestReconcileRequeuesWhatNoEventEnds(t *testing.T) {
	t.Run("PVC of another owner", func(t *testing.T) {
		other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
			Name: core.ClaimName("data", testName, 0), Namespace: testNS, Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other", Controller: new(true)}},
		}}
		f := newFixture(t, []client.Object{newApp(1).VolumeClaim("data", "1Gi").Obj(), other}, interceptor.Funcs{})
		res, err := f.reconcile()
		if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > claimWaitRequeueDelay {
			t.Fatalf("result %+v, error %v; want a requeue within %s", res, err, claimWaitRequeueDelay)
		}
		if got := f.condition(tkestackv1.TAppReplicaFailure); got != "True/FailedCreate" {
			t.Errorf("ReplicaFailure = %s, want True/FailedCreate", got)
		}
	})
	t.Run("pod name taken", func(t *testing.T) {
		f := newFixture(t, []client.Object{newApp(1).Obj()}, interceptor.Funcs{
			Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
				return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, obj.GetName())
			},
		})
		res, err := f.reconcile()
		if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > kit.ConflictBaseDelay {
			t.Fatalf("result %+v, error %v; want a requeue within %s", res, err, kit.ConflictBaseDelay)
		}
	})
}

// TestScaledClaimsStayWhileTheirPodExists: under whenScaled Delete, the PVC of a removed id goes only once no
// pod of that name exists, whoever owns it: a released pod still mounts it.
func TestScaledClaimsStayWhileTheirPodExists(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: core.ClaimName("data", testName, 1), Namespace: testNS, Labels: map[string]string{"app": "web"},
	}}
	released := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: core.PodName(testName, 1), Namespace: testNS, Labels: map[string]string{"app": "elsewhere"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	app := newApp(1).VolumeClaim("data", "1Gi").PVCRetention(tkestackv1.RetainPersistentVolumeClaimRetentionPolicyType,
		tkestackv1.DeletePersistentVolumeClaimRetentionPolicyType).Obj()
	f := newFixture(t, []client.Object{app, claim, released}, interceptor.Funcs{})
	f.settle(5)
	if got := f.pass()["delete PersistentVolumeClaim"]; got != 0 {
		t.Fatalf("%d PVC deletes while pod %s exists", got, released.Name)
	}
	if err := f.inner.Delete(context.Background(), released); err != nil {
		t.Fatal(err)
	}
	if got := f.pass()["delete PersistentVolumeClaim"]; got != 1 {
		t.Errorf("%d PVC deletes once the pod is gone, want 1", got)
	}
}

// TestReplicasOverTheBoundBlockEveryWrite: a TApp stored with more replicas than the schema allows (an older
// CRD) gets InvalidSpec and no pod writes, and no per-instance work beyond the bound.
func TestReplicasOverTheBoundBlockEveryWrite(t *testing.T) {
	app := newApp(tkestackv1.MaxReplicas + 1).Obj()
	p := core.NewPass(app, core.Options{})
	if !p.Settings.Blocked || p.Desired.Replicas != tkestackv1.MaxReplicas {
		t.Fatalf("blocked %v, desired replicas %d; want blocked and %d", p.Settings.Blocked, p.Desired.Replicas, tkestackv1.MaxReplicas)
	}
	f := newFixture(t, []client.Object{app}, interceptor.Funcs{})
	if got := f.pass(); got["create Pod"] != 0 {
		t.Errorf("writes: %v", got)
	}
	if got := f.condition(tkestackv1.TAppReplicaFailure); got != "True/InvalidSpec" {
		t.Errorf("ReplicaFailure = %s, want True/InvalidSpec", got)
	}
}
