package yurtappdaemon

import (
	"context"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testutil"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

const maxUnavailablePath = "spec.workloadTemplate.statefulSetTemplate.spec.updateStrategy.rollingUpdate.maxUnavailable"

// withMaxUnavailable is a StatefulSet owner spec whose template sets updateStrategy.rollingUpdate.maxUnavailable.
func withMaxUnavailable(spec *openyurtv1alpha1.YurtAppDaemonSpec) *openyurtv1alpha1.YurtAppDaemonSpec {
	return with(spec, func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
		s.WorkloadTemplate.StatefulSetTemplate.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
			Type:          appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: new(intstr.FromInt32(2))},
		}
	})
}

// dropField answers like an API server without the feature of the field at path: it accepts the child and
// returns it without that field.
func dropField(path ...string) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		unstructured.RemoveNestedField(u.Object, path...)
		return nil
	}
}

func TestOwnerValidatorReportsDroppedFields(t *testing.T) {
	dropMaxUnavailable := dropField("spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
	maxUnavailableTweak := openyurtv1alpha1.WorkloadTweak{Pools: []string{"east"}, Tweaks: openyurtv1alpha1.Tweaks{Patches: []openyurtv1alpha1.Patch{{
		Path: "/spec/updateStrategy/rollingUpdate/maxUnavailable", Operation: openyurtv1alpha1.PatchAdd,
		Value: &runtime.RawExtension{Raw: []byte("3")}}}}}
	rollingUpdate := func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
		s.WorkloadTemplate.StatefulSetTemplate.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{
			Partition: new(int32(1))}
	}
	tests := map[string]struct {
		spec, oldSpec *openyurtv1alpha1.YurtAppDaemonSpec
		respond       func(*unstructured.Unstructured) error
		wantMessages  []string
	}{
		"a field the API server drops is Forbidden at the template's field": {
			spec:    withMaxUnavailable(statefulSetSpec()),
			respond: dropMaxUnavailable,
			wantMessages: []string{maxUnavailablePath + ": Forbidden: this API server drops this field (a feature it does not " +
				"enable), so the child would never match the template; remove it"},
		},
		"a field kept by the API server is fine": {
			spec: withMaxUnavailable(statefulSetSpec()),
		},
		"a field only a tweak sets names the tweak": {
			spec: with(statefulSetSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				rollingUpdate(s)
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{maxUnavailableTweak}
			}),
			respond: dropMaxUnavailable,
			wantMessages: []string{maxUnavailablePath + ": Forbidden: this API server drops this field (a feature it does not " +
				"enable), so the child would never match the template; remove it (with spec.workloadTweaks[0] applied)"},
		},
		"update that leaves the template unchanged: not reported again": {
			spec: with(withMaxUnavailable(statefulSetSpec()), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.RevisionHistoryLimit = new(int32(3))
			}),
			oldSpec: withMaxUnavailable(statefulSetSpec()),
			respond: dropMaxUnavailable,
		},
		"update of a tweak only: the template's dropped field is ratcheted": {
			spec: with(withMaxUnavailable(statefulSetSpec()), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{maxUnavailableTweak}
			}),
			oldSpec: withMaxUnavailable(statefulSetSpec()),
			respond: dropMaxUnavailable,
		},
	}
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				d := &testutil.DryRuns[*unstructured.Unstructured]{Respond: tc.respond}
				var oldObj openyurtv1alpha1.Owner
				if tc.oldSpec != nil {
					oldObj = k.owner("db", tc.oldSpec)
				}
				_, err := k.validate(context.Background(), nil, d.Client(), oldObj, k.owner("db", tc.spec))
				if tc.wantMessages == nil && err != nil {
					t.Fatalf("validate = %v, want allowed", err)
				}
				if tc.wantMessages != nil && !apierrors.IsInvalid(err) {
					t.Fatalf("validate = %v, want a 422 Invalid", err)
				}
				if diff := cmp.Diff(tc.wantMessages, testutil.CauseMessages(err)); diff != "" {
					t.Errorf("cause messages (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// TestOwnerValidatorDryRunOrderIsDeterministic: the tweak runs go concurrently, and the errors keep the
// order of the tweaks whichever answer comes first.
func TestOwnerValidatorDryRunOrderIsDeterministic(t *testing.T) {
	spec := twoImageTweaks()
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		bAnswered := make(chan struct{})
		d := &testutil.DryRuns[*unstructured.Unstructured]{Respond: func(u *unstructured.Unstructured) error {
			if err := imageIs("b:1")(u); err != nil {
				close(bAnswered)
				return err
			}
			if err := imageIs("a:1")(u); err != nil {
				// Answer the first tweak after the second (both are in the same batch); the bound only
				// keeps a broken executor from hanging the test.
				select {
				case <-bAnswered:
				case <-time.After(5 * time.Second):
				}
				return err
			}
			return nil
		}}
		_, err := k.validate(context.Background(), nil, d.Client(), nil, k.owner("dns", spec))
		imagePath := "spec.workloadTemplate.deploymentTemplate.spec.template.spec.containers[0].image"
		want := []string{
			imagePath + `: Invalid value: "a:1": bad image (with spec.workloadTweaks[0] applied)`,
			imagePath + `: Invalid value: "b:1": bad image (with spec.workloadTweaks[1] applied)`,
		}
		if diff := cmp.Diff(want, testutil.CauseMessages(err)); diff != "" {
			t.Errorf("cause messages (-want +got):\n%s", diff)
		}
	})
}
