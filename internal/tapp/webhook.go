package tapp

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover/internal/webhook"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// The webhooks admit CREATE and UPDATE of tapps only: writes to /status and /scale do not reach them.

// SetupTAppWebhook registers the TApp defaulting and validating webhooks (docs/tapp.md, Admission).
func SetupTAppWebhook(mgr manager.Manager) error {
	// The manager's client reads from the cache but writes to the API server: the dry runs reach it.
	err := webhook.RegisterKindWebhooks(mgr, func() *tkestackv1.TApp { return &tkestackv1.TApp{} }, Defaulter{},
		Validator{DryRun: mgr.GetClient()})
	if err != nil {
		return fmt.Errorf("building the TApp webhooks: %w", err)
	}
	return nil
}

var tappGK = tkestackv1.GroupVersion.WithKind("TApp").GroupKind()

// Defaulter defaults TApps on CREATE and UPDATE.
type Defaulter struct{}

var _ admission.Defaulter[*tkestackv1.TApp] = Defaulter{}

// Default applies DefaultTApp. On UPDATE the stored object is read from the admission request in ctx, for the
// selector.
func (Defaulter) Default(ctx context.Context, app *tkestackv1.TApp) error {
	DefaultTApp(app, oldTApp(ctx))
	return nil
}

// oldTApp returns the stored object of an UPDATE request in ctx, or nil.
func oldTApp(ctx context.Context) *tkestackv1.TApp {
	req, err := admission.RequestFromContext(ctx)
	if err != nil || req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return nil
	}
	old := &tkestackv1.TApp{}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return nil
	}
	return old
}

// DefaultTApp applies the mutating webhook's defaults to app; old is the stored object on UPDATE, nil on CREATE:
//   - the capitalised compat field DefaultTemplateName is moved over defaultTemplateName;
//   - defaultTemplateName defaults to "default";
//   - updateStrategy.maxUnavailable to 1 and updateStrategy.forceUpdate.maxUnavailable to "100%";
//   - a missing selector is the old object's, else matchLabels = the template's labels without drover's own
//     pod labels (none when no label is left: validation then rejects the object);
//   - a TApp without labels gets the same labels, as with TKEStack;
//   - a present PVC retention policy gets its missing members (whenDeleted: Delete, whenScaled: Retain).
//
// Templates and updateStrategy.template are never touched.
func DefaultTApp(app, old *tkestackv1.TApp) {
	spec := &app.Spec
	if spec.DefaultTemplateNameCompat != "" {
		spec.DefaultTemplateName = spec.DefaultTemplateNameCompat
		spec.DefaultTemplateNameCompat = ""
	}
	if spec.DefaultTemplateName == "" {
		spec.DefaultTemplateName = tkestackv1.DefaultTemplateName
	}
	if spec.UpdateStrategy.MaxUnavailable == nil {
		v := tkestackv1.DefaultMaxUnavailable
		spec.UpdateStrategy.MaxUnavailable = &v
	}
	if spec.UpdateStrategy.ForceUpdate.MaxUnavailable == nil {
		v := tkestackv1.DefaultForceUpdateMaxUnavailable
		spec.UpdateStrategy.ForceUpdate.MaxUnavailable = &v
	}
	if spec.Selector == nil {
		if old != nil && old.Spec.Selector != nil {
			spec.Selector = old.Spec.Selector.DeepCopy()
		} else {
			spec.Selector = spec.DefaultSelector()
		}
	}
	if len(app.Labels) == 0 {
		if l := tkestackv1.TemplateLabelsWithoutTAppKeys(spec.Template.Labels); len(l) > 0 {
			app.Labels = l
		}
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		*p = spec.EffectivePVCRetentionPolicy()
	}
}

// Bounds are the counts of the CRD's schema, checked by both webhooks before any other work (see
// webhook.Bounded): a templatePool of thousands of pod templates is refused at once instead of being
// defaulted, diffed and dry-run.
func (Defaulter) Bounds(app *tkestackv1.TApp) field.ErrorList { return CountBounds(app) }

// Bounds: see Defaulter.Bounds.
func (Validator) Bounds(app *tkestackv1.TApp) field.ErrorList { return CountBounds(app) }

// CountBounds checks the counts the CRD's schema bounds: templatePool, statuses, templates and
// volumeClaimTemplates.
func CountBounds(app *tkestackv1.TApp) field.ErrorList {
	spec, path := &app.Spec, field.NewPath("spec")
	var errs field.ErrorList
	for _, b := range []struct {
		name   string
		n, max int
	}{
		{"templatePool", len(spec.TemplatePool), tkestackv1.MaxTemplatePool},
		{"statuses", len(spec.Statuses), tkestackv1.MaxReplicas},
		{"templates", len(spec.Templates), tkestackv1.MaxReplicas},
		{"volumeClaimTemplates", len(spec.VolumeClaimTemplates), tkestackv1.MaxVolumeClaimTemplates},
	} {
		if b.n > b.max {
			errs = append(errs, field.TooMany(path.Child(b.name), b.n, b.max))
		}
	}
	return errs
}

// Validator validates TApps on CREATE and UPDATE. DELETE is always allowed (and not registered).
type Validator struct {
	// DryRun sends the server-side dry-run creates of the templates' pods (tapp_webhook_dryrun.go). Its writes
	// must reach the API server, never a cache; the manager's client does that. Nil skips the dry run.
	DryRun client.Writer
}

var _ admission.Validator[*tkestackv1.TApp] = Validator{}

// ValidateCreate applies every validation rule (ValidateTApp) and the dry run of every template.
func (v Validator) ValidateCreate(ctx context.Context, app *tkestackv1.TApp) (admission.Warnings, error) {
	errs := ValidateTApp(app, nil)
	dryErrs, dryWarnings := v.dryRunTemplates(ctx, app, nil, errs)
	return append(Warnings(app), dryWarnings...), invalidTApp(app, append(errs, dryErrs...))
}

// ValidateUpdate applies every validation rule, ratcheted, selector immutability (ValidateTApp) and the dry
// run of the templates that changed.
func (v Validator) ValidateUpdate(ctx context.Context, oldApp, newApp *tkestackv1.TApp) (admission.Warnings, error) {
	errs := ValidateTApp(newApp, oldApp)
	dryErrs, dryWarnings := v.dryRunTemplates(ctx, newApp, oldApp, errs)
	return append(Warnings(newApp), dryWarnings...), invalidTApp(newApp, append(errs, dryErrs...))
}

// ValidateDelete allows every delete.
func (Validator) ValidateDelete(context.Context, *tkestackv1.TApp) (admission.Warnings, error) {
	return nil, nil
}

// invalidTApp returns a 422 Invalid error holding errs, or nil.
func invalidTApp(app *tkestackv1.TApp, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(tappGK, app.Name, errs)
}
