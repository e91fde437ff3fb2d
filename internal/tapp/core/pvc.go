package core

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// ClaimName returns the PVC name of a claim template for an instance: <claim>-<tapp>-<id>.
func ClaimName(claim, tappName string, id int) string {
	return claim + "-" + tappName + "-" + tkestackv1.FormatInstanceID(id)
}

// parseClaimName maps a PVC name back to the claim template and id, for the claim templates of the TApp;
// false when the name does not follow the pattern of any of them.
func parseClaimName(app *tkestackv1.TApp, pvcName string) (claim string, id int, ok bool) {
	for i := range app.Spec.VolumeClaimTemplates {
		c := app.Spec.VolumeClaimTemplates[i].Name
		if suffix, found := strings.CutPrefix(pvcName, c+"-"+app.Name+"-"); found {
			if id, ok := tkestackv1.ParseInstanceID(suffix); ok {
				return c, id, true
			}
		}
	}
	return "", 0, false
}

// DesiredClaims returns the PVCs an instance needs, in claim-template order: namespace of the TApp,
// labels = claim labels + the selector's matchLabels, annotations and spec deep-copied from the claim
// template, and a controller ownerReference to the TApp when whenDeleted is Delete. The TApp is not
// modified.
func DesiredClaims(app *tkestackv1.TApp, id int, settings *Settings) []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(app.Spec.VolumeClaimTemplates))
	for i := range app.Spec.VolumeClaimTemplates {
		claim := &app.Spec.VolumeClaimTemplates[i]
		lbls := maps.Clone(claim.Labels)
		if lbls == nil {
			lbls = map[string]string{}
		}
		if settings.Selector != nil {
			maps.Copy(lbls, settings.Selector.MatchLabels)
		}
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name:        ClaimName(claim.Name, app.Name, id),
				Namespace:   app.Namespace,
				Labels:      lbls,
				Annotations: maps.Clone(claim.Annotations),
			},
			Spec: *claim.Spec.DeepCopy(),
		}
		if settings.Retention.WhenDeleted != tkestackv1.RetainPersistentVolumeClaimRetentionPolicyType {
			pvc.OwnerReferences = []metav1.OwnerReference{OwnerReference(app)}
		}
		out = append(out, pvc)
	}
	return out
}

// ClaimState is what an existing PVC means for creating an instance's pod.
type ClaimState string

const (
	// ClaimMissing: create the PVC (AlreadyExists counts as success).
	ClaimMissing ClaimState = "Missing"
	// ClaimReady: reuse it untouched.
	ClaimReady ClaimState = "Ready"
	// ClaimTerminating: the PVC is being deleted; the pod create waits until it is gone.
	ClaimTerminating ClaimState = "Terminating"
	// ClaimConflict: controlled by another owner; the pod is not created (ReplicaFailure).
	ClaimConflict ClaimState = "Conflict"
)

// CheckClaim classifies the cached PVC of a desired claim name (nil when absent).
func CheckClaim(app *tkestackv1.TApp, existing *corev1.PersistentVolumeClaim) ClaimState {
	if existing == nil {
		return ClaimMissing
	}
	switch ref := metav1.GetControllerOfNoCopy(existing); {
	case existing.DeletionTimestamp != nil:
		return ClaimTerminating
	case ref != nil && ref.UID != app.UID:
		return ClaimConflict
	default:
		return ClaimReady
	}
}

// ManagedClaim reports whether a PVC looks created by drover for this TApp: its name follows the pattern
// of a claim template, it carries the selector's matchLabels and no other owner controls it.
func ManagedClaim(app *tkestackv1.TApp, settings *Settings, pvc *corev1.PersistentVolumeClaim) (int, bool) {
	_, id, ok := parseClaimName(app, pvc.Name)
	if !ok || pvc.Namespace != app.Namespace || settings.Selector == nil {
		return 0, false
	}
	for k, v := range settings.Selector.MatchLabels {
		if pvc.Labels[k] != v {
			return 0, false
		}
	}
	if ref := metav1.GetControllerOfNoCopy(pvc); ref != nil && ref.UID != app.UID {
		return 0, false
	}
	return id, true
}

// ClaimOwnerFix returns the copy of an in-range managed PVC whose TApp ownerReference must be added
// (whenDeleted Delete) or removed (whenDeleted Retain) after a policy change; false when nothing
// changes. PVCs of out-of-range ids and PVCs not managed by this TApp are left alone.
func ClaimOwnerFix(app *tkestackv1.TApp, settings *Settings, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, bool) {
	id, ok := ManagedClaim(app, settings, pvc)
	if !ok || id >= int(max(app.Spec.Replicas, 0)) || pvc.DeletionTimestamp != nil {
		return nil, false
	}
	owned := slices.IndexFunc(pvc.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == app.UID })
	wantOwned := settings.Retention.WhenDeleted != tkestackv1.RetainPersistentVolumeClaimRetentionPolicyType
	switch {
	case wantOwned && owned < 0:
		out := pvc.DeepCopy()
		out.OwnerReferences = append(out.OwnerReferences, OwnerReference(app))
		return out, true
	case !wantOwned && owned >= 0:
		out := pvc.DeepCopy()
		out.OwnerReferences = slices.Delete(out.OwnerReferences, owned, owned+1)
		return out, true
	default:
		return nil, false
	}
}

// ScaledClaimsToDelete returns the PVCs deleted under whenScaled Delete: managed PVCs of out-of-range
// ids whose pod is gone (absent from pods) and that have no pending expectation, sorted by name. Nothing is
// returned under Retain, for a blocked spec or while the TApp is being deleted.
func ScaledClaimsToDelete(app *tkestackv1.TApp, settings *Settings, pvcs []*corev1.PersistentVolumeClaim,
	pods Pods, expecting map[int]bool) []*corev1.PersistentVolumeClaim {
	if settings.Retention.WhenScaled != tkestackv1.DeletePersistentVolumeClaimRetentionPolicyType ||
		settings.Blocked || settings.Deleting {
		return nil
	}
	var out []*corev1.PersistentVolumeClaim
	for _, pvc := range pvcs {
		if pvc == nil || pvc.DeletionTimestamp != nil {
			continue
		}
		id, ok := ManagedClaim(app, settings, pvc)
		if !ok || id < int(max(app.Spec.Replicas, 0)) || pods[id] != nil || expecting[id] {
			continue
		}
		out = append(out, pvc)
	}
	slices.SortFunc(out, func(a, b *corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out
}
