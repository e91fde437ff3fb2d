package stagedbindingpolicy

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-dev/drover/internal/webhook"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/sbpcel"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
)

// The validating webhook admits CREATE and UPDATE of stagedbindingpolicies only: the controller's writes to
// /status never reach it. Defaults (mode, onTimeout) come from the CRD schema, so there is no defaulting
// webhook.

var sbpGK = communityv1alpha1.GroupVersion.WithKind("StagedBindingPolicy").GroupKind()

// SetupStagedBindingPolicyWebhook registers the StagedBindingPolicy validating webhook. cel is the
// controller's expression cache, so an admitted object's expressions are compiled once.
func SetupStagedBindingPolicyWebhook(mgr manager.Manager, cel *sbpcel.Cache) error {
	if cel == nil {
		return errors.New("the StagedBindingPolicy webhook needs a CEL cache")
	}
	err := webhook.RegisterValidatingWebhook(mgr, func() *communityv1alpha1.StagedBindingPolicy {
		return &communityv1alpha1.StagedBindingPolicy{}
	}, Validator{CEL: cel})
	if err != nil {
		return fmt.Errorf("building the StagedBindingPolicy webhook: %w", err)
	}
	return nil
}

// Validator validates StagedBindingPolicies with stager.Validate, the function the
// controller applies too, and warns about what is allowed but likely a mistake.
type Validator struct {
	CEL *sbpcel.Cache
}

var _ admission.Validator[*communityv1alpha1.StagedBindingPolicy] = Validator{}

// Bounds are the sizes checked before any CEL is compiled (see webhook.Bounded and stager.Bounds).
func (Validator) Bounds(sbp *communityv1alpha1.StagedBindingPolicy) field.ErrorList {
	return stager.Bounds(sbp)
}

// ValidateCreate applies every rule.
func (v Validator) ValidateCreate(ctx context.Context, sbp *communityv1alpha1.StagedBindingPolicy) (
	admission.Warnings, error) {
	if errs := stager.ValidateBefore(ctx, sbp, v.CEL); len(errs) > 0 {
		return nil, apierrors.NewInvalid(sbpGK, sbp.Name, errs)
	}
	return stager.Warnings(nil, sbp, v.CEL), nil
}

// ValidateUpdate applies every rule when the spec changed; an update that leaves the spec as it was (an
// annotation, a label, drover's own removal of a consumed annotation) is admitted without validating the
// spec again, so an object admitted under older rules stays editable.
func (v Validator) ValidateUpdate(ctx context.Context, oldSBP, newSBP *communityv1alpha1.StagedBindingPolicy) (
	admission.Warnings, error) {
	if equality.Semantic.DeepEqual(oldSBP.Spec, newSBP.Spec) {
		return stager.Warnings(oldSBP, newSBP, nil), nil
	}
	if errs := stager.ValidateBefore(ctx, newSBP, v.CEL); len(errs) > 0 {
		return nil, apierrors.NewInvalid(sbpGK, newSBP.Name, errs)
	}
	return stager.Warnings(oldSBP, newSBP, v.CEL), nil
}

// ValidateDelete allows every delete.
func (Validator) ValidateDelete(context.Context, *communityv1alpha1.StagedBindingPolicy) (admission.Warnings, error) {
	return nil, nil
}
