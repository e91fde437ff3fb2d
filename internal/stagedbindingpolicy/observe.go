package stagedbindingpolicy

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy/stager"
)

// observe reads, from the cache, what a pass decides from: the BindingPolicies the policy controls (by
// index) and those with the names its stages give theirs (someone else's, or the stager's to adopt), their
// Bindings, and the CombinedStatuses of the active stage's BindingPolicy (by index, as stored: the cache's
// own objects, read-only).
func (r *Reconciler) observe(ctx context.Context, sbp *communityv1alpha1.StagedBindingPolicy) (stager.Observed, error) {
	obs := stager.Observed{
		BindingPolicies: map[string]*controlv1alpha1.BindingPolicy{},
		Bindings:        map[string]*controlv1alpha1.Binding{},
	}
	var owned controlv1alpha1.BindingPolicyList
	if err := r.cfg.Client.List(ctx, &owned, client.MatchingFields{IndexBindingPolicyController: string(sbp.UID)}); err != nil {
		return obs, fmt.Errorf("listing the BindingPolicies of StagedBindingPolicy %s: %w", sbp.Name, err)
	}
	for i := range owned.Items {
		obs.BindingPolicies[owned.Items[i].Name] = &owned.Items[i]
	}
	for _, s := range sbp.Spec.Stages {
		if err := r.getBindingPolicy(ctx, stager.BindingPolicyName(sbp.Name, s.Name), obs.BindingPolicies); err != nil {
			return obs, err
		}
	}
	if err := readBindings(ctx, r.cfg.Client, obs); err != nil {
		return obs, err
	}
	css, err := r.activeCombinedStatuses(ctx, sbp)
	if err != nil {
		return obs, err
	}
	obs.CombinedStatuses = css
	return obs, nil
}

// readBindings adds to obs the Binding of each of its BindingPolicies that has one (KubeStellar names a
// Binding as its BindingPolicy).
func readBindings(ctx context.Context, c client.Reader, obs stager.Observed) error {
	for name := range obs.BindingPolicies {
		b := &controlv1alpha1.Binding{}
		switch err := c.Get(ctx, client.ObjectKey{Name: name}, b); {
		case err == nil:
			obs.Bindings[name] = b
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("reading Binding %s: %w", name, err)
		}
	}
	return nil
}

// getBindingPolicy adds the BindingPolicy name to bps when it exists and is not there yet.
func (r *Reconciler) getBindingPolicy(ctx context.Context, name string, bps map[string]*controlv1alpha1.BindingPolicy) error {
	if _, ok := bps[name]; ok {
		return nil
	}
	bp := &controlv1alpha1.BindingPolicy{}
	switch err := r.cfg.Client.Get(ctx, client.ObjectKey{Name: name}, bp); {
	case err == nil:
		bps[name] = bp
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading BindingPolicy %s: %w", name, err)
	}
	return nil
}

// activeCombinedStatuses lists the CombinedStatuses labelled with the active stage's BindingPolicy name
// (one indexed list), without copying them: they are only read.
func (r *Reconciler) activeCombinedStatuses(ctx context.Context, sbp *communityv1alpha1.StagedBindingPolicy) (
	[]*unstructured.Unstructured, error) {
	active := sbp.Status.ActiveStage
	if active == "" {
		return nil, nil
	}
	name := stager.BindingPolicyName(sbp.Name, active)
	list := combinedStatusListObject()
	if err := r.cfg.Client.List(ctx, list, client.MatchingFields{IndexCombinedStatusBindingPolicy: name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the CombinedStatuses of BindingPolicy %s: %w", name, err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// readLive reads a BindingPolicy and its Binding from the API server (nil for one that does not exist). Of the
// Binding only the metadata is read: its owner is all the check needs, and a Binding lists every object
// and cluster it places (hundreds of entries), which would cost the promotion tens of milliseconds.
func (r *Reconciler) readLive(ctx context.Context, name string) (*controlv1alpha1.BindingPolicy, *controlv1alpha1.Binding, error) {
	bp := &controlv1alpha1.BindingPolicy{}
	if err := r.cfg.APIReader.Get(ctx, client.ObjectKey{Name: name}, bp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("reading BindingPolicy %s: %w", name, err)
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind("Binding"))
	if err := r.cfg.APIReader.Get(ctx, client.ObjectKey{Name: name}, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return bp, nil, nil
		}
		return nil, nil, fmt.Errorf("reading Binding %s: %w", name, err)
	}
	return bp, &controlv1alpha1.Binding{ObjectMeta: meta.ObjectMeta}, nil
}
