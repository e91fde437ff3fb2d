package yurtappdaemon

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/testutil"
)

// TestReconcileClassification runs each classification case as a controller pass, for both owner kinds.
func TestReconcileClassification(t *testing.T) {
	old := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		objs func(k kindCase) []client.Object
		// want are the Deployments after the pass, name → image.
		want       map[string]string
		wantSets   []string // StatefulSets after the pass
		wantWrites map[string]int
		wantConds  map[string]string
		wantEvents []string
		wantErr    bool // the pass returns an error, to be retried with backoff
	}{
		"a child is created for each selected pool": {
			objs: func(k kindCase) []client.Object {
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), pool("west", edgeLabels).Obj(),
					pool("cloud", map[string]string{"tier": "cloud"}).Obj()}
			},
			want:       map[string]string{"dns-east": "dns:1", "dns-west": "dns:1"},
			wantWrites: map[string]int{"create Deployment": 2, "create ControllerRevision": 1, "status-update": 1},
			wantConds:  allGood,
			wantEvents: []string{"Normal WorkloadCreated"},
		},
		"an out-of-sync child is applied, an in-sync one is kept": {
			objs: func(k kindCase) []client.Object {
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), child("dns-east", "east", k.ref())}
			},
			want:       map[string]string{"dns-east": "dns:1"},
			wantWrites: map[string]int{"apply": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds:  allGood,
			wantEvents: []string{"Normal WorkloadUpdated"},
		},
		"the child of a deselected pool is deleted": {
			objs: func(k kindCase) []client.Object {
				return []client.Object{k.owner().Obj(), pool("east", map[string]string{"tier": "cloud"}).Obj(),
					child("dns-east", "east", k.ref())}
			},
			want:       map[string]string{},
			wantWrites: map[string]int{"delete Deployment": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds:  noPools,
			wantEvents: []string{"Normal WorkloadDeleted", "Normal NoNodePoolsSelected"},
		},
		"the child of a pool being deleted is deleted": {
			objs: func(k kindCase) []client.Object {
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Deleting().Obj(), child("dns-east", "east", k.ref())}
			},
			want:       map[string]string{},
			wantWrites: map[string]int{"delete Deployment": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds:  noPools,
			wantEvents: []string{"Normal WorkloadDeleted", "Normal NoNodePoolsSelected"},
		},
		"of duplicates the one with the deterministic name is kept": {
			objs: func(k kindCase) []client.Object {
				older := child("dns-east-x7k2p", "east", k.ref())
				created(older, old)
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), older, child("dns-east", "east", k.ref())}
			},
			want:       map[string]string{"dns-east": "dns:1"},
			wantWrites: map[string]int{"apply": 1, "delete Deployment": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds:  allGood,
			wantEvents: []string{"Normal WorkloadUpdated", "Normal WorkloadDeleted"},
		},
		"of duplicates with generated names the oldest is kept": {
			objs: func(k kindCase) []client.Object {
				a, b := child("dns-east-bbbbb", "east", k.ref()), child("dns-east-aaaaa", "east", k.ref())
				created(a, old)
				created(b, old.Add(time.Hour))
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), a, b}
			},
			want:       map[string]string{"dns-east-bbbbb": "dns:1"},
			wantWrites: map[string]int{"apply": 1, "delete Deployment": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds:  allGood,
			wantEvents: []string{"Normal WorkloadUpdated", "Normal WorkloadDeleted"},
		},
		"a child mapped by its name alone is kept": {
			objs: func(k kindCase) []client.Object {
				c := child("dns-east", "", k.ref()) // neither annotation nor label
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), c}
			},
			want:       map[string]string{"dns-east": "dns:1"},
			wantWrites: map[string]int{"apply": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds:  allGood,
			wantEvents: []string{"Normal WorkloadUpdated"},
		},
		"an unmapped child is left alone": {
			objs: func(k kindCase) []client.Object {
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), child("dns-east", "east", k.ref()),
					child("stray", "", k.ref())}
			},
			want:       map[string]string{"dns-east": "dns:1", "stray": "dns:0"},
			wantWrites: map[string]int{"apply": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds:  allGood,
			wantEvents: []string{"Normal WorkloadUpdated", "Warning UnmappedWorkload"},
		},
		"a child of the other kind is deleted once the new child exists": {
			objs: func(k kindCase) []client.Object {
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), statefulChild("dns-east", "east", k.ref())}
			},
			want:       map[string]string{"dns-east": "dns:1"},
			wantWrites: map[string]int{"create Deployment": 1, "delete StatefulSet": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds:  allGood,
			wantEvents: []string{"Normal WorkloadCreated", "Normal WorkloadDeleted"},
		},
		"objects that are not owned are never touched": {
			objs: func(k kindCase) []client.Object {
				other := k.ref()
				other.UID, other.Name = "someone-else", "other"
				notController := k.ref()
				notController.Controller = nil
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(),
					child("dns-east", ""),                      // the deterministic name, no owner, no pool label
					child("dns-west", "west", other),           // another owner's child
					child("dns-north", "north", notController)} // owned but not as controller
			},
			want:       map[string]string{"dns-east": "dns:0", "dns-west": "dns:0", "dns-north": "dns:0"},
			wantWrites: map[string]int{"create Deployment": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds: map[string]string{
				openyurtv1alpha1.WorkLoadProvisioned: "False/NameConflict",
				openyurtv1alpha1.WorkLoadUpdated:     "True/AllUpdated",
				openyurtv1alpha1.WorkLoadFailure:     "True/NameConflict",
			},
			wantEvents: []string{"Warning NameConflict"},
			wantErr:    true,
		},
		"an orphan of an eligible pool is adopted": {
			objs: func(k kindCase) []client.Object {
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), child("dns-east-old", "east")}
			},
			want:       map[string]string{"dns-east-old": "dns:1"},
			wantWrites: map[string]int{"patch Deployment": 1, "apply": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds:  allGood,
			wantEvents: []string{"Normal WorkloadAdopted", "Normal WorkloadUpdated"},
		},
		"a pool whose name is not a label value is skipped": {
			objs: func(k kindCase) []client.Object {
				return []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(), pool("bad.pool.name-", edgeLabels).Obj()}
			},
			want:       map[string]string{"dns-east": "dns:1"},
			wantWrites: map[string]int{"create Deployment": 1, "create ControllerRevision": 1, "status-update": 1},
			wantConds: map[string]string{
				openyurtv1alpha1.WorkLoadProvisioned: "True/AllProvisioned",
				openyurtv1alpha1.WorkLoadUpdated:     "True/AllUpdated",
				openyurtv1alpha1.WorkLoadFailure:     "True/InvalidNodePoolName",
			},
			wantEvents: []string{"Normal WorkloadCreated", "Warning InvalidNodePoolName"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			forEachKind(t, func(t *testing.T, k kindCase) {
				f := newFixture(t, k, tc.objs(k), interceptor.Funcs{})
				if _, err := f.reconcile(); (err != nil) != tc.wantErr {
					t.Fatalf("reconcile error = %v, want error %v", err, tc.wantErr)
				}

				got := map[string]string{}
				for n, d := range f.deployments() {
					got[n] = d.Spec.Template.Spec.Containers[0].Image
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("deployments name → image (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantSets, slices.Sorted(mapKeys(f.statefulSets()))); diff != "" {
					t.Errorf("statefulsets (-want +got):\n%s", diff)
				}
				gotWrites := map[string]int{}
				for key := range tc.wantWrites {
					gotWrites[key] = f.writes.Get(key)
				}
				if diff := cmp.Diff(tc.wantWrites, gotWrites); diff != "" {
					t.Errorf("writes (-want +got):\n%s", diff)
				}
				if total, want := f.writes.Get("total"), sum(tc.wantWrites); total != want {
					t.Errorf("total writes = %d, want %d: %v", total, want, f.writes.Take())
				}
				if diff := cmp.Diff(tc.wantConds, f.conditions(1)); diff != "" {
					t.Errorf("conditions (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantEvents, f.eventReasons()); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		})
	}
}

var allGood = map[string]string{
	openyurtv1alpha1.WorkLoadProvisioned: "True/AllProvisioned",
	openyurtv1alpha1.WorkLoadUpdated:     "True/AllUpdated",
	openyurtv1alpha1.WorkLoadFailure:     "False/NoFailure",
}

var noPools = map[string]string{
	openyurtv1alpha1.WorkLoadProvisioned: "True/NoNodePoolsSelected",
	openyurtv1alpha1.WorkLoadUpdated:     "True/AllUpdated",
	openyurtv1alpha1.WorkLoadFailure:     "False/NoFailure",
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestRenderedChild checks the identity of a created child and that each template kind works.
func TestRenderedChild(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		owner := k.owner().StatefulSet(testutil.StatefulSetSpec(appLabels, "dns:1")).Obj()
		f := newFixture(t, k, []client.Object{owner, pool("east", edgeLabels).Obj()}, interceptor.Funcs{})
		f.mustReconcile()
		sets := f.statefulSets()
		s, ok := sets["dns-east"]
		if !ok || len(sets) != 1 || len(f.deployments()) != 0 {
			t.Fatalf("statefulsets = %v, deployments = %v; want only StatefulSet dns-east", mapKeysSlice(sets), mapKeysSlice(f.deployments()))
		}
		st := f.ownerStatus()
		want := map[string]string{
			"app": "dns", openyurtv1alpha1.LabelPoolName: "east", openyurtv1alpha1.LabelControllerRevisionHash: st.CurrentRevision,
		}
		if diff := cmp.Diff(want, s.Labels); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]metav1.OwnerReference{k.ref()}, s.OwnerReferences); diff != "" {
			t.Errorf("ownerReferences (-want +got):\n%s", diff)
		}
		if got := s.Spec.Template.Spec.NodeSelector[openyurtv1beta1.LabelCurrentNodePool]; got != "east" {
			t.Errorf("pod nodeSelector pool = %q, want east", got)
		}
		if st.TemplateType != openyurtv1alpha1.StatefulSetTemplateType || st.CurrentRevision == "" {
			t.Errorf("status templateType %q currentRevision %q", st.TemplateType, st.CurrentRevision)
		}
		if diff := cmp.Diff([]openyurtv1alpha1.WorkloadSummary{{NodePool: "east", WorkloadName: "dns-east", Replicas: 1,
			AvailableCondition: "False"}}, st.WorkloadSummary); diff != "" {
			t.Errorf("summary (-want +got):\n%s", diff)
		}
	})
}

func mapKeysSlice[V any](m map[string]V) []string { return slices.Sorted(mapKeys(m)) }

// TestPoolListFailureTouchesNothing: a failed NodePool read is never "no pools".
func TestPoolListFailureTouchesNothing(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		failPools := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*openyurtv1beta1.NodePoolList); ok {
				return errInjected
			}
			return c.List(ctx, list, opts...)
		}}
		objs := []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(),
			child("dns-east", "east", k.ref()), child("dns-gone", "gone", k.ref())}
		f := newFixture(t, k, objs, failPools)
		if _, err := f.reconcile(); err == nil {
			t.Fatal("reconcile returned no error")
		}
		for _, verb := range []string{"delete", "apply", "create Deployment"} {
			if n := f.writes.Get(verb); n != 0 {
				t.Errorf("%d %s calls, want none: %v", n, verb, f.writes.Take())
			}
		}
		if n := len(f.deployments()); n != 2 {
			t.Errorf("%d deployments left, want 2", n)
		}
		want := map[string]string{
			openyurtv1alpha1.WorkLoadProvisioned: "Unknown/NodePoolListFailed",
			openyurtv1alpha1.WorkLoadUpdated:     "Unknown/NodePoolListFailed",
			openyurtv1alpha1.WorkLoadFailure:     "True/NodePoolListFailed",
		}
		if diff := cmp.Diff(want, f.conditions(1)); diff != "" {
			t.Errorf("conditions (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"Warning NodePoolListFailed"}, f.eventReasons()); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// TestSecondPassMakesNoWrites: a pass over a converged owner writes nothing.
func TestSecondPassMakesNoWrites(t *testing.T) {
	owners := map[string]func(k kindCase) client.Object{
		"deployment with tweaks": func(k kindCase) client.Object {
			return k.owner().Tweaks(openyurtv1alpha1.WorkloadTweak{
				Pools:  []string{"east"},
				Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](3), ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "main", TargetImage: "dns:east"}}},
			}).Obj()
		},
		"statefulset": func(k kindCase) client.Object {
			return k.owner().StatefulSet(testutil.StatefulSetSpec(appLabels, "dns:1")).Obj()
		},
	}
	for name, mk := range owners {
		t.Run(name, func(t *testing.T) {
			forEachKind(t, func(t *testing.T, k kindCase) {
				objs := []client.Object{mk(k), pool("east", edgeLabels).Taints(noSchedule("edge")).Obj(),
					pool("west", edgeLabels).Obj(), child("dns-old", "gone", k.ref())}
				f := newFixture(t, k, objs, interceptor.Funcs{})
				f.mustReconcile()
				if f.writes.Get("total") == 0 {
					t.Fatal("the first pass wrote nothing")
				}
				f.writes.Reset()
				f.eventReasons()
				res, err := f.reconcile()
				if err != nil || !res.IsZero() {
					t.Fatalf("second pass: %v, %v", res, err)
				}
				if n := f.writes.Get("total"); n != 0 {
					t.Errorf("second pass made %d writes: %v", n, f.writes.Take())
				}
				if ev := f.eventReasons(); len(ev) != 0 {
					t.Errorf("second pass emitted events %v", ev)
				}
			})
		})
	}
}

// TestStatus checks the sorted pool list, the summary and the counters.
func TestStatus(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		ready := child("dns-beta", "beta", k.ref())
		ready.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: "True"}}}
		ready.Generation = 1
		objs := []client.Object{k.owner().Obj(), pool("gamma", edgeLabels).Obj(), pool("alpha", edgeLabels).Obj(),
			pool("beta", edgeLabels).Obj(), ready}
		f := newFixture(t, k, objs, interceptor.Funcs{})
		f.mustReconcile()
		st := f.ownerStatus()
		if diff := cmp.Diff([]string{"alpha", "beta", "gamma"}, st.NodePools); diff != "" {
			t.Errorf("nodepools (-want +got):\n%s", diff)
		}
		var pools []string
		for _, s := range st.WorkloadSummary {
			pools = append(pools, s.NodePool)
		}
		if diff := cmp.Diff([]string{"alpha", "beta", "gamma"}, pools); diff != "" {
			t.Errorf("summary pools (-want +got):\n%s", diff)
		}
		if st.TotalWorkloads != 3 || st.ObservedGeneration != 1 || st.TemplateType != openyurtv1alpha1.DeploymentTemplateType {
			t.Errorf("status = %+v", st)
		}
	})
}

// TestConditionsAlwaysPresent: all three conditions are written on success and on every kind of failure.
func TestConditionsAlwaysPresent(t *testing.T) {
	failKind := func(kind string, verb string) interceptor.Funcs {
		err := apierrors.NewInternalError(errInjected)
		switch verb {
		case "create":
			return interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if schemeKind(obj) == kind {
					return err
				}
				return c.Create(ctx, obj, opts...)
			}}
		default:
			return interceptor.Funcs{}
		}
	}
	tests := map[string]struct {
		owner     func(k kindCase) client.Object
		hooks     interceptor.Funcs
		wantErr   bool
		wantConds map[string]string
		wantEvent string
	}{
		"success": {
			owner:     func(k kindCase) client.Object { return k.owner().Obj() },
			wantConds: allGood,
			wantEvent: "Normal WorkloadCreated",
		},
		"invalid spec": {
			owner: func(k kindCase) client.Object {
				return k.owner().BothTemplates(testutil.DeploymentSpec(appLabels, "a"), testutil.StatefulSetSpec(appLabels, "a")).Obj()
			},
			wantConds: map[string]string{
				openyurtv1alpha1.WorkLoadProvisioned: "False/InvalidSpec",
				openyurtv1alpha1.WorkLoadUpdated:     "False/InvalidSpec",
				openyurtv1alpha1.WorkLoadFailure:     "True/InvalidSpec",
			},
			wantEvent: "Warning InvalidSpec",
		},
		"revision failure": {
			owner:   func(k kindCase) client.Object { return k.owner().Obj() },
			hooks:   failKind("ControllerRevision", "create"),
			wantErr: true,
			wantConds: map[string]string{
				openyurtv1alpha1.WorkLoadProvisioned: "Unknown/RevisionFailed",
				openyurtv1alpha1.WorkLoadUpdated:     "Unknown/RevisionFailed",
				openyurtv1alpha1.WorkLoadFailure:     "True/RevisionFailed",
			},
			wantEvent: "Warning RevisionFailed",
		},
		"create failure": {
			owner:   func(k kindCase) client.Object { return k.owner().Obj() },
			hooks:   failKind("Deployment", "create"),
			wantErr: true,
			wantConds: map[string]string{
				openyurtv1alpha1.WorkLoadProvisioned: "False/ProvisionFailed",
				openyurtv1alpha1.WorkLoadUpdated:     "True/AllUpdated",
				openyurtv1alpha1.WorkLoadFailure:     "True/CreateFailed",
			},
			wantEvent: "Warning WorkloadCreateFailed",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			forEachKind(t, func(t *testing.T, k kindCase) {
				f := newFixture(t, k, []client.Object{tc.owner(k), pool("east", edgeLabels).Obj()}, tc.hooks)
				_, err := f.reconcile()
				if (err != nil) != tc.wantErr {
					t.Fatalf("reconcile error = %v, want error %v", err, tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantConds, f.conditions(1)); diff != "" {
					t.Errorf("conditions (-want +got):\n%s", diff)
				}
				if ev := f.eventReasons(); !slices.Contains(ev, tc.wantEvent) {
					t.Errorf("events %v lack %q", ev, tc.wantEvent)
				}
			})
		})
	}
}

// TestInvalidSpecTouchesNothing: no child is changed or deleted for an invalid spec.
func TestInvalidSpecTouchesNothing(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kindCase) {
		owner := k.owner().NodePoolSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}).Obj()
		f := newFixture(t, k, []client.Object{owner, pool("east", edgeLabels).Obj(), child("dns-east", "east", k.ref())}, interceptor.Funcs{})
		f.mustReconcile()
		if n, want := f.writes.Get("total"), f.writes.Get("status-update"); n != want || want != 1 {
			t.Errorf("writes = %v, want only one status write", f.writes.Take())
		}
		if st := f.ownerStatus(); st.TemplateType != "" {
			t.Errorf("templateType = %q, want empty", st.TemplateType)
		}
	})
}

// TestWarningEventsGiveCounts: a warning event says how many pools or names it concerns before listing
// them.
func TestWarningEventsGiveCounts(t *testing.T) {
	k := ownerKindCases[0]
	f := newFixture(t, k, []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj(),
		pool("bad.pool.name-", edgeLabels).Obj(), pool("worse.pool.name-", edgeLabels).Obj()}, interceptor.Funcs{})
	f.mustReconcile()
	var msg string
	for len(f.events.Events) > 0 {
		if e := <-f.events.Events; strings.Contains(e, openyurtv1alpha1.ReasonInvalidNodePoolName) {
			msg = e
		}
	}
	if !strings.Contains(msg, "Skipped 2 NodePool(s)") || !strings.Contains(msg, "bad.pool.name-, worse.pool.name-") {
		t.Errorf("InvalidNodePoolName event %q lacks the count and the names", msg)
	}
}

// TestNoEventsAfterAFailedStatusWrite: a pass whose status write fails (an error or a lost race) emits none
// of its events, though its workload writes happened.
func TestNoEventsAfterAFailedStatusWrite(t *testing.T) {
	k := ownerKindCases[0]
	for name, failure := range map[string]error{
		"error":    apierrors.NewInternalError(errors.New("boom")),
		"conflict": apierrors.NewConflict(schema.GroupResource{Group: "apps.openyurt.io", Resource: "yurtappdaemons"}, ownerName, errors.New("modified")),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, k, []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj()}, interceptor.Funcs{
				SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
					return failure
				},
			})
			if _, err := f.reconcile(); err != nil && apierrors.IsConflict(failure) {
				t.Fatalf("reconcile: %v; want a quiet requeue after a lost race", err)
			}
			if f.writes.Get("create Deployment") != 1 || f.writes.Get("status-update YurtAppDaemon") != 1 {
				t.Fatalf("writes %v; want the workload created and the status write tried", f.writes.Take())
			}
			if ev := f.eventReasons(); len(ev) != 0 {
				t.Errorf("events after a failed status write: %v; want none", ev)
			}
		})
	}
}

// TestStatusOfAnOwnerDeletedMeanwhileIsNoError: the status write of an owner deleted during the pass finds it
// gone; that is no error to retry.
func TestStatusOfAnOwnerDeletedMeanwhileIsNoError(t *testing.T) {
	k := ownerKindCases[0]
	f := newFixture(t, k, []client.Object{k.owner().Obj(), pool("east", edgeLabels).Obj()}, interceptor.Funcs{
		SubResourceUpdate: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ ...client.SubResourceUpdateOption) error {
			return apierrors.NewNotFound(schema.GroupResource{Group: "apps.openyurt.io", Resource: "yurtappdaemons"}, obj.GetName())
		},
	})
	if _, err := f.reconcile(); err != nil {
		t.Errorf("reconcile: %v", err)
	}
}
