package yurtappdaemon

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// testPass is a pass that acted, over the given pools and kept children.
func testPass(pools []string, keep map[string]client.Object) *pass {
	p := newPass(ownerKindCases[0].owner().Obj())
	adapter, _ := render.AdapterFor(openyurtv1alpha1.DeploymentTemplateType)
	p.adapter = adapter
	for _, n := range pools {
		p.pools.eligible = append(p.pools.eligible, render.Pool{Name: n})
	}
	p.revision.current = &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "dns-rev"}}
	p.cls = classification{keep: keep}
	p.completed = true
	return p
}

func TestComputeStatus(t *testing.T) {
	t0, t1 := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0))
	keep := map[string]client.Object{"a": child("dns-a", "a"), "b": child("dns-b", "b")}
	first := computeStatus(&openyurtv1alpha1.YurtAppDaemonStatus{}, 1, testPass([]string{"b", "a"}, keep), t0)

	if diff := cmp.Diff([]string{"a", "b"}, first.NodePools); diff != "" {
		t.Errorf("nodepools (-want +got):\n%s", diff)
	}
	if first.CurrentRevision != "dns-rev" || first.TotalWorkloads != 2 || first.TemplateType != openyurtv1alpha1.DeploymentTemplateType {
		t.Errorf("status = %+v", first)
	}

	// The same outcome at a later time: lastTransitionTime is kept, and the status is equal.
	again := computeStatus(&first, 1, testPass([]string{"a", "b"}, keep), t1)
	if !statusEqual(&first, &again) {
		t.Errorf("an identical pass changed the status:\n%s", cmp.Diff(first, again))
	}

	// A failure flips WorkLoadFailure, with a new transition time, and keeps the others' times.
	failing := testPass([]string{"a", "b"}, keep)
	failing.updateFailed["a"] = errors.New(strings.Repeat("x", 5000))
	third := computeStatus(&first, 2, failing, t1)
	for _, c := range third.Conditions {
		if c.ObservedGeneration != 2 {
			t.Errorf("%s observedGeneration %d", c.Type, c.ObservedGeneration)
		}
		if len(c.Message) > kit.MaxMessageBytes {
			t.Errorf("%s message has %d bytes", c.Type, len(c.Message))
		}
		wantTime := t0
		if c.Type != openyurtv1alpha1.WorkLoadProvisioned {
			wantTime = t1 // Updated and Failure changed status
		}
		if !c.LastTransitionTime.Equal(&wantTime) {
			t.Errorf("%s lastTransitionTime %v, want %v", c.Type, c.LastTransitionTime, wantTime)
		}
	}
	if c := condition(third, openyurtv1alpha1.WorkLoadFailure); c.Reason != openyurtv1alpha1.ReasonUpdateFailed || c.Status != metav1.ConditionTrue {
		t.Errorf("failure condition %+v", c)
	}
}

func TestFailureOrder(t *testing.T) {
	p := testPass([]string{"a"}, map[string]client.Object{})
	p.pools.invalidNames = []string{"Bad"}
	p.deleteFailed["old"] = errInjected
	p.createFailed["a"] = errInjected
	p.renderErrs["b"] = errInjected
	p.nameConflicts["c"] = "dns-c"
	var got []string
	for _, f := range p.failures() {
		got = append(got, f.reason)
	}
	want := []string{
		openyurtv1alpha1.ReasonNameConflict, openyurtv1alpha1.ReasonRenderFailed, openyurtv1alpha1.ReasonCreateFailed,
		openyurtv1alpha1.ReasonDeleteFailed, openyurtv1alpha1.ReasonInvalidNodePoolName,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failure order (-want +got):\n%s", diff)
	}
}
