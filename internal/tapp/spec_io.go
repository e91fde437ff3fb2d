package tapp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/drover-dev/drover/internal/tapp/core"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/kit"
)

// syncSpec makes the only spec writes of the controller, as one targeted merge patch guarded by the
// resourceVersion: the derived selector, persisted once, and the templatePool entries
// autoDeleteUnusedTemplate prunes. Neither rewrites a template. When it patched, the pass ends there
// (done): the spec change starts a fresh pass on the patched object. Its outcome is in rn.out.
func (r *Reconciler) syncSpec(ctx context.Context, rn *run) (done bool) {
	if rn.pass.Settings.Deleting {
		return false
	}
	spec := map[string]any{}
	if rn.pass.Settings.SelectorDerived {
		spec["selector"] = rn.pass.Settings.Selector
	}
	var pruned []string
	if rn.app.Spec.AutoDeleteUnusedTemplate {
		pruned = core.UnusedTemplates(&rn.app.Spec)
		if len(pruned) > 0 {
			pool := map[string]any{}
			for _, name := range pruned {
				pool[name] = nil
			}
			spec["templatePool"] = pool
		}
	}
	if len(spec) == 0 {
		return false
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": rn.app.ResourceVersion},
		"spec":     spec,
	})
	if err != nil {
		rn.out.Error(fmt.Errorf("encoding the spec patch of TApp %s: %w", rn.key, err))
		return true
	}
	if err := r.cfg.Client.Patch(ctx, rn.app.DeepCopy(), client.RawPatch(types.MergePatchType, body)); err != nil {
		rn.out.Error(fmt.Errorf("patching the spec of TApp %s: %w", rn.key, err)) // a conflict only requeues
		return true
	}
	if len(pruned) > 0 {
		rn.events.note(corev1.EventTypeNormal, tkestackv1.ReasonTemplatesPruned, actionPrune,
			"Removed unused templates from templatePool: "+kit.NameList(pruned))
	}
	return true
}
