package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// The admission rules of PersistentPodState are those of the hub (kruisev1beta1.ValidatePersistentPodState),
// applied to the object converted to the hub; the errors name the fields of this version.

// ValidatePersistentPodState returns every rule newObj breaks, at the field paths of v1alpha1. oldObj is nil
// on CREATE; others and allowed are as for the hub's rules.
func ValidatePersistentPodState(newObj, oldObj *PersistentPodState, others []PersistentPodState,
	allowed func(schema.GroupKind) bool) field.ErrorList {
	var hubOld *kruisev1beta1.PersistentPodState
	if oldObj != nil {
		hubOld = ToHub(oldObj)
	}
	hubOthers := make([]kruisev1beta1.PersistentPodState, len(others))
	for i := range others {
		hubOthers[i] = *ToHub(&others[i])
	}
	return ErrorsFromHub(kruisev1beta1.ValidatePersistentPodState(ToHub(newObj), hubOld, hubOthers, allowed))
}
