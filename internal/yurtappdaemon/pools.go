package yurtappdaemon

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/yurtappdaemon/render"
)

// poolSet is the outcome of pool selection.
type poolSet struct {
	// eligible are the selected pools a child is kept for, sorted by name.
	eligible []render.Pool
	// invalidNames are selected pools skipped because their names are not label values, sorted.
	invalidNames []string
}

// names returns the names of the eligible pools, sorted.
func (s poolSet) names() []string {
	out := make([]string, len(s.eligible))
	for i := range s.eligible {
		out[i] = s.eligible[i].Name
	}
	slices.Sort(out) // selectPools sorts already; this keeps the status sorted whatever built the set
	return out
}

// listPools reads the pools an owner selects from the cache and returns the eligible ones. An
// absent nodepoolSelector selects none; {} selects all. A failed read is an error, never "no pools".
func listPools(ctx context.Context, c client.Reader, spec *openyurtv1alpha1.YurtAppDaemonSpec) (poolSet, error) {
	if spec.NodePoolSelector == nil {
		return poolSet{}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(spec.NodePoolSelector)
	if err != nil {
		return poolSet{}, fmt.Errorf("converting spec.nodepoolSelector: %w", err)
	}
	list := &openyurtv1beta1.NodePoolList{}
	if err := c.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return poolSet{}, fmt.Errorf("listing NodePools: %w", err)
	}
	return selectPools(list.Items, sel), nil
}

// selectPools picks the eligible pools among those read from the cache: a pool is eligible iff its labels match sel, it is
// not being deleted and its name is a valid label value. Selected pools with invalid names are reported.
// Labels and taints are copied, so rendering never shares maps with the cache.
func selectPools(pools []openyurtv1beta1.NodePool, sel labels.Selector) poolSet {
	var s poolSet
	for i := range pools {
		p := &pools[i]
		if !sel.Matches(labels.Set(p.Labels)) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if len(validation.IsValidLabelValue(p.Name)) > 0 || p.Name == "" {
			s.invalidNames = append(s.invalidNames, p.Name)
			continue
		}
		s.eligible = append(s.eligible, render.Pool{
			Name:   p.Name,
			Labels: maps.Clone(p.Labels),
			Taints: slices.Clone(p.Spec.Taints),
		})
	}
	slices.SortFunc(s.eligible, func(a, b render.Pool) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(s.invalidNames)
	return s
}

// poolKey identifies what a pool's render depends on besides the owner: its name, labels and taints.
func poolKey(p *render.Pool) string {
	var b strings.Builder
	b.WriteString(p.Name)
	for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
		fmt.Fprintf(&b, "\x00%s=%s", k, p.Labels[k])
	}
	b.WriteString("\x01")
	for i := range p.Taints {
		t := &p.Taints[i]
		fmt.Fprintf(&b, "\x00%s=%s:%s", t.Key, t.Value, t.Effect)
	}
	return b.String()
}
