package tapp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// syncSpec makes the only spec writes of the controller, as one targeted merge patch guarded by the
// resourceVersion: the derived selector, persisted once (§2.2), and the templatePool entries
// autoDeleteUnusedTemplate prunes (§13). Neither rewrites a template. When it patched, the pass ends there
// (done): the spec change starts a fresh pass on the patched object.
func (r *Reconciler) syncSpec(ctx context.Context, rn *run) (res ctrl.Result, done bool, err error) {
	if rn.pass.Settings.Deleting {
		return ctrl.Result{}, false, nil
	}
	spec := map[string]any{}
	if rn.pass.Settings.SelectorDerived {
		spec["selector"] = rn.pass.Settings.Selector
	}
	var pruned []string
	if rn.app.Spec.AutoDeleteUnusedTemplate {
		pruned = UnusedTemplates(&rn.app.Spec)
		if len(pruned) > 0 {
			pool := map[string]any{}
			for _, name := range pruned {
				pool[name] = nil
			}
			spec["templatePool"] = pool
		}
	}
	if len(spec) == 0 {
		return ctrl.Result{}, false, nil
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": rn.app.ResourceVersion},
		"spec":     spec,
	})
	if err != nil {
		return ctrl.Result{}, true, fmt.Errorf("encoding the spec patch of TApp %s: %w", rn.key, err)
	}
	if err := r.cfg.Client.Patch(ctx, rn.app.DeepCopy(), client.RawPatch(types.MergePatchType, body)); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: r.conflicts.next(rn.key)}, true, nil
		}
		return ctrl.Result{}, true, fmt.Errorf("patching the spec of TApp %s: %w", rn.key, err)
	}
	if len(pruned) > 0 {
		rn.normal(tkestackv1.ReasonTemplatesPruned, actionPrune, nil, "Removed unused templates from templatePool: %s",
			strings.Join(pruned, ", "))
	}
	return ctrl.Result{}, true, nil
}
