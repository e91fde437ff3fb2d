package yurtappdaemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/kit"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/testutil"
)

const (
	testNS    = "apps"
	ownerUID  = types.UID("owner-uid")
	ownerName = "dns"
)

var (
	appLabels  = map[string]string{"app": "dns"}
	edgeLabels = map[string]string{"tier": "edge"}
)

// kindCase is one owner kind, for tables that run over both.
type kindCase struct {
	kind          string
	newReconciler func(Config) reconcile.Reconciler
}

var ownerKindCases = []kindCase{
	{kind: testutil.YurtAppDaemonKind, newReconciler: func(c Config) reconcile.Reconciler { return NewYurtAppDaemonReconciler(c) }},
	{kind: testutil.UnitedDaemonSetKind, newReconciler: func(c Config) reconcile.Reconciler { return NewUnitedDaemonSetReconciler(c) }},
}

// forEachKind runs f as a subtest for each owner kind.
func forEachKind(t *testing.T, f func(t *testing.T, k kindCase)) {
	t.Helper()
	for _, k := range ownerKindCases {
		t.Run(k.kind, func(t *testing.T) { f(t, k) })
	}
}

// owner starts the standard owner of kind k: Deployment template, selecting pools labelled tier=edge.
func (k kindCase) owner() *testutil.OwnerWrapper[openyurtv1alpha1.Owner] {
	return testutil.MakeOwner(k.kind, ownerName, testNS).UID(ownerUID).Generation(1).
		Deployment(testutil.DeploymentSpec(appLabels, "dns:1")).NodePoolSelectorLabels(edgeLabels)
}

// ref is the controller ownerReference to the standard owner of kind k.
func (k kindCase) ref() metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: openyurtv1alpha1.GroupVersion.String(), Kind: k.kind, Name: ownerName, UID: ownerUID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// fixture is a Reconciler of one kind on the shared fake client (production indexes, writes counted).
type fixture struct {
	t      testing.TB
	k      kindCase
	r      reconcile.Reconciler
	c      client.WithWatch
	writes *testutil.Writes
	events *events.FakeRecorder
}

// statusTypes are the types whose status is a subresource.
func statusTypes() []client.Object {
	return []client.Object{&openyurtv1alpha1.YurtAppDaemon{}, &openyurtv1alpha1.UnitedDaemonSet{}, &openyurtv1beta1.NodePool{}}
}

// newFixture builds a fixture; hooks replace single calls (to inject errors) after they are counted.
func newFixture(t testing.TB, k kindCase, objs []client.Object, hooks interceptor.Funcs) *fixture {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{
		Objects: objs, Indexes: Indexes(), StatusSubresource: statusTypes(), Hooks: hooks,
	})
	return fixtureOn(t, k, fc.Client, fc.Writes)
}

// newManagedFieldsFixture is newFixture on a client that returns managedFields (which the fake client
// strips by default), for the tests of field ownership after a create.
func newManagedFieldsFixture(t testing.TB, k kindCase, objs []client.Object, hooks interceptor.Funcs) *fixture {
	t.Helper()
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{
		Objects: objs, Indexes: Indexes(), StatusSubresource: statusTypes(), Hooks: hooks, ReturnManagedFields: true,
	})
	return fixtureOn(t, k, fc.Client, fc.Writes)
}

func fixtureOn(t testing.TB, k kindCase, c client.WithWatch, w *testutil.Writes) *fixture {
	rec := events.NewFakeRecorder(100)
	return &fixture{
		t: t, k: k, c: c, writes: w, events: rec,
		r: k.newReconciler(Config{Client: c, APIReader: c, Recorder: rec, MaxBatch: 4}),
	}
}

func (f *fixture) reconcile() (ctrl.Result, error) {
	f.t.Helper()
	return f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: testNS, Name: ownerName}})
}

// mustReconcile reconciles and fails the test on an error.
func (f *fixture) mustReconcile() {
	f.t.Helper()
	if _, err := f.reconcile(); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
}

// ownerStatus reads the owner's status.
func (f *fixture) ownerStatus() openyurtv1alpha1.YurtAppDaemonStatus {
	f.t.Helper()
	o := f.k.owner().Obj()
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: ownerName}, o); err != nil {
		f.t.Fatalf("getting owner: %v", err)
	}
	return *o.DaemonStatus()
}

// conditions returns "<type>=<status>/<reason>" of each condition, checking observedGeneration.
func (f *fixture) conditions(generation int64) map[string]string {
	f.t.Helper()
	out := map[string]string{}
	for _, c := range f.ownerStatus().Conditions {
		if c.ObservedGeneration != generation {
			f.t.Errorf("condition %s has observedGeneration %d, want %d", c.Type, c.ObservedGeneration, generation)
		}
		if len(c.Message) > kit.MaxMessageBytes {
			f.t.Errorf("condition %s message has %d bytes", c.Type, len(c.Message))
		}
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

// deployments returns the Deployments of the namespace by name.
func (f *fixture) deployments() map[string]*appsv1.Deployment {
	f.t.Helper()
	list := &appsv1.DeploymentList{}
	if err := f.c.List(context.Background(), list, client.InNamespace(testNS)); err != nil {
		f.t.Fatalf("listing deployments: %v", err)
	}
	out := map[string]*appsv1.Deployment{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// statefulSets returns the StatefulSets of the namespace by name.
func (f *fixture) statefulSets() map[string]*appsv1.StatefulSet {
	f.t.Helper()
	list := &appsv1.StatefulSetList{}
	if err := f.c.List(context.Background(), list, client.InNamespace(testNS)); err != nil {
		f.t.Fatalf("listing statefulsets: %v", err)
	}
	out := map[string]*appsv1.StatefulSet{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// revisions returns the ControllerRevisions of the namespace by name.
func (f *fixture) revisions() map[string]*appsv1.ControllerRevision {
	f.t.Helper()
	list := &appsv1.ControllerRevisionList{}
	if err := f.c.List(context.Background(), list, client.InNamespace(testNS)); err != nil {
		f.t.Fatalf("listing revisions: %v", err)
	}
	out := map[string]*appsv1.ControllerRevision{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// eventReasons drains the recorder and returns "<type> <reason>" of each event.
func (f *fixture) eventReasons() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			fields := strings.Fields(e)
			out = append(out, strings.Join(fields[:min(2, len(fields))], " "))
		default:
			return out
		}
	}
}

// pool builds a NodePool with object labels.
func pool(name string, labels map[string]string) *testutil.NodePoolWrapper {
	return testutil.MakeNodePool(name).ObjectLabels(labels)
}

// child builds a Deployment of the owner's namespace mapped to pool by its label, with the given owner refs.
func child(name, poolName string, refs ...metav1.OwnerReference) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNS, UID: types.UID("uid-" + name), ResourceVersion: "",
			Labels:          map[string]string{"app": "dns"},
			OwnerReferences: refs,
		},
		Spec: testutil.DeploymentSpec(appLabels, "dns:0"),
	}
	if poolName != "" {
		d.Labels[openyurtv1alpha1.LabelPoolName] = poolName
	}
	return d
}

// statefulChild builds a StatefulSet like child.
func statefulChild(name, poolName string, refs ...metav1.OwnerReference) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNS, UID: types.UID("uid-" + name),
			Labels:          map[string]string{"app": "dns", openyurtv1alpha1.LabelPoolName: poolName},
			OwnerReferences: refs,
		},
		Spec: testutil.StatefulSetSpec(appLabels, "dns:0"),
	}
	return s
}

func condition(st openyurtv1alpha1.YurtAppDaemonStatus, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(st.Conditions, typ)
}

// errInjected is the error the tests inject.
var errInjected = errors.New("injected failure")

// created sets a creation timestamp.
func created(obj client.Object, t time.Time) {
	obj.SetCreationTimestamp(metav1.NewTime(t))
}

// applyConfigObject returns the object inside an unstructured apply configuration; it shares its map, so
// changes to it are seen by the caller of Apply.
func applyConfigObject(ac runtime.ApplyConfiguration) (*unstructured.Unstructured, bool) {
	c, ok := ac.(interface{ UnstructuredContent() map[string]any })
	if !ok {
		return nil, false
	}
	return &unstructured.Unstructured{Object: c.UnstructuredContent()}, true
}

func noSchedule(key string) corev1.Taint {
	return corev1.Taint{Key: key, Value: "true", Effect: corev1.TaintEffectNoSchedule}
}

func rawJSON(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// unstructuredNestedSet sets the image of the first container of a Deployment held as unstructured.
func unstructuredNestedSet(u *unstructured.Unstructured, image string) error {
	containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return fmt.Errorf("reading containers: %w", err)
	}
	if len(containers) == 0 {
		return errors.New("no containers")
	}
	c, _ := containers[0].(map[string]any)
	c["image"] = image
	return unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
}

func promValue(c prometheus.Collector) float64 { return promtestutil.ToFloat64(c) }

func setOf(items ...string) sets.Set[string] { return sets.New(items...) }

// kindOf is the kind of a typed object, from drover's scheme.
func schemeKind(obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, scheme.New())
	if err != nil {
		return "?"
	}
	return gvk.Kind
}
