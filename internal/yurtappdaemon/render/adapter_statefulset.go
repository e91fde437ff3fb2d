package render

import (
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// statefulSetAdapter renders one StatefulSet per pool.
type statefulSetAdapter struct{}

var _ Adapter = statefulSetAdapter{}

// statefulSetMutable are the StatefulSet spec fields Kubernetes v1.36 lets an update change. The
// selector is left to the webhook's selector-immutability check, which reports it on its own path.
var statefulSetMutable = map[string]bool{
	"replicas": true, "ordinals": true, "template": true, "updateStrategy": true, "revisionHistoryLimit": true,
	"persistentVolumeClaimRetentionPolicy": true, "minReadySeconds": true, "selector": true,
}

func (statefulSetAdapter) Kind() openyurtv1alpha1.TemplateType {
	return openyurtv1alpha1.StatefulSetTemplateType
}

func (statefulSetAdapter) GVK() schema.GroupVersionKind {
	return appsv1.SchemeGroupVersion.WithKind("StatefulSet")
}

func (statefulSetAdapter) NewObject() client.Object { return &appsv1.StatefulSet{} }

func (statefulSetAdapter) NewList() client.ObjectList { return &appsv1.StatefulSetList{} }

func (statefulSetAdapter) Items(list client.ObjectList) []client.Object {
	if l, ok := list.(*appsv1.StatefulSetList); ok {
		return objects(l.Items)
	}
	return nil
}

func (statefulSetAdapter) NameLimit() int { return StatefulSetNameLimit }

// Summary reads a StatefulSet; availableCondition is True iff availableReplicas ≥ spec.replicas.
func (statefulSetAdapter) Summary(obj client.Object, currentRevision string) Summary {
	s, ok := obj.(*appsv1.StatefulSet)
	if !ok || s == nil {
		return Summary{Available: "Unknown"}
	}
	replicas := ptr.Deref(s.Spec.Replicas, 1)
	out := Summary{Replicas: replicas, ReadyReplicas: s.Status.ReadyReplicas, Available: "False"}
	if s.Status.AvailableReplicas >= replicas {
		out.Available = "True"
	}
	current := s.Status.ObservedGeneration >= s.Generation
	out.Ready = current && s.Status.ReadyReplicas == replicas
	out.Updated = current && currentRevision != "" &&
		s.Labels[openyurtv1alpha1.LabelControllerRevisionHash] == currentRevision &&
		s.Status.UpdatedReplicas == replicas
	return out
}

// ImmutableChanges reports one Forbidden error at <fldPath>.statefulSetTemplate.spec naming the changed
// fields Kubernetes does not let a StatefulSet update change.
func (statefulSetAdapter) ImmutableChanges(oldTmpl, newTmpl *openyurtv1alpha1.WorkloadTemplate, fldPath *field.Path) field.ErrorList {
	if oldTmpl == nil || newTmpl == nil || oldTmpl.StatefulSetTemplate == nil || newTmpl.StatefulSetTemplate == nil {
		return nil
	}
	changed := changedFields(&oldTmpl.StatefulSetTemplate.Spec, &newTmpl.StatefulSetTemplate.Spec, statefulSetMutable)
	if len(changed) == 0 {
		return nil
	}
	return field.ErrorList{field.Forbidden(fldPath.Child("statefulSetTemplate", "spec"),
		"updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "+
			"'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden "+
			"(changed: "+strings.Join(changed, ", ")+")")}
}

// changedFields returns the JSON names of the fields of two structs of the same type that differ
// semantically and are not in allowed, in declaration order.
func changedFields(oldSpec, newSpec any, allowed map[string]bool) []string {
	ov, nv := reflect.ValueOf(oldSpec).Elem(), reflect.ValueOf(newSpec).Elem()
	var out []string
	for i := range ov.NumField() {
		name, _, _, skip := jsonField(ov.Type().Field(i))
		if skip || allowed[name] {
			continue
		}
		if !equality.Semantic.DeepEqual(ov.Field(i).Interface(), nv.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	return out
}
