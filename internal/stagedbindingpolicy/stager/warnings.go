package stager

import (
	"fmt"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
)

// Warnings lists what an admitted StagedBindingPolicy allows but is likely a mistake: the active stage
// renamed or removed (the stage at its position takes over), an approve or retry annotation that names no
// stage, an approval of a stage that needs none, an expression whose estimated cost passes the runtime
// limit, and a stage with no condition, soak or approval (it is promoted as soon as its objects have
// status). old is nil on create; cel nil skips the cost estimates.
func Warnings(old, sbp *communityv1alpha1.StagedBindingPolicy, cel *sbpcel.Cache) []string {
	var out []string
	if old != nil && old.Status.ActiveStage != "" && stageIndex(&sbp.Spec, old.Status.ActiveStage) < 0 {
		out = append(out, fmt.Sprintf("the active stage %s is no longer in spec.stages: the stage at its position becomes active, and %s's BindingPolicy is removed once the new one is current",
			old.Status.ActiveStage, old.Status.ActiveStage))
	}
	for _, key := range []string{communityv1alpha1.AnnotationApproveStage, communityv1alpha1.AnnotationRetryStage} {
		if v, ok := sbp.Annotations[key]; ok && stageIndex(&sbp.Spec, v) < 0 {
			out = append(out, fmt.Sprintf("annotation %s names %q, which is not a stage of spec.stages", key, v))
		}
	}
	if v, ok := sbp.Annotations[communityv1alpha1.AnnotationApproveStage]; ok {
		if i := stageIndex(&sbp.Spec, v); i >= 0 && !sbp.Spec.Stages[i].RequireApproval {
			out = append(out, fmt.Sprintf("annotation %s approves stage %s, which does not require approval", communityv1alpha1.AnnotationApproveStage, v))
		}
	}
	for i, s := range sbp.Spec.Stages {
		if s.Condition == "" && s.MinDuration == nil && !s.RequireApproval {
			out = append(out, fmt.Sprintf("spec.stages[%d] (%s) has no condition, minDuration or requireApproval: it is promoted as soon as its objects have status", i, s.Name))
		}
		if cel != nil {
			out = append(out, costWarnings(cel, i, s)...)
		}
	}
	return out
}

// costWarnings warns about expressions whose estimated worst-case cost passes the runtime limit: they are
// admitted (the estimate assumes large CombinedStatuses), but may fail at run time.
func costWarnings(cel *sbpcel.Cache, i int, s communityv1alpha1.Stage) []string {
	var out []string
	for _, x := range []struct {
		kind sbpcel.Kind
		expr string
	}{{sbpcel.Filter, s.Filter}, {sbpcel.Condition, s.Condition}, {sbpcel.FailureCondition, s.FailureCondition}} {
		kind, expr := x.kind, x.expr
		if expr == "" {
			continue
		}
		prog, err := cel.Compile(kind, expr)
		if err != nil {
			continue
		}
		if cost, err := prog.EstimatedCost(); err == nil && cost > sbpcel.CostLimit {
			out = append(out, fmt.Sprintf("spec.stages[%d].%s: estimated worst-case cost %d passes the runtime limit %d; evaluation may fail on large CombinedStatuses",
				i, kind, cost, sbpcel.CostLimit))
		}
	}
	return out
}
