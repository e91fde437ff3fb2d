package stager

import (
	"slices"
	"strings"
	"testing"
	"time"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/testutil"
)

// quiet is a policy that deserves no warning: every stage has a cheap condition, a soak or an approval.
func quiet() *testutil.SBPWrapper {
	return testutil.MakeSBP(sbpName).UID(sbpUID).Downsync(testutil.ObjectsLabelled("app", "nginx", aggregator)).
		Stage("dev", testutil.MatchLabels("env", "dev")).Condition("size(destinations) > 0").
		Stage("qa", testutil.MatchLabels("env", "qa")).MinDuration(time.Minute).
		Stage("prod", testutil.MatchLabels("env", "prod")).RequireApproval()
}

// withoutStage removes the stage name from the policy.
func withoutStage(sbp *communityv1alpha1.StagedBindingPolicy, name string) *communityv1alpha1.StagedBindingPolicy {
	sbp.Spec.Stages = slices.DeleteFunc(sbp.Spec.Stages, func(s communityv1alpha1.Stage) bool { return s.Name == name })
	return sbp
}

func TestWarnings(t *testing.T) {
	activeAt := func(stage string) *communityv1alpha1.StagedBindingPolicy {
		return quiet().Status(communityv1alpha1.StagedBindingPolicyStatus{ActiveStage: stage}).Obj()
	}
	cases := map[string]struct {
		old *communityv1alpha1.StagedBindingPolicy
		sbp *communityv1alpha1.StagedBindingPolicy
		cel *sbpcel.Cache
		// want are parts of the warnings, in order, one per warning.
		want []string
	}{
		"nothing to warn about":                   {sbp: quiet().Obj(), cel: testCEL},
		"an update keeping every stage":           {old: activeAt("qa"), sbp: quiet().Obj(), cel: testCEL},
		"an update of a new policy":               {old: quiet().Obj(), sbp: quiet().Obj(), cel: testCEL},
		"an approval of the stage that needs one": {sbp: quiet().Annotation(approve, "prod").Obj(), cel: testCEL},
		"a retry naming a stage":                  {sbp: quiet().Annotation(retry, "qa").Obj(), cel: testCEL},
		"the active stage renamed": {
			old:  activeAt("qa"),
			sbp:  quiet().EditStage("qa", func(s *communityv1alpha1.Stage) { s.Name = "staging" }).Obj(),
			want: []string{"the active stage qa is no longer in spec.stages"},
		},
		"the active stage removed": {
			old:  activeAt("dev"),
			sbp:  withoutStage(quiet().Obj(), "dev"),
			want: []string{"the active stage dev is no longer in spec.stages"},
		},
		"an approve annotation naming no stage": {
			sbp:  quiet().Annotation(approve, "staging").Obj(),
			want: []string{`annotation drover.dev/approve-stage names "staging"`},
		},
		"a retry annotation naming no stage": {
			sbp:  quiet().Annotation(retry, "staging").Obj(),
			want: []string{`annotation drover.dev/retry-stage names "staging"`},
		},
		"an approval of a stage that needs none": {
			sbp:  quiet().Annotation(approve, "dev").Obj(),
			want: []string{"approves stage dev, which does not require approval"},
		},
		"a stage that promotes as soon as its objects have status": {
			sbp:  quiet().Stage("canary", testutil.MatchLabels("env", "canary")).Obj(),
			want: []string{"spec.stages[3] (canary) has no condition, minDuration or requireApproval"},
		},
		"an expression whose estimated cost passes the runtime limit": {
			sbp:  quiet().EditStage("qa", func(s *communityv1alpha1.Stage) { s.Condition = costlyCondition }).Obj(),
			cel:  testCEL,
			want: []string{"spec.stages[1].condition: estimated worst-case cost"},
		},
		"no cost estimate without a cache": {
			sbp: quiet().EditStage("qa", func(s *communityv1alpha1.Stage) { s.Condition = seedCondition }).Obj(),
		},
		"the seed manifest: its prod stage is ungated (its condition is within the estimate's budget)": {
			sbp:  seedSBP(t),
			cel:  testCEL,
			want: []string{"spec.stages[1] (prod) has no condition"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Warnings(tc.old, tc.sbp, tc.cel)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings = %q, want %d: %q", got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("warning %d = %q, want it to say %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// costlyCondition compares every pair of rows of every collector: quadratic in the rows, far past the
// runtime limit in the worst case the estimate assumes.
const costlyCondition = `combinedStatus.results.all(r, r.rows.all(a, r.rows.all(b, size(a.columns) == size(b.columns))))`
