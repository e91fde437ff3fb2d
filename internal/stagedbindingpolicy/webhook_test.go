package stagedbindingpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/webhook"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
	"github.com/drover-dev/drover/internal/testutil"
)

var sbpTestCEL = sbpcel.NewCache(sbpcel.Options{})

func seedStagedBindingPolicy(t *testing.T) *communityv1alpha1.StagedBindingPolicy {
	t.Helper()
	sbp, err := testutil.SeedSBP()
	if err != nil {
		t.Fatal(err)
	}
	return sbp
}

// invalidFields checks that err is the API server's 422 Invalid for the StagedBindingPolicy name and returns
// the field paths of its causes.
func invalidFields(t *testing.T, err error, name string) []string {
	t.Helper()
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		t.Fatalf("error = %v, want a 422 Invalid", err)
	}
	s := status.Status()
	if s.Code != http.StatusUnprocessableEntity || s.Details == nil || s.Details.Name != name ||
		s.Details.Kind != "StagedBindingPolicy" || s.Details.Group != "community.kubestellar.io" {
		t.Fatalf("status = %+v, want 422 about StagedBindingPolicy %s", s, name)
	}
	return testutil.CauseFields(err)
}

func TestStagedBindingPolicyValidatorCreate(t *testing.T) {
	ctx := context.Background()
	v := Validator{CEL: sbpTestCEL}
	cases := map[string]struct {
		edit       func(*communityv1alpha1.StagedBindingPolicy)
		wantFields []string // nil: admitted
		wantWarn   []string // parts of the warnings of an admitted object, in order
	}{
		"the seed manifest is admitted, with its warnings": {
			edit:     func(*communityv1alpha1.StagedBindingPolicy) {},
			wantWarn: []string{"spec.stages[1] (prod) has no condition"},
		},
		"an uncompilable condition": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[1].Condition = "combinedStatus.reslts == []"
			},
			wantFields: []string{"spec.stages[1].condition"},
		},
		"combinedStatus in a filter": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[0].Filter = "combinedStatus.results.size() > 0"
			},
			wantFields: []string{"spec.stages[0].filter"},
		},
		"several errors at once": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Name = strings.Repeat("x", 64)
				s.Spec.Downsync = nil
				s.Spec.Stages[1].Name = "dev"
				s.Spec.Stages[1].ClusterSelectors = nil
			},
			wantFields: []string{"metadata.name", "spec.downsync", "spec.stages[1].name", "spec.stages[1].clusterSelectors"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sbp := seedStagedBindingPolicy(t)
			tc.edit(sbp)
			warnings, err := v.ValidateCreate(ctx, sbp)
			if tc.wantFields != nil {
				if diff := cmp.Diff(tc.wantFields, invalidFields(t, err, sbp.Name)); diff != "" {
					t.Errorf("causes (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("ValidateCreate: %v", err)
			}
			checkWarnings(t, warnings, tc.wantWarn)
		})
	}
}

func checkWarnings(t *testing.T, got admission.Warnings, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("warnings = %q, want %d: %q", got, len(want), want)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("warning %d = %q, want it to say %q", i, got[i], want[i])
		}
	}
}

func TestStagedBindingPolicyValidatorUpdate(t *testing.T) {
	ctx := context.Background()
	v := Validator{CEL: sbpTestCEL}
	running := func(t *testing.T) *communityv1alpha1.StagedBindingPolicy {
		sbp := seedStagedBindingPolicy(t)
		sbp.Status.ActiveStage = "dev"
		return sbp
	}
	// admittedUnderOlderRules is a stored object that today's rules refuse.
	admittedUnderOlderRules := func(t *testing.T) *communityv1alpha1.StagedBindingPolicy {
		sbp := running(t)
		sbp.Spec.Stages[1].Condition = "combinedStatus.reslts == []"
		return sbp
	}
	cases := map[string]struct {
		old, obj   func(t *testing.T) *communityv1alpha1.StagedBindingPolicy
		edit       func(*communityv1alpha1.StagedBindingPolicy)
		wantFields []string
		wantWarn   []string
	}{
		"a valid spec edit": {
			old: running, obj: running,
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[1].MinDuration = &metav1.Duration{Duration: time.Minute}
			},
			wantWarn: nil, // prod now soaks; the seed's condition is within the estimate's budget
		},
		"a spec edit breaking a rule": {
			old: running, obj: running,
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[1].FailureCondition = "size(destinations)"
			},
			wantFields: []string{"spec.stages[1].failureCondition"},
		},
		"renaming the active stage is admitted with a warning": {
			old: running, obj: running,
			edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[0].Name = "development" },
			wantWarn: []string{"the active stage dev is no longer in spec.stages",
				"spec.stages[1] (prod) has no condition"},
		},
		"an annotation edit of an object admitted under older rules is admitted": {
			old: admittedUnderOlderRules, obj: admittedUnderOlderRules,
			edit:     func(s *communityv1alpha1.StagedBindingPolicy) { s.Annotations = map[string]string{"team": "web"} },
			wantWarn: []string{},
		},
		"drover's removal of a consumed annotation from an object admitted under older rules": {
			old: func(t *testing.T) *communityv1alpha1.StagedBindingPolicy {
				sbp := admittedUnderOlderRules(t)
				sbp.Annotations = map[string]string{communityv1alpha1.AnnotationRetryStage: "dev"}
				return sbp
			},
			obj:      admittedUnderOlderRules,
			edit:     func(*communityv1alpha1.StagedBindingPolicy) {},
			wantWarn: []string{},
		},
		"a spec edit of an object admitted under older rules is validated": {
			old: admittedUnderOlderRules, obj: admittedUnderOlderRules,
			edit:       func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Paused = true },
			wantFields: []string{"spec.stages[1].condition"},
		},
		"an annotation naming no stage is admitted with a warning": {
			old: running, obj: running,
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Annotations = map[string]string{communityv1alpha1.AnnotationApproveStage: "qa"}
			},
			wantWarn: []string{`annotation drover.dev/approve-stage names "qa"`, "spec.stages[1] (prod) has no condition"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old, obj := tc.old(t), tc.obj(t)
			tc.edit(obj)
			warnings, err := v.ValidateUpdate(ctx, old, obj)
			if tc.wantFields != nil {
				if diff := cmp.Diff(tc.wantFields, invalidFields(t, err, obj.Name)); diff != "" {
					t.Errorf("causes (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("ValidateUpdate: %v", err)
			}
			checkWarnings(t, warnings, tc.wantWarn)
		})
	}
}

func TestStagedBindingPolicyValidatorDelete(t *testing.T) {
	warnings, err := Validator{CEL: sbpTestCEL}.ValidateDelete(context.Background(), seedStagedBindingPolicy(t))
	if err != nil || len(warnings) != 0 {
		t.Errorf("ValidateDelete = %v, %v; want allowed", warnings, err)
	}
}

// The seed manifest, as the API server sends it in an AdmissionReview, passes the validating handler at the
// marker's path; a broken one is denied with a 422 naming the field.
func TestStagedBindingPolicyValidatingHandler(t *testing.T) {
	w, err := webhook.NewKindWebhooks(scheme.New(), func() *communityv1alpha1.StagedBindingPolicy { return &communityv1alpha1.StagedBindingPolicy{} },
		nil, Validator{CEL: sbpTestCEL})
	if err != nil {
		t.Fatal(err)
	}
	if w.ValidatePath != "/validate-community-kubestellar-io-v1alpha1-stagedbindingpolicy" {
		t.Fatalf("validating path = %q, not the marker's", w.ValidatePath)
	}
	seedJSON, err := yaml.YAMLToJSON([]byte(testutil.SeedSBPYAML))
	if err != nil {
		t.Fatal(err)
	}
	request := func(raw []byte) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "1", Operation: admissionv1.Create, Name: "nginx-staged-bindingpolicy",
			Kind:   metav1.GroupVersionKind{Group: "community.kubestellar.io", Version: "v1alpha1", Kind: "StagedBindingPolicy"},
			Object: runtime.RawExtension{Raw: raw},
		}}
	}
	resp := w.Validating.Handle(context.Background(), request(seedJSON))
	// One warning: prod has no gate of its own. The seed's condition is within the cost estimate's budget.
	if !resp.Allowed || len(resp.Warnings) != 1 {
		t.Errorf("the seed manifest: allowed %v, warnings %q; want allowed with one warning", resp.Allowed, resp.Warnings)
	}
	broken := strings.Replace(string(seedJSON), `downsyncClause.resource == \"deployments\"`, `downsyncClause.kind == \"Deployment\"`, 1)
	if broken == string(seedJSON) {
		t.Fatal("the seed's filter was not found in its JSON")
	}
	resp = w.Validating.Handle(context.Background(), request([]byte(broken)))
	if got := testutil.DeniedFields(t, resp); !cmp.Equal(got, []string{"spec.stages[0].filter"}) {
		t.Errorf("denied fields = %v, want the filter", got)
	}
}

// The webhook refuses more stages, or a longer expression, than the CRD allows before compiling any CEL.
func TestStagedBindingPolicyBoundsComeFirst(t *testing.T) {
	long := strings.Repeat("1 == 1 && ", communityv1alpha1.MaxExpressionLength/10) + "true"
	sbp := seedStagedBindingPolicy(t)
	sbp.Spec.Stages[0].Condition = long
	sbp.Spec.Stages[1].Filter = "not CEL at all ((("
	if got := fieldsOf(Validator{}.Bounds(sbp)); !cmp.Equal(got, []string{"spec.stages[0].condition"}) {
		t.Errorf("bounds of a long condition: %v, want only its field (the bad filter is left to compilation)", got)
	}
	for len(sbp.Spec.Stages) <= communityv1alpha1.MaxStages {
		st := sbp.Spec.Stages[1]
		st.Name = fmt.Sprintf("extra-%d", len(sbp.Spec.Stages))
		sbp.Spec.Stages = append(sbp.Spec.Stages, st)
	}
	if got := fieldsOf(Validator{}.Bounds(sbp)); !cmp.Equal(got, []string{"spec.stages"}) {
		t.Errorf("bounds of %d stages: %v, want spec.stages", len(sbp.Spec.Stages), got)
	}
	if errs := (Validator{}).Bounds(seedStagedBindingPolicy(t)); len(errs) > 0 {
		t.Errorf("the seed is within bounds, got %v", errs)
	}

	// Four expressions within their own bound but over the total of all of them.
	sbp = seedStagedBindingPolicy(t)
	part := strings.Repeat("1 == 1 && ", communityv1alpha1.MaxTotalExpressionLength/40) + "true"
	sbp.Spec.Stages[0].Condition, sbp.Spec.Stages[0].FailureCondition = part, part
	sbp.Spec.Stages[1].Condition, sbp.Spec.Stages[1].FailureCondition = part, part
	errs := Validator{}.Bounds(sbp)
	if got := fieldsOf(errs); !cmp.Equal(got, []string{"spec.stages"}) {
		t.Fatalf("bounds of expressions over the total: %v, want spec.stages", errs)
	}
	if !strings.Contains(errs[0].Detail, "more than 32768") {
		t.Errorf("detail %q does not name the bound", errs[0].Detail)
	}
}

// The largest StagedBindingPolicy the bounds admit, every expression distinct (no cache hit) and at the
// compile budget in the shape that is costliest to type-check, is validated in bounded time: 0.7 s on one
// core of the 2-core machine when it is quiet, 3.8 s while every test package runs at once (the figure is
// logged). The bound here, 15 s, only catches losing the budgets: without them one 10 KB expression of that
// shape takes about 1.4 s to check on one core, and the 96 a 960 KB object could hold over two minutes.
func TestStagedBindingPolicyLargestCompilesInTime(t *testing.T) {
	sbp := seedStagedBindingPolicy(t)
	stage := sbp.Spec.Stages[1]
	sbp.Spec.Stages = nil
	total, i := 0, 0
	for {
		// 83 terms of 5 syntax nodes joined by 82 ||: 497 nodes, just within sbpcel.MaxExpressionNodes.
		terms := make([]string, 83)
		for j := range terms {
			terms[j] = fmt.Sprintf("size([%d]) > 0", i*100+j)
		}
		expr := strings.Join(terms, "||")
		if total+len(expr) > communityv1alpha1.MaxTotalExpressionLength {
			break
		}
		total += len(expr)
		if i%3 == 0 {
			stage.Name = fmt.Sprintf("stage-%d", i)
			sbp.Spec.Stages = append(sbp.Spec.Stages, stage)
		}
		st := &sbp.Spec.Stages[len(sbp.Spec.Stages)-1]
		switch i % 3 {
		case 0:
			st.Filter, st.Condition, st.FailureCondition = expr, "", ""
		case 1:
			st.Condition = expr
		default:
			st.FailureCondition = expr
		}
		i++
	}
	start := time.Now()
	errs := stager.Validate(sbp, sbpcel.NewCache(sbpcel.Options{}))
	took := time.Since(start)
	t.Logf("%d expressions, %d characters, validated in %v", i, total, took)
	if len(errs) > 0 {
		t.Fatalf("the largest object is refused, %d errors; the first: %.300s", len(errs), errs[0].Error())
	}
	if took > 15*time.Second {
		t.Errorf("validating the largest object took %v, more than 15 s", took)
	}
}

func fieldsOf(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

// One answer lists every error: an unparsable duration in one stage does not hide a CEL error in another;
// the validation of the rest says nothing about the removed duration itself.
func TestStagedBindingPolicyEveryErrorInOneAnswer(t *testing.T) {
	w, err := webhook.NewKindWebhooks(scheme.New(), func() *communityv1alpha1.StagedBindingPolicy { return &communityv1alpha1.StagedBindingPolicy{} },
		nil, Validator{CEL: sbpTestCEL})
	if err != nil {
		t.Fatal(err)
	}
	seedJSON, err := yaml.YAMLToJSON([]byte(testutil.SeedSBPYAML))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(seedJSON, &doc); err != nil {
		t.Fatal(err)
	}
	stages := doc["spec"].(map[string]any)["stages"].([]any)
	stages[0].(map[string]any)["minDuration"] = "ten minutes"
	stages[1].(map[string]any)["condition"] = "undeclaredVariable == 1"
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	resp := w.Validating.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Name: "nginx-staged-bindingpolicy",
		Kind:   metav1.GroupVersionKind{Group: "community.kubestellar.io", Version: "v1alpha1", Kind: "StagedBindingPolicy"},
		Object: runtime.RawExtension{Raw: raw},
	}})
	want := []string{"spec.stages[0].minDuration", "spec.stages[1].condition"}
	if got := testutil.DeniedFields(t, resp); !cmp.Equal(got, want) {
		t.Errorf("denied fields = %v, want %v (message %q)", got, want, resp.Result.Message)
	}
	if !strings.Contains(resp.Result.Message, "undeclared reference to 'undeclaredVariable'") ||
		!strings.Contains(resp.Result.Message, "ten minutes") {
		t.Errorf("the message does not carry both errors: %q", resp.Result.Message)
	}
}
