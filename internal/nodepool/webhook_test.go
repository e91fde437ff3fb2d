package nodepool

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/index"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
	"github.com/drover-dev/drover/internal/nodepool/membership"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/testutil"
)

func TestDefaultNodePool(t *testing.T) {
	tests := map[string]struct {
		in         *openyurtv1beta2.NodePool
		wantType   openyurtv1beta2.NodePoolType
		wantLabels map[string]string
	}{
		"empty type becomes Edge with its label": {
			in:         testutil.MakeNodePool("p").Hub(),
			wantType:   openyurtv1beta2.Edge,
			wantLabels: map[string]string{openyurtv1beta2.LabelNodePoolType: "edge"},
		},
		"Cloud keeps its type and gets its label": {
			in:         testutil.MakeNodePool("p").Type(openyurtv1beta1.Cloud).Hub(),
			wantType:   openyurtv1beta2.Cloud,
			wantLabels: map[string]string{openyurtv1beta2.LabelNodePoolType: "cloud"},
		},
		"other labels are kept and a wrong type label is corrected": {
			in: testutil.MakeNodePool("p").Type(openyurtv1beta1.Edge).
				ObjectLabels(map[string]string{"a": "b", openyurtv1beta2.LabelNodePoolType: "cloud"}).Hub(),
			wantType:   openyurtv1beta2.Edge,
			wantLabels: map[string]string{"a": "b", openyurtv1beta2.LabelNodePoolType: "edge"},
		},
		"an unsupported type gets no label (validation rejects it)": {
			in:       testutil.MakeNodePool("p").Type("Fog").Hub(),
			wantType: "Fog",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if err := (Defaulter{}).Default(context.Background(), tc.in); err != nil {
				t.Fatalf("Default: %v", err)
			}
			if tc.in.Spec.Type != tc.wantType {
				t.Errorf("type = %q, want %q", tc.in.Spec.Type, tc.wantType)
			}
			if diff := cmp.Diff(tc.wantLabels, tc.in.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateNodePool(t *testing.T) {
	valid := func() *testutil.NodePoolWrapper {
		return testutil.MakeNodePool("east").Type(openyurtv1beta1.Edge).
			Labels(map[string]string{"region": "east"}).
			Annotations(map[string]string{"example.com/owner": "ops"}).
			Taints(corev1.Taint{Key: "edge", Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
	ns := corev1.TaintEffectNoSchedule
	long := strings.Repeat("a", 64)
	tests := map[string]struct {
		newPool, oldPool *openyurtv1beta2.NodePool
		want             []string
	}{
		"valid create": {newPool: valid().Hub()},
		"valid Cloud without hostNetwork": {
			newPool: valid().Type(openyurtv1beta1.Cloud).Hub(),
		},
		"valid Edge with hostNetwork": {newPool: valid().HostNetwork(true).Hub()},
		"name longer than a label value": {
			newPool: testutil.MakeNodePool(long).Type(openyurtv1beta1.Edge).Hub(),
			want:    []string{"FieldValueInvalid metadata.name"},
		},
		"name that is no label value": {
			newPool: testutil.MakeNodePool("a.b-").Type(openyurtv1beta1.Edge).Hub(),
			want:    []string{"FieldValueInvalid metadata.name"},
		},
		"unsupported type": {
			newPool: valid().Type("Fog").Hub(),
			want:    []string{"FieldValueNotSupported spec.type"},
		},
		"missing type": {
			newPool: valid().Type("").Hub(),
			want:    []string{"FieldValueNotSupported spec.type"},
		},
		"bad label key": {
			newPool: valid().Labels(map[string]string{"bad key": "v"}).Hub(),
			want:    []string{"FieldValueInvalid spec.labels"},
		},
		"bad label value": {
			newPool: valid().Labels(map[string]string{"k": "bad value"}).Hub(),
			want:    []string{"FieldValueInvalid spec.labels"},
		},
		"reserved label keys": {
			newPool: valid().Labels(map[string]string{
				openyurtv1beta2.LabelCurrentNodePool: "x", openyurtv1beta2.LabelDesiredNodePool: "y"}).Hub(),
			want: []string{
				"FieldValueForbidden spec.labels[apps.openyurt.io/desired-nodepool]",
				"FieldValueForbidden spec.labels[apps.openyurt.io/nodepool]",
			},
		},
		"bad annotation key": {
			newPool: valid().Annotations(map[string]string{"bad key": "v"}).Hub(),
			want:    []string{"FieldValueInvalid spec.annotations"},
		},
		"reserved annotation key": {
			newPool: valid().Annotations(map[string]string{openyurtv1beta2.AnnotationPrevAttrs: "{}"}).Hub(),
			want:    []string{"FieldValueForbidden spec.annotations[nodepool.openyurt.io/previous-attributes]"},
		},
		"bad taint key": {
			newPool: valid().Taints(corev1.Taint{Key: "bad key", Effect: ns}).Hub(),
			want:    []string{"FieldValueInvalid spec.taints[0].key"},
		},
		"bad taint value": {
			newPool: valid().Taints(corev1.Taint{Key: "k", Value: "bad value", Effect: ns}).Hub(),
			want:    []string{"FieldValueInvalid spec.taints[0].value"},
		},
		"bad taint effect": {
			newPool: valid().Taints(corev1.Taint{Key: "k", Effect: "Sometimes"}).Hub(),
			want:    []string{"FieldValueNotSupported spec.taints[0].effect"},
		},
		"missing taint effect": {
			newPool: valid().Taints(corev1.Taint{Key: "k"}).Hub(),
			want:    []string{"FieldValueNotSupported spec.taints[0].effect"},
		},
		"duplicate taint key and effect": {
			newPool: valid().Taints(corev1.Taint{Key: "k", Value: "a", Effect: ns}, corev1.Taint{Key: "k", Value: "b", Effect: ns}).Hub(),
			want:    []string{"FieldValueDuplicate spec.taints[1]"},
		},
		"same taint key with another effect": {
			newPool: valid().Taints(corev1.Taint{Key: "k", Effect: ns}, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoExecute}).Hub(),
		},
		"hostNetwork on a Cloud pool": {
			newPool: valid().Type(openyurtv1beta1.Cloud).HostNetwork(true).Hub(),
			want:    []string{"FieldValueInvalid spec.hostNetwork"},
		},
		"update: type is immutable": {
			newPool: valid().Type(openyurtv1beta1.Cloud).Hub(), oldPool: valid().Hub(),
			want: []string{"FieldValueForbidden spec.type"},
		},
		"update: hostNetwork is immutable": {
			newPool: valid().HostNetwork(true).Hub(), oldPool: valid().Hub(),
			want: []string{"FieldValueForbidden spec.hostNetwork"},
		},
		"update: a type stored empty was Edge": {
			newPool: valid().Hub(), oldPool: valid().Type("").Hub(),
		},
		"update: labels, annotations and taints may change": {
			newPool: valid().Labels(map[string]string{"region": "west"}).Annotations(nil).Taints().Hub(),
			oldPool: valid().Hub(),
		},
		"update: drover's stricter rules are ratcheted while the field is unchanged": {
			newPool: testutil.MakeNodePool("east").Type(openyurtv1beta1.Edge).
				Labels(map[string]string{openyurtv1beta2.LabelCurrentNodePool: "x"}).
				Taints(corev1.Taint{Key: "k", Effect: ns}, corev1.Taint{Key: "k", Effect: ns}).
				ObjectLabels(map[string]string{"new": "label"}).Hub(),
			oldPool: testutil.MakeNodePool("east").Type(openyurtv1beta1.Edge).
				Labels(map[string]string{openyurtv1beta2.LabelCurrentNodePool: "x"}).
				Taints(corev1.Taint{Key: "k", Effect: ns}, corev1.Taint{Key: "k", Effect: ns}).Hub(),
		},
		"update: ratcheted rules apply again once the field changes": {
			newPool: testutil.MakeNodePool("east").Type(openyurtv1beta1.Edge).
				Taints(corev1.Taint{Key: "k", Effect: ns}, corev1.Taint{Key: "k", Effect: ns}, corev1.Taint{Key: "j", Effect: ns}).Hub(),
			oldPool: testutil.MakeNodePool("east").Type(openyurtv1beta1.Edge).
				Taints(corev1.Taint{Key: "k", Effect: ns}, corev1.Taint{Key: "k", Effect: ns}).Hub(),
			want: []string{"FieldValueDuplicate spec.taints[1]"},
		},
		"update: OpenYurt's own rules are not ratcheted": {
			newPool: valid().Annotations(map[string]string{"bad key": "v"}).Hub(),
			oldPool: valid().Annotations(map[string]string{"bad key": "v"}).Hub(),
			want:    []string{"FieldValueInvalid spec.annotations"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, testutil.ErrorSummary(Validate(tc.newPool, tc.oldPool))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateNodePoolAccumulates(t *testing.T) {
	pool := testutil.MakeNodePool(strings.Repeat("x", 64)).Type(openyurtv1beta1.Cloud).HostNetwork(true).
		Labels(map[string]string{"bad key": "v"}).
		Annotations(map[string]string{"bad key": "v"}).
		Taints(corev1.Taint{Key: "k", Effect: "Bad"}, corev1.Taint{Key: "k", Effect: "Bad"}).
		Hub()
	old := testutil.MakeNodePool(pool.Name).Type(openyurtv1beta1.Edge).Hub()
	want := []string{
		"FieldValueInvalid spec.labels",
		"FieldValueInvalid spec.annotations",
		"FieldValueNotSupported spec.taints[0].effect",
		"FieldValueNotSupported spec.taints[1].effect",
		"FieldValueDuplicate spec.taints[1]",
		"FieldValueInvalid spec.hostNetwork",
		"FieldValueForbidden spec.type",
		"FieldValueForbidden spec.hostNetwork",
	}
	if diff := cmp.Diff(want, testutil.ErrorSummary(Validate(pool, old))); diff != "" {
		t.Errorf("update errors (-want +got):\n%s", diff)
	}
	// On create the name rule applies too, and there are no immutability errors.
	wantCreate := append([]string{"FieldValueInvalid metadata.name"}, want[:6]...)
	if diff := cmp.Diff(wantCreate, testutil.ErrorSummary(Validate(pool, nil))); diff != "" {
		t.Errorf("create errors (-want +got):\n%s", diff)
	}
}

func TestNodePoolValidatorCreateUpdate(t *testing.T) {
	ctx := context.Background()
	v := Validator{}
	good := testutil.MakeNodePool("p").Type(openyurtv1beta1.Edge).Hub()
	bad := testutil.MakeNodePool("p").Type(openyurtv1beta1.Edge).
		Labels(map[string]string{"bad key": "v"}).
		Taints(corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}).
		Hub()

	if _, err := v.ValidateCreate(ctx, good); err != nil {
		t.Errorf("ValidateCreate(valid) = %v, want nil", err)
	}
	_, err := v.ValidateCreate(ctx, bad)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("ValidateCreate(invalid) = %v, want a 422 Invalid", err)
	}
	if diff := cmp.Diff([]string{"spec.labels", "spec.taints[1]"}, testutil.CauseFields(err)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}

	changed := good.DeepCopy()
	changed.Spec.Type = openyurtv1beta2.Cloud
	_, err = v.ValidateUpdate(ctx, good, changed)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("ValidateUpdate(type changed) = %v, want a 422 Invalid", err)
	}
	if diff := cmp.Diff([]string{"spec.type"}, testutil.CauseFields(err)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	if _, err := v.ValidateUpdate(ctx, good, good.DeepCopy()); err != nil {
		t.Errorf("ValidateUpdate(unchanged) = %v, want nil", err)
	}
}

func TestNodePoolValidatorDelete(t *testing.T) {
	pool := testutil.MakeNodePool("east").Type(openyurtv1beta1.Edge).Hub()
	listFails := interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("cache not synced")
	}}
	tests := map[string]struct {
		nodes       []client.Object
		hooks       interceptor.Funcs
		wantAllowed bool
		wantCheck   func(error) bool
		wantMessage string
	}{
		"no members": {
			nodes:       []client.Object{testutil.MakeNode("a").Pool("west").Obj(), testutil.MakeNode("b").DesiredPool("east").Obj()},
			wantAllowed: true,
		},
		"members forbid the delete": {
			nodes: []client.Object{testutil.MakeNode("a").Pool("east").Obj(), testutil.MakeNode("b").Pool("east").Obj(),
				testutil.MakeNode("c").Pool("west").Obj()},
			wantCheck:   apierrors.IsForbidden,
			wantMessage: "2 node(s) still belong to the pool; remove the label apps.openyurt.io/nodepool=east",
		},
		"an unreadable cache denies": {
			hooks:       listFails,
			wantCheck:   apierrors.IsInternalError,
			wantMessage: "cache not synced",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.nodes...).WithInterceptorFuncs(tc.hooks)
			b = index.WithIndexes(b, membership.Indexes())
			_, err := Validator{Reader: b.Build()}.ValidateDelete(context.Background(), pool)
			if tc.wantAllowed {
				if err != nil {
					t.Errorf("ValidateDelete = %v, want allowed", err)
				}
				return
			}
			if err == nil || !tc.wantCheck(err) {
				t.Fatalf("ValidateDelete = %v, want a denial of the right kind", err)
			}
			if !strings.Contains(err.Error(), tc.wantMessage) {
				t.Errorf("message %q does not contain %q", err.Error(), tc.wantMessage)
			}
		})
	}
}
