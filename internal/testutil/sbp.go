package testutil

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// SeedSBPYAML is the example StagedBindingPolicy of the KubeStellar workload stager's README, verbatim: the
// nginx workload goes to the dev clusters, and to the prod clusters once a deployments-aggregator Number
// column of a dev Deployment's CombinedStatus reads "1".
const SeedSBPYAML = `apiVersion: community.kubestellar.io/v1alpha1
kind: StagedBindingPolicy
metadata:
  name: nginx-staged-bindingpolicy
spec:
  downsync:
    - statusCollectors:
        - deployments-aggregator
      objectSelectors:
        - matchLabels: {"app.kubernetes.io/name":"nginx"}
  stages:
    - name: dev
      clusterSelectors:
        - matchLabels: {"env":"dev"}
      filter: downsyncClause.resource == "deployments"
      condition: |
        combinedStatus.results.exists(r,
          r.name == 'deployments-aggregator' &&
          r.rows.exists(row,
            row.columns.exists(col,
              col.type == 'Number' &&
              col.float == '1'
        )))
    - name: prod
      clusterSelectors:
        - matchLabels: {"env":"prod"}
`

// SeedSBP decodes SeedSBPYAML strictly (an unknown field is an error), as the API server would store it:
// generation 1, no status.
func SeedSBP() (*communityv1alpha1.StagedBindingPolicy, error) {
	sbp := &communityv1alpha1.StagedBindingPolicy{}
	if err := yaml.UnmarshalStrict([]byte(SeedSBPYAML), sbp); err != nil {
		return nil, fmt.Errorf("decoding the seed StagedBindingPolicy: %w", err)
	}
	sbp.Generation = 1
	return sbp, nil
}

// MatchLabels is a label selector matching the key/value pairs given (k1, v1, k2, v2, ...); none selects
// everything.
func MatchLabels(kv ...string) metav1.LabelSelector {
	sel := metav1.LabelSelector{}
	for i := 0; i+1 < len(kv); i += 2 {
		sel.MatchLabels = mergeMap(sel.MatchLabels, map[string]string{kv[i]: kv[i+1]})
	}
	return sel
}

// ObjectsLabelled is a downsync clause selecting the objects labelled k=v, with the status collectors given.
func ObjectsLabelled(k, v string, collectors ...string) controlv1alpha1.DownsyncPolicyClause {
	c := controlv1alpha1.DownsyncPolicyClause{}
	c.ObjectSelectors = []metav1.LabelSelector{MatchLabels(k, v)}
	c.StatusCollectors = collectors
	return c
}

// SBPWrapper builds a StagedBindingPolicy. Stage adds a stage; Filter, Condition and the other stage
// setters apply to the stage added last.
type SBPWrapper struct {
	communityv1alpha1.StagedBindingPolicy
}

// MakeSBP starts a StagedBindingPolicy of generation 1 with no downsync clause and no stage.
func MakeSBP(name string) *SBPWrapper {
	return &SBPWrapper{communityv1alpha1.StagedBindingPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: communityv1alpha1.GroupVersion.String(), Kind: "StagedBindingPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
	}}
}

// WrapSBP continues building a copy of sbp.
func WrapSBP(sbp *communityv1alpha1.StagedBindingPolicy) *SBPWrapper {
	return &SBPWrapper{*sbp.DeepCopy()}
}

// Obj returns a copy of the StagedBindingPolicy built so far.
func (w *SBPWrapper) Obj() *communityv1alpha1.StagedBindingPolicy { return w.DeepCopy() }

// UID sets the UID.
func (w *SBPWrapper) UID(uid types.UID) *SBPWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Generation sets metadata.generation.
func (w *SBPWrapper) Generation(g int64) *SBPWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// Annotation sets one annotation.
func (w *SBPWrapper) Annotation(k, v string) *SBPWrapper {
	w.Annotations = mergeMap(w.Annotations, map[string]string{k: v})
	return w
}

// Downsync appends downsync clauses.
func (w *SBPWrapper) Downsync(clauses ...controlv1alpha1.DownsyncPolicyClause) *SBPWrapper {
	for i := range clauses {
		w.Spec.Downsync = append(w.Spec.Downsync, *clauses[i].DeepCopy())
	}
	return w
}

// Mode sets spec.mode.
func (w *SBPWrapper) Mode(m communityv1alpha1.RolloutMode) *SBPWrapper {
	w.Spec.Mode = m
	return w
}

// Paused sets spec.paused.
func (w *SBPWrapper) Paused(paused bool) *SBPWrapper {
	w.Spec.Paused = paused
	return w
}

// Status sets the status (a copy).
func (w *SBPWrapper) Status(st communityv1alpha1.StagedBindingPolicyStatus) *SBPWrapper {
	w.StagedBindingPolicy.Status = *st.DeepCopy()
	return w
}

// Stage appends a stage with the cluster selectors given.
func (w *SBPWrapper) Stage(name string, selectors ...metav1.LabelSelector) *SBPWrapper {
	s := communityv1alpha1.Stage{Name: name}
	for i := range selectors {
		s.ClusterSelectors = append(s.ClusterSelectors, *selectors[i].DeepCopy())
	}
	w.Spec.Stages = append(w.Spec.Stages, s)
	return w
}

// last applies f to the stage added last; nothing without a stage.
func (w *SBPWrapper) last(f func(*communityv1alpha1.Stage)) *SBPWrapper {
	if n := len(w.Spec.Stages); n > 0 {
		f(&w.Spec.Stages[n-1])
	}
	return w
}

// Filter sets the last stage's filter.
func (w *SBPWrapper) Filter(expr string) *SBPWrapper {
	return w.last(func(s *communityv1alpha1.Stage) { s.Filter = expr })
}

// Condition sets the last stage's condition.
func (w *SBPWrapper) Condition(expr string) *SBPWrapper {
	return w.last(func(s *communityv1alpha1.Stage) { s.Condition = expr })
}

// FailureCondition sets the last stage's failureCondition.
func (w *SBPWrapper) FailureCondition(expr string) *SBPWrapper {
	return w.last(func(s *communityv1alpha1.Stage) { s.FailureCondition = expr })
}

// MinDuration sets the last stage's minDuration (soak).
func (w *SBPWrapper) MinDuration(d time.Duration) *SBPWrapper {
	return w.last(func(s *communityv1alpha1.Stage) { s.MinDuration = &metav1.Duration{Duration: d} })
}

// ProgressDeadline sets the last stage's progressDeadline.
func (w *SBPWrapper) ProgressDeadline(d time.Duration) *SBPWrapper {
	return w.last(func(s *communityv1alpha1.Stage) { s.ProgressDeadline = &metav1.Duration{Duration: d} })
}

// OnTimeout sets the last stage's onTimeout.
func (w *SBPWrapper) OnTimeout(a communityv1alpha1.TimeoutAction) *SBPWrapper {
	return w.last(func(s *communityv1alpha1.Stage) { s.OnTimeout = a })
}

// RequireApproval makes the last stage's promotion need the approve annotation.
func (w *SBPWrapper) RequireApproval() *SBPWrapper {
	return w.last(func(s *communityv1alpha1.Stage) { s.RequireApproval = true })
}

// EditStage applies f to the stage named name, if there is one.
func (w *SBPWrapper) EditStage(name string, f func(*communityv1alpha1.Stage)) *SBPWrapper {
	for i := range w.Spec.Stages {
		if w.Spec.Stages[i].Name == name {
			f(&w.Spec.Stages[i])
		}
	}
	return w
}

// BindingPolicyWrapper builds a KubeStellar BindingPolicy.
type BindingPolicyWrapper struct{ controlv1alpha1.BindingPolicy }

// MakeBindingPolicy starts a BindingPolicy of generation 1 with an empty spec and status.
func MakeBindingPolicy(name string) *BindingPolicyWrapper {
	return &BindingPolicyWrapper{controlv1alpha1.BindingPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "BindingPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
	}}
}

// WrapBindingPolicy continues building a copy of bp (for instance the desired BindingPolicy of a stage).
func WrapBindingPolicy(bp *controlv1alpha1.BindingPolicy) *BindingPolicyWrapper {
	w := &BindingPolicyWrapper{*bp.DeepCopy()}
	w.TypeMeta = metav1.TypeMeta{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "BindingPolicy"}
	if w.ObjectMeta.Generation == 0 {
		w.ObjectMeta.Generation = 1
	}
	return w
}

// Obj returns a copy of the BindingPolicy built so far.
func (w *BindingPolicyWrapper) Obj() *controlv1alpha1.BindingPolicy { return w.DeepCopy() }

// UID sets the UID.
func (w *BindingPolicyWrapper) UID(uid types.UID) *BindingPolicyWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Generation sets metadata.generation.
func (w *BindingPolicyWrapper) Generation(g int64) *BindingPolicyWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// ObservedGeneration sets status.observedGeneration, as KubeStellar does once it processed a generation.
func (w *BindingPolicyWrapper) ObservedGeneration(g int64) *BindingPolicyWrapper {
	w.Status.ObservedGeneration = g
	return w
}

// Created sets the creation timestamp.
func (w *BindingPolicyWrapper) Created(t time.Time) *BindingPolicyWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// Label sets one label.
func (w *BindingPolicyWrapper) Label(k, v string) *BindingPolicyWrapper {
	w.Labels = mergeMap(w.Labels, map[string]string{k: v})
	return w
}

// ControlledBy sets the one controller ownerReference to the StagedBindingPolicy name/uid, as drover
// writes it (blockOwnerDeletion set).
func (w *BindingPolicyWrapper) ControlledBy(sbpName string, sbpUID types.UID) *BindingPolicyWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: communityv1alpha1.GroupVersion.String(), Kind: "StagedBindingPolicy",
		Name: sbpName, UID: sbpUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	return w
}

// OwnedBy sets one plain (not controller) ownerReference to the StagedBindingPolicy name/uid: the shape the
// KubeStellar workload stager wrote.
func (w *BindingPolicyWrapper) OwnedBy(sbpName string, sbpUID types.UID) *BindingPolicyWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: communityv1alpha1.GroupVersion.String(), Kind: "StagedBindingPolicy",
		Name: sbpName, UID: sbpUID}}
	return w
}

// Downsync sets spec.downsync (copies).
func (w *BindingPolicyWrapper) Downsync(clauses ...controlv1alpha1.DownsyncPolicyClause) *BindingPolicyWrapper {
	w.Spec.Downsync = nil
	for i := range clauses {
		w.Spec.Downsync = append(w.Spec.Downsync, *clauses[i].DeepCopy())
	}
	return w
}

// ClusterSelectors sets spec.clusterSelectors (copies).
func (w *BindingPolicyWrapper) ClusterSelectors(selectors ...metav1.LabelSelector) *BindingPolicyWrapper {
	w.Spec.ClusterSelectors = nil
	for i := range selectors {
		w.Spec.ClusterSelectors = append(w.Spec.ClusterSelectors, *selectors[i].DeepCopy())
	}
	return w
}

// Finalizer adds a finalizer (KubeStellar adds bindingpolicy.kubestellar.io/kscontroller).
func (w *BindingPolicyWrapper) Finalizer(f string) *BindingPolicyWrapper {
	w.Finalizers = append(w.Finalizers, f)
	return w
}

// Terminating sets a deletionTimestamp and KubeStellar's finalizer.
func (w *BindingPolicyWrapper) Terminating(t time.Time) *BindingPolicyWrapper {
	w.DeletionTimestamp = ptr.To(metav1.NewTime(t))
	return w.Finalizer(controlv1alpha1.FinalizerBindingPolicy)
}

// StatusCollectorsAvailable sets the StatusCollectorsAvailable condition KubeStellar copies from the
// Binding, in KubeStellar's words: missing names the collectors that do not exist (none: True).
func (w *BindingPolicyWrapper) StatusCollectorsAvailable(missing ...string) *BindingPolicyWrapper {
	w.Status.Conditions = setCollectorsCondition(w.Status.Conditions, missing)
	return w
}

func setCollectorsCondition(conds []controlv1alpha1.BindingPolicyCondition, missing []string) []controlv1alpha1.BindingPolicyCondition {
	c := controlv1alpha1.BindingPolicyCondition{Type: controlv1alpha1.TypeStatusCollectorsAvailable, Status: corev1.ConditionTrue,
		Reason: controlv1alpha1.ReasonReconcileSuccess, Message: controlv1alpha1.MessageStatusCollectorsAvailable}
	if len(missing) > 0 {
		c.Status, c.Reason = corev1.ConditionFalse, controlv1alpha1.ReasonReconcileError
		c.Message = fmt.Sprintf(controlv1alpha1.MessageStatusCollectorsMissingFormat, missing)
	}
	out := make([]controlv1alpha1.BindingPolicyCondition, 0, len(conds)+1)
	for _, old := range conds {
		if old.Type != c.Type {
			out = append(out, old)
		}
	}
	return append(out, c)
}

// BindingWrapper builds a KubeStellar Binding.
type BindingWrapper struct{ controlv1alpha1.Binding }

// MakeBinding starts a Binding of generation 1 with no workload and no destination.
func MakeBinding(name string) *BindingWrapper {
	return &BindingWrapper{controlv1alpha1.Binding{
		TypeMeta:   metav1.TypeMeta{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "Binding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
	}}
}

// Obj returns a copy of the Binding built so far.
func (w *BindingWrapper) Obj() *controlv1alpha1.Binding { return w.DeepCopy() }

// ControlledBy sets the one controller ownerReference to the BindingPolicy name/uid, as KubeStellar writes
// it (blockOwnerDeletion false).
func (w *BindingWrapper) ControlledBy(bpName string, bpUID types.UID) *BindingWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "BindingPolicy",
		Name: bpName, UID: bpUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false)}}
	return w
}

// Destinations appends destinations by cluster id.
func (w *BindingWrapper) Destinations(clusters ...string) *BindingWrapper {
	for _, c := range clusters {
		w.Spec.Destinations = append(w.Spec.Destinations, controlv1alpha1.Destination{ClusterID: c})
	}
	return w
}

// NamespaceObject appends a namespaceScope workload entry (resourceVersion "1") with the merged status
// collectors given.
func (w *BindingWrapper) NamespaceObject(group, version, resource, namespace, name string, collectors ...string) *BindingWrapper {
	e := controlv1alpha1.NamespaceScopeDownsyncClause{}
	e.GroupVersionResource = metav1.GroupVersionResource{Group: group, Version: version, Resource: resource}
	e.Namespace, e.Name, e.ResourceVersion = namespace, name, "1"
	e.StatusCollectors = collectors
	w.Spec.Workload.NamespaceScope = append(w.Spec.Workload.NamespaceScope, e)
	return w
}

// ClusterObject appends a clusterScope workload entry (resourceVersion "1") with the merged status
// collectors given.
func (w *BindingWrapper) ClusterObject(group, version, resource, name string, collectors ...string) *BindingWrapper {
	e := controlv1alpha1.ClusterScopeDownsyncClause{}
	e.GroupVersionResource = metav1.GroupVersionResource{Group: group, Version: version, Resource: resource}
	e.Name, e.ResourceVersion = name, "1"
	e.StatusCollectors = collectors
	w.Spec.Workload.ClusterScope = append(w.Spec.Workload.ClusterScope, e)
	return w
}

// StatusCollectorsAvailable sets the Binding's StatusCollectorsAvailable condition: missing names the
// collectors that do not exist (none: True).
func (w *BindingWrapper) StatusCollectorsAvailable(missing ...string) *BindingWrapper {
	w.Status.Conditions = setCollectorsCondition(w.Status.Conditions, missing)
	return w
}

// combinedStatusUIDs numbers the CombinedStatuses built, so that each has a UID of its own: the CEL cache
// keys what it derives from a CombinedStatus by UID and resourceVersion.
var combinedStatusUIDs atomic.Int64

// CombinedStatusWrapper builds a KubeStellar CombinedStatus; Obj renders it unstructured, as an informer
// holds it.
type CombinedStatusWrapper struct{ controlv1alpha1.CombinedStatus }

// MakeCombinedStatus starts the CombinedStatus of the workload object objectUID under the BindingPolicy
// bpName/bpUID: named "<objectUID>.<bpUID>", labelled with the BindingPolicy, resourceVersion "1", a UID of
// its own. Workload sets the object's labels, namespace and owner.
func MakeCombinedStatus(objectUID types.UID, bpName string, bpUID types.UID) *CombinedStatusWrapper {
	return &CombinedStatusWrapper{controlv1alpha1.CombinedStatus{
		TypeMeta: metav1.TypeMeta{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "CombinedStatus"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            controlv1alpha1.CombinedStatusName(objectUID, bpUID),
			UID:             types.UID(fmt.Sprintf("cs-%d", combinedStatusUIDs.Add(1))),
			ResourceVersion: "1",
			Generation:      1,
			Labels:          map[string]string{controlv1alpha1.LabelCombinedStatusBindingPolicy: bpName},
		},
	}}
}

// Workload sets what KubeStellar derives from the workload object: the four object labels (the group
// without version, "" for core; "" namespace for a cluster-scoped object), the namespace (kubestellar-report
// for a cluster-scoped object) and the ownerReference to the object, whose UID is the first part of the
// name.
func (w *CombinedStatusWrapper) Workload(apiVersion, kind, resource, namespace, name string) *CombinedStatusWrapper {
	group := ""
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	w.Labels = mergeMap(w.Labels, map[string]string{
		controlv1alpha1.LabelCombinedStatusAPIGroup:  group,
		controlv1alpha1.LabelCombinedStatusResource:  resource,
		controlv1alpha1.LabelCombinedStatusNamespace: namespace,
		controlv1alpha1.LabelCombinedStatusName:      name,
	})
	w.Namespace = namespace
	if namespace == "" {
		w.Namespace = controlv1alpha1.ReportNamespace
	}
	objectUID, _, _ := strings.Cut(w.Name, ".")
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(objectUID)}}
	return w
}

// Label sets one label (to build malformed CombinedStatuses).
func (w *CombinedStatusWrapper) Label(k, v string) *CombinedStatusWrapper {
	w.Labels = mergeMap(w.Labels, map[string]string{k: v})
	return w
}

// Created sets the creation timestamp.
func (w *CombinedStatusWrapper) Created(t time.Time) *CombinedStatusWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// Generation sets metadata.generation (KubeStellar bumps it on every change of results).
func (w *CombinedStatusWrapper) Generation(g int64) *CombinedStatusWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// Result appends a collector's result with its column names and rows.
func (w *CombinedStatusWrapper) Result(name string, columnNames []string, rows ...[]controlv1alpha1.Value) *CombinedStatusWrapper {
	r := controlv1alpha1.NamedStatusCombination{Name: name, ColumnNames: columnNames}
	for _, row := range rows {
		r.Rows = append(r.Rows, controlv1alpha1.StatusCombinationRow{Columns: row})
	}
	w.Results = append(w.Results, r)
	return w
}

// RowError appends a rowErrors entry to the last result: KubeStellar's record of a destination whose row
// failed (column "" for the filter), at most one per column.
func (w *CombinedStatusWrapper) RowError(cluster, column, msg string) *CombinedStatusWrapper {
	if len(w.Results) == 0 {
		panic("RowError needs a Result first")
	}
	r := &w.Results[len(w.Results)-1]
	r.RowErrors = append(r.RowErrors, controlv1alpha1.RowEvaluationError{
		WEC: controlv1alpha1.Destination{ClusterID: cluster}, ColumnName: column, Error: msg,
	})
	return w
}

// Typed returns a copy of the CombinedStatus built so far.
func (w *CombinedStatusWrapper) Typed() *controlv1alpha1.CombinedStatus { return w.DeepCopy() }

// Obj returns the CombinedStatus built so far as unstructured content decoded the way an informer decodes
// it (integers int64, other numbers float64).
func (w *CombinedStatusWrapper) Obj() *unstructured.Unstructured {
	raw, err := json.Marshal(&w.CombinedStatus)
	if err != nil {
		panic(fmt.Sprintf("encoding a CombinedStatus: %v", err))
	}
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(raw, &u.Object); err != nil {
		panic(fmt.Sprintf("decoding a CombinedStatus: %v", err))
	}
	return u
}

// NumberValue is a Number column; KubeStellar writes the number as a string in "float".
func NumberValue(s string) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeNumber, Number: ptr.To(s)}
}

// StringValue is a String column.
func StringValue(s string) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeString, String: ptr.To(s)}
}

// BoolValue is a Bool column.
func BoolValue(b bool) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeBool, Bool: ptr.To(b)}
}

// NullValue is a Null column.
func NullValue() controlv1alpha1.Value { return controlv1alpha1.Value{Type: controlv1alpha1.TypeNull} }

// ObjectValue is an Object column holding the JSON of v (KubeStellar writes lists as Object too).
func ObjectValue(v any) controlv1alpha1.Value {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding an Object value: %v", err))
	}
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeObject, Object: &apiextensionsv1.JSON{Raw: raw}}
}
