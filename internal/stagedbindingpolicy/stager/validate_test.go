package stager

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/testutil"
)

// fieldErr is what a case checks of a validation error: its type and its path.
type fieldErr struct {
	Type  field.ErrorType
	Field string
}

func seedSBP(t *testing.T) *communityv1alpha1.StagedBindingPolicy {
	t.Helper()
	sbp, err := testutil.SeedSBP()
	if err != nil {
		t.Fatal(err)
	}
	return sbp
}

func stagesNamed(n int) []communityv1alpha1.Stage {
	out := make([]communityv1alpha1.Stage, n)
	for i := range out {
		out[i] = communityv1alpha1.Stage{Name: fmt.Sprintf("s%d", i), ClusterSelectors: []metav1.LabelSelector{{}}}
	}
	return out
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestValidate(t *testing.T) {
	invalid := field.ErrorTypeInvalid
	cases := map[string]struct {
		edit func(s *communityv1alpha1.StagedBindingPolicy)
		want []fieldErr
		// detail is a part of the first error's detail: the compiler's report with line:column.
		detail string
	}{
		"the seed manifest":             {edit: func(*communityv1alpha1.StagedBindingPolicy) {}},
		"a name of 63 characters":       {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Name = strings.Repeat("n", 63) }},
		"a name of 64 characters":       {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Name = strings.Repeat("n", 64) }, want: []fieldErr{{field.ErrorTypeTooLong, "metadata.name"}}},
		"no stage":                      {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages = nil }, want: []fieldErr{{field.ErrorTypeRequired, "spec.stages"}}},
		"32 stages":                     {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages = stagesNamed(32) }},
		"33 stages":                     {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages = stagesNamed(33) }, want: []fieldErr{{field.ErrorTypeTooMany, "spec.stages"}}},
		"an upper-case stage name":      {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[0].Name = "Dev" }, want: []fieldErr{{invalid, "spec.stages[0].name"}}},
		"a stage name with a dot":       {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[1].Name = "prod.eu" }, want: []fieldErr{{invalid, "spec.stages[1].name"}}},
		"an empty stage name":           {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[0].Name = "" }, want: []fieldErr{{invalid, "spec.stages[0].name"}}},
		"a stage name of 64 characters": {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[0].Name = strings.Repeat("d", 64) }, want: []fieldErr{{invalid, "spec.stages[0].name"}}},
		"a duplicate stage name":        {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[1].Name = "dev" }, want: []fieldErr{{field.ErrorTypeDuplicate, "spec.stages[1].name"}}},
		"no cluster selector":           {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[1].ClusterSelectors = nil }, want: []fieldErr{{field.ErrorTypeRequired, "spec.stages[1].clusterSelectors"}}},
		"an empty cluster selector selects every cluster": {edit: func(s *communityv1alpha1.StagedBindingPolicy) {
			s.Spec.Stages[1].ClusterSelectors = []metav1.LabelSelector{{}}
		}},
		"an invalid cluster selector": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[1].ClusterSelectors = append(s.Spec.Stages[1].ClusterSelectors, metav1.LabelSelector{
					MatchLabels:      map[string]string{"env": "not valid!"},
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}},
				})
			},
			want: []fieldErr{{invalid, "spec.stages[1].clusterSelectors[1].matchLabels"}, {invalid, "spec.stages[1].clusterSelectors[1].matchExpressions[0].operator"}},
		},
		"no downsync": {edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Downsync = nil }, want: []fieldErr{{field.ErrorTypeRequired, "spec.downsync"}}},
		"a clause that selects nothing": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				c := controlv1alpha1.DownsyncPolicyClause{}
				c.StatusCollectors, c.CreateOnly = []string{aggregator}, true
				s.Spec.Downsync = append(s.Spec.Downsync, c)
			},
			want: []fieldErr{{field.ErrorTypeRequired, "spec.downsync[1]"}},
		},
		"a clause with apiGroup \"\" (the core group) selects": {edit: func(s *communityv1alpha1.StagedBindingPolicy) {
			c := controlv1alpha1.DownsyncPolicyClause{}
			c.APIGroup = ptr.To("")
			s.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{c}
		}},
		"a clause with resources only selects": {edit: func(s *communityv1alpha1.StagedBindingPolicy) {
			c := controlv1alpha1.DownsyncPolicyClause{}
			c.Resources = []string{"configmaps"}
			s.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{c}
		}},
		"a clause with empty lists selects nothing": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				c := controlv1alpha1.DownsyncPolicyClause{}
				c.Resources, c.Namespaces, c.ObjectNames = []string{}, []string{}, []string{}
				s.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{c}
			},
			want: []fieldErr{{field.ErrorTypeRequired, "spec.downsync[0]"}},
		},
		"invalid object and namespace selectors": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Downsync[0].ObjectSelectors[0].MatchLabels = map[string]string{"bad key!": "x"}
				s.Spec.Downsync[0].NamespaceSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn}}}}
			},
			want: []fieldErr{{field.ErrorTypeRequired, "spec.downsync[0].namespaceSelectors[0].matchExpressions[0].values"},
				{invalid, "spec.downsync[0].objectSelectors[0].matchLabels"}},
		},
		"an invalid status collector name": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Downsync[0].StatusCollectors = append(s.Spec.Downsync[0].StatusCollectors, "Bad_Name")
			},
			want: []fieldErr{{invalid, "spec.downsync[0].statusCollectors[1]"}},
		},
		"combinedStatus in a filter": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[0].Filter = "combinedStatus.results.size() > 0"
			},
			want:   []fieldErr{{invalid, "spec.stages[0].filter"}},
			detail: "<input>:1:1: undeclared reference to 'combinedStatus'",
		},
		"an unknown field in a condition": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[1].Condition = "combinedStatus.reslts.size() > 0"
			},
			want:   []fieldErr{{invalid, "spec.stages[1].condition"}},
			detail: "<input>:1:15: undefined field 'reslts'",
		},
		"a number compared with a Number column's string": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[0].Condition = strings.Replace(s.Spec.Stages[0].Condition, "col.float == '1'", "col.float == 1", 1)
			},
			want:   []fieldErr{{invalid, "spec.stages[0].condition"}},
			detail: "no matching overload",
		},
		"a syntax error in a failure condition": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[1].FailureCondition = "destinations.size( > 0"
			},
			want:   []fieldErr{{invalid, "spec.stages[1].failureCondition"}},
			detail: "<input>:1:",
		},
		"a failure condition that is not a bool": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[1].FailureCondition = "size(destinations)"
			},
			want:   []fieldErr{{invalid, "spec.stages[1].failureCondition"}},
			detail: "must evaluate to bool",
		},
		"the obj alias in a condition": {edit: func(s *communityv1alpha1.StagedBindingPolicy) {
			s.Spec.Stages[1].Condition = "obj.results.exists(r, r.name == 'deployments-aggregator')"
		}},
		"an expression over the length limit": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[1].Condition = "true" + strings.Repeat(" ", communityv1alpha1.MaxExpressionLength)
			},
			want: []fieldErr{{field.ErrorTypeTooLong, "spec.stages[1].condition"}},
		},
		"a zero minimum duration": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[0].MinDuration = dur(0) },
			want: []fieldErr{{invalid, "spec.stages[0].minDuration"}},
		},
		"a negative progress deadline": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[0].ProgressDeadline = dur(-time.Minute) },
			want: []fieldErr{{invalid, "spec.stages[0].progressDeadline"}},
		},
		"a progress deadline equal to the minimum duration": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[0].MinDuration, s.Spec.Stages[0].ProgressDeadline = dur(time.Hour), dur(time.Hour)
			},
			want: []fieldErr{{invalid, "spec.stages[0].progressDeadline"}},
		},
		"a progress deadline shorter than the minimum duration": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Spec.Stages[1].MinDuration, s.Spec.Stages[1].ProgressDeadline = dur(time.Hour), dur(time.Minute)
			},
			want: []fieldErr{{invalid, "spec.stages[1].progressDeadline"}},
		},
		"a progress deadline longer than the minimum duration": {edit: func(s *communityv1alpha1.StagedBindingPolicy) {
			s.Spec.Stages[1].MinDuration, s.Spec.Stages[1].ProgressDeadline = dur(time.Minute), dur(time.Hour)
			s.Spec.Stages[1].OnTimeout = communityv1alpha1.TimeoutHalt
			s.Spec.Mode = communityv1alpha1.ModeCumulative
		}},
		"an unknown mode": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Mode = "Rolling" },
			want: []fieldErr{{field.ErrorTypeNotSupported, "spec.mode"}},
		},
		"an unknown timeout action": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) { s.Spec.Stages[1].OnTimeout = "Rollback" },
			want: []fieldErr{{field.ErrorTypeNotSupported, "spec.stages[1].onTimeout"}},
		},
		"every error is reported at once": {
			edit: func(s *communityv1alpha1.StagedBindingPolicy) {
				s.Name = strings.Repeat("n", 70)
				s.Spec.Downsync = nil
				s.Spec.Stages[1].Name = "dev"
				s.Spec.Stages[0].Filter = "stage.index"
				s.Spec.Mode = "Other"
			},
			want: []fieldErr{{field.ErrorTypeTooLong, "metadata.name"}, {field.ErrorTypeRequired, "spec.downsync"},
				{invalid, "spec.stages[0].filter"}, {field.ErrorTypeDuplicate, "spec.stages[1].name"}, {field.ErrorTypeNotSupported, "spec.mode"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sbp := seedSBP(t)
			tc.edit(sbp)
			errs := Validate(sbp, testCEL)
			var got []fieldErr
			for _, e := range errs {
				got = append(got, fieldErr{e.Type, e.Field})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, errs)
			}
			if tc.detail != "" && (len(errs) == 0 || !strings.Contains(errs[0].Detail, tc.detail)) {
				t.Errorf("errors %v, want the first to say %q", errs, tc.detail)
			}
		})
	}
}

// Once the admission request's context is done, no further expression is compiled: the stages left are
// reported as not checked, at the first of them.
func TestValidateBeforeStopsAtTheDeadline(t *testing.T) {
	compiles := 0
	cel := sbpcel.NewCache(sbpcel.Options{OnCompile: func(bool) { compiles++ }})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := ValidateBefore(ctx, seedSBP(t), cel)
	if compiles != 0 {
		t.Errorf("%d expressions compiled after the deadline, want none", compiles)
	}
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal || errs[0].Field != "spec.stages[0]" ||
		!strings.Contains(errs[0].Detail, "not checked") {
		t.Errorf("errors %v, want one internal error at spec.stages[0] saying the stages were not checked", errs)
	}
	if errs := ValidateBefore(context.Background(), seedSBP(t), cel); len(errs) > 0 || compiles == 0 {
		t.Errorf("with time left: errors %v after %d compiles, want none after some", errs, compiles)
	}
}
