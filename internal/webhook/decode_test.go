package webhook

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/scheme"
)

// TestDecodeObject feeds objects that the typed decoder refuses and checks that every bad value is reported at
// its field path, with a message free of Go type names.
func TestDecodeObject(t *testing.T) {
	type cause struct{ Field, Message string }
	tests := map[string]struct {
		obj  runtime.Object
		raw  string
		want []cause
	}{
		"a valid object": {
			obj: &openyurtv1beta1.NodePool{},
			raw: `{"apiVersion":"apps.openyurt.io/v1beta1","kind":"NodePool","metadata":{"name":"p"},"spec":{"type":"Edge"}}`,
		},
		"a junk status is ignored": {
			obj: &openyurtv1beta1.NodePool{},
			raw: `{"apiVersion":"apps.openyurt.io/v1beta1","kind":"NodePool","metadata":{"name":"p"},"spec":{},"status":"x"}`,
		},
		"a bad time, a number for a string and an object for a list, together": {
			obj: &openyurtv1beta1.NodePool{},
			raw: `{"apiVersion":"apps.openyurt.io/v1beta1","kind":"NodePool","metadata":{"name":"p"},
				"spec":{"type":7,"taints":[{"key":"k","effect":"NoSchedule"},{"key":"k","effect":"NoSchedule","timeAdded":"yesterday"}],
				"labels":{"a":true}}}`,
			want: []cause{
				{"spec.type", "must be a string"},
				{"spec.labels[a]", "must be a string"},
				{"spec.taints[1].timeAdded", "must be an RFC 3339 date and time"},
			},
		},
		"integers: fractions, overflow and strings": {
			obj: &tkestackv1.TApp{},
			raw: `{"apiVersion":"apps.tkestack.io/v1","kind":"TApp","metadata":{"name":"t"},
				"spec":{"replicas":1.5,"minReadySeconds":3000000000,"forceDeletePod":"yes",
				"updateStrategy":{"maxUnavailable":{"a":1}}}}`,
			want: []cause{
				{"spec.replicas", "must be an integer"},
				{"spec.updateStrategy.maxUnavailable", "must be an integer or a string"},
				{"spec.forceDeletePod", "must be a boolean"},
				{"spec.minReadySeconds", "must be an integer from -2147483648 to 2147483647"},
			},
		},
		"quantities in a template without a schema": {
			obj: &openyurtv1alpha1.YurtAppDaemon{},
			raw: `{"apiVersion":"apps.openyurt.io/v1alpha1","kind":"YurtAppDaemon","metadata":{"name":"y"},
				"spec":{"workloadTemplate":{"deploymentTemplate":{"spec":{"template":{"spec":{"containers":[
					{"name":"c","resources":{"requests":{"cpu":"abc","memory":"12Qi"},"limits":{"cpu":"1"}}}]}}}}}}}`,
			want: []cause{
				{"spec.workloadTemplate.deploymentTemplate.spec.template.spec.containers[0].resources.requests[cpu]", "must be a quantity"},
				{"spec.workloadTemplate.deploymentTemplate.spec.template.spec.containers[0].resources.requests[memory]", "must be a quantity"},
			},
		},
	}
	decoder := admission.NewDecoder(scheme.New())
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := DecodeObject(decoder, runtime.RawExtension{Raw: []byte(tc.raw)}, tc.obj)
			var got []cause
			for _, e := range errs {
				got = append(got, cause{e.Field, e.Detail})
				if strings.Contains(e.Error(), "Go ") || strings.Contains(e.Error(), "int32") || strings.Contains(e.Error(), "v1.") {
					t.Errorf("%s: the message names Go types: %s", e.Field, e.Error())
				}
			}
			prefixes := cmp.Comparer(func(a, b cause) bool {
				return a.Field == b.Field && (strings.HasPrefix(a.Message, b.Message) || strings.HasPrefix(b.Message, a.Message))
			})
			if diff := cmp.Diff(tc.want, got, prefixes); diff != "" {
				t.Errorf("decode errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeObjectClearsStatus checks that a decodable status is not handed to the defaulter or validator either.
func TestDecodeObjectClearsStatus(t *testing.T) {
	raw := `{"apiVersion":"apps.tkestack.io/v1","kind":"TApp","metadata":{"name":"t"},"spec":{},"status":{"replicas":3}}`
	app := &tkestackv1.TApp{}
	if errs := DecodeObject(admission.NewDecoder(scheme.New()), runtime.RawExtension{Raw: []byte(raw)}, app); len(errs) > 0 {
		t.Fatalf("decode errors: %v", errs)
	}
	if app.Status.Replicas != 0 {
		t.Errorf("status.replicas = %d, want the status cleared", app.Status.Replicas)
	}
}

// TestDecodeObjectBoundsErrors checks that a huge undecodable object reports a bounded number of errors.
func TestDecodeObjectBoundsErrors(t *testing.T) {
	labels := make([]string, 0, 2*maxDecodeErrors)
	for i := range 2 * maxDecodeErrors {
		labels = append(labels, `"k`+strings.Repeat("x", i)+`":1`)
	}
	raw := `{"apiVersion":"apps.openyurt.io/v1beta1","kind":"NodePool","metadata":{"name":"p"},"spec":{"labels":{` +
		strings.Join(labels, ",") + `}}}`
	errs := DecodeObject(admission.NewDecoder(scheme.New()), runtime.RawExtension{Raw: []byte(raw)}, &openyurtv1beta1.NodePool{})
	if len(errs) != maxDecodeErrors+1 || errs[maxDecodeErrors].Type != field.ErrorTypeTooMany {
		t.Errorf("got %d errors (last %v), want %d and a TooMany", len(errs), errs[len(errs)-1], maxDecodeErrors+1)
	}
}
