package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Label and annotation keys of the YurtAppDaemon API. The apps.openyurt.io keys keep OpenYurt's meaning and
// format; drover's own keys are under drover.dev/.
const (
	// LabelPoolName is on each child, its selector and its pod template: the name of the child's pool.
	LabelPoolName = "apps.openyurt.io/pool-name"
	// LabelControllerRevisionHash is on each child (not its pods): the ControllerRevision it was rendered from.
	LabelControllerRevisionHash = "apps.openyurt.io/controller-revision-hash"
	// AnnotationRefNodePool is on each child: the name of its pool, the primary child → pool mapping.
	AnnotationRefNodePool = "apps.openyurt.io/ref-nodepool"
	// LabelRevisionHash is on each ControllerRevision: the bare revision hash.
	LabelRevisionHash = "controller.kubernetes.io/hash"
	// AnnotationRenderedHash is on each child: the hash of the apply body it was last written with.
	AnnotationRenderedHash = "drover.dev/rendered-hash"
	// AnnotationAppliedReplicas is on a child while drover manages its spec.replicas: the value applied.
	AnnotationAppliedReplicas = "drover.dev/applied-replicas"
	// NodePoolNamePlaceholder in a tweak patch value is replaced by the pool name.
	NodePoolNamePlaceholder = "{{nodepool-name}}"
)

// TemplateType is the kind of workload an owner renders per pool.
type TemplateType string

const (
	// StatefulSetTemplateType renders a StatefulSet per pool.
	StatefulSetTemplateType TemplateType = "StatefulSet"
	// DeploymentTemplateType renders a Deployment per pool.
	DeploymentTemplateType TemplateType = "Deployment"
)

// Condition types of YurtAppDaemon and UnitedDaemonSet (OpenYurt's names).
const (
	// WorkLoadProvisioned is True when every eligible pool has exactly one child.
	WorkLoadProvisioned = "WorkLoadProvisioned"
	// WorkLoadUpdated is True when every kept child is in sync with the current revision.
	WorkLoadUpdated = "WorkLoadUpdated"
	// WorkLoadFailure is True while something is failing.
	WorkLoadFailure = "WorkLoadFailure"
)

// Condition reasons (PascalCase).
const (
	ReasonAllProvisioned      = "AllProvisioned"
	ReasonNoNodePoolsSelected = "NoNodePoolsSelected"
	ReasonProvisionFailed     = "ProvisionFailed"
	ReasonNameConflict        = "NameConflict"
	ReasonInvalidSpec         = "InvalidSpec"
	ReasonNodePoolListFailed  = "NodePoolListFailed"
	ReasonRevisionFailed      = "RevisionFailed"
	ReasonAllUpdated          = "AllUpdated"
	ReasonUpdateFailed        = "UpdateFailed"
	ReasonRenderFailed        = "RenderFailed"
	ReasonCreateFailed        = "CreateFailed"
	ReasonDeleteFailed        = "DeleteFailed"
	ReasonInvalidNodePoolName = "InvalidNodePoolName"
	ReasonNoFailure           = "NoFailure"
)

// YurtAppDaemonSpec is the desired state of a YurtAppDaemon or UnitedDaemonSet.
type YurtAppDaemonSpec struct {
	// Selector is a label query over the pods of every child. It must match the template's pod labels.
	// Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="selector is immutable"
	Selector *metav1.LabelSelector `json:"selector"`

	// WorkloadTemplate is the workload rendered once per selected pool: exactly one member is set, and the
	// member cannot be switched after creation.
	// +kubebuilder:validation:XValidation:rule="has(self.statefulSetTemplate) != has(self.deploymentTemplate)",message="exactly one of statefulSetTemplate and deploymentTemplate must be set"
	// +kubebuilder:validation:XValidation:rule="has(self.statefulSetTemplate) == has(oldSelf.statefulSetTemplate)",message="the template kind cannot be changed"
	WorkloadTemplate WorkloadTemplate `json:"workloadTemplate"`

	// NodePoolSelector is a label query over NodePool objects (not nodes). {} selects every pool; an
	// absent selector selects none.
	NodePoolSelector *metav1.LabelSelector `json:"nodepoolSelector"`

	// RevisionHistoryLimit is the number of old ControllerRevisions kept. Default 10.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// WorkloadTweaks change the rendered child of the pools they select, in list order (later tweaks win).
	// A drover extension, shaped like OpenYurt's YurtAppSet workloadTweaks.
	// At most 32: the webhook checks each tweak with images or patches by a dry-run create of the child
	// on the API server, and all of them must fit in its 10 s; 32 is far more variants than one workload needs.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	WorkloadTweaks []WorkloadTweak `json:"workloadTweaks,omitempty"`
}

// WorkloadTemplate holds the workload rendered per pool. Only one member may be set.
type WorkloadTemplate struct {
	// StatefulSetTemplate renders a StatefulSet per pool.
	// +optional
	StatefulSetTemplate *StatefulSetTemplateSpec `json:"statefulSetTemplate,omitempty"`
	// DeploymentTemplate renders a Deployment per pool.
	// +optional
	DeploymentTemplate *DeploymentTemplateSpec `json:"deploymentTemplate,omitempty"`
}

// StatefulSetTemplateSpec is the template of the per-pool StatefulSets. Only the labels and annotations of
// its metadata are used. Metadata and spec are stored as they are (no pruning), so fields of newer
// Kubernetes versions survive; the webhook validates them.
type StatefulSetTemplateSpec struct {
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Spec appsv1.StatefulSetSpec `json:"spec"`
}

// DeploymentTemplateSpec is the template of the per-pool Deployments. Only the labels and annotations of
// its metadata are used. Metadata and spec are stored as they are (no pruning).
type DeploymentTemplateSpec struct {
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Spec appsv1.DeploymentSpec `json:"spec"`
}

// WorkloadTweak changes the child of every pool named in Pools or matched by NodePoolSelector.
// +kubebuilder:validation:XValidation:rule="has(self.pools) || has(self.nodepoolSelector)",message="a tweak needs pools or nodepoolSelector"
type WorkloadTweak struct {
	// NodePoolSelector selects pools by their labels; absent matches nothing.
	// +optional
	NodePoolSelector *metav1.LabelSelector `json:"nodepoolSelector,omitempty"`
	// Pools are pool names. Pools and NodePoolSelector are ORed.
	// At most 1000 names, the number of pools drover is built and measured for, so a tweak can still name
	// every pool of such a cluster; each at most 63 characters, as a pool name is a label value (the node label
	// apps.openyurt.io/nodepool).
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Pools []string `json:"pools,omitempty"`
	// Tweaks are the changes.
	Tweaks Tweaks `json:"tweaks"`
}

// Tweaks are the changes a WorkloadTweak applies to a rendered child.
type Tweaks struct {
	// Replicas overrides the template's replicas.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// ContainerImages set the image of containers or init containers by name.
	// At most 64: one entry per container or init container of the template is all a tweak needs, and pods
	// have a handful of containers.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	ContainerImages []ContainerImage `json:"containerImages,omitempty"`
	// Patches are RFC 6902 operations on the rendered child. {{nodepool-name}} in a value is replaced by the
	// pool name.
	// At most 500: real tweaks hold a handful of patches (env variables, labels, volumes), so existing
	// manifests keep far below it, while one tweak's check and render stay within milliseconds, and 32
	// tweaks of 500 patches of about 90 bytes still fit in one object (etcd stores at most 1.5 MiB).
	// +kubebuilder:validation:MaxItems=500
	// +optional
	Patches []Patch `json:"patches,omitempty"`
}

// ContainerImage sets the image of one container.
type ContainerImage struct {
	// Name of a container or init container of the template. At most 63 characters: a container name is
	// a DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// TargetImage is the image to use. At most 1024 characters: an image reference is at most about 520
	// (a 255-character repository name with its registry, a 128-character tag and a sha512 digest).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	TargetImage string `json:"targetImage"`
}

// PatchOperation is an RFC 6902 operation drover supports.
// +kubebuilder:validation:Enum=add;remove;replace
type PatchOperation string

const (
	// PatchAdd adds a value (RFC 6902 "add").
	PatchAdd PatchOperation = "add"
	// PatchRemove removes a value (RFC 6902 "remove").
	PatchRemove PatchOperation = "remove"
	// PatchReplace replaces a value (RFC 6902 "replace").
	PatchReplace PatchOperation = "replace"
)

// Patch is one JSON patch operation on the rendered child.
type Patch struct {
	// Path is a JSON pointer into the rendered child, e.g. /spec/template/spec/containers/0/env.
	// At most 1024 characters: the longest useful pointers end in a label or annotation key (up to 317
	// characters, a little more with ~1 escapes) below the pod template's metadata.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path"`
	// Operation is add, remove or replace.
	Operation PatchOperation `json:"operation"`
	// Value is the JSON value for add and replace.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Value *runtime.RawExtension `json:"value,omitempty"`
}

// YurtAppDaemonStatus is the observed state of a YurtAppDaemon or UnitedDaemonSet.
type YurtAppDaemonStatus struct {
	// ObservedGeneration is the metadata.generation the status was written for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// CollisionCount counts ControllerRevision name collisions.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// CurrentRevision is the name of the newest ControllerRevision.
	// +optional
	CurrentRevision string `json:"currentRevision"`
	// TemplateType is Deployment or StatefulSet; empty while the spec is invalid.
	// +optional
	TemplateType TemplateType `json:"templateType"`
	// NodePools are the names of the selected eligible pools, sorted.
	// +optional
	NodePools []string `json:"nodepools,omitempty"`
	// Conditions: WorkLoadProvisioned, WorkLoadUpdated and WorkLoadFailure, always present.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// WorkloadSummary has one entry per child mapped to a selected pool, sorted by pool.
	// +optional
	WorkloadSummary []WorkloadSummary `json:"workloadSummary,omitempty"`
	// TotalWorkloads is the number of children mapped to selected pools.
	// +optional
	TotalWorkloads int32 `json:"totalWorkloads"`
	// ReadyWorkloads is the number of those children whose pods are all ready.
	// +optional
	ReadyWorkloads int32 `json:"readyWorkloads"`
	// UpdatedWorkloads is the number of those children rendered from the current revision and fully rolled out.
	// +optional
	UpdatedWorkloads int32 `json:"updatedWorkloads"`
}

// WorkloadSummary is the state of one pool's child.
type WorkloadSummary struct {
	// NodePool is the pool's name.
	NodePool string `json:"nodepool"`
	// WorkloadName is the child's name.
	WorkloadName string `json:"workloadName"`
	// Replicas is the child's spec.replicas.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the child's status.readyReplicas.
	ReadyReplicas int32 `json:"readyReplicas"`
	// AvailableCondition is the status of a Deployment's Available condition; for a StatefulSet, True iff
	// availableReplicas ≥ replicas.
	// +optional
	AvailableCondition string `json:"availableCondition,omitempty"`
}

// YurtAppDaemon keeps one Deployment or StatefulSet per selected NodePool, as a DaemonSet keeps one pod per
// node.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=yad,categories=yurt
// +kubebuilder:printcolumn:name="WorkloadTemplate",type="string",JSONPath=".status.templateType",description="The kind of workload rendered per pool"
// +kubebuilder:printcolumn:name="Pools",type="integer",JSONPath=".status.totalWorkloads",description="Children of selected pools"
// +kubebuilder:printcolumn:name="Ready",type="integer",JSONPath=".status.readyWorkloads",description="Children whose pods are all ready"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type YurtAppDaemon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   YurtAppDaemonSpec   `json:"spec,omitempty"`
	Status YurtAppDaemonStatus `json:"status,omitempty"`
}

// YurtAppDaemonList is a list of YurtAppDaemons.
//
// +kubebuilder:object:root=true
type YurtAppDaemonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []YurtAppDaemon `json:"items"`
}

// UnitedDaemonSet is the earlier name of YurtAppDaemon, served with identical behaviour.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=udd,categories=yurt
// +kubebuilder:printcolumn:name="WorkloadTemplate",type="string",JSONPath=".status.templateType",description="The kind of workload rendered per pool"
// +kubebuilder:printcolumn:name="Pools",type="integer",JSONPath=".status.totalWorkloads",description="Children of selected pools"
// +kubebuilder:printcolumn:name="Ready",type="integer",JSONPath=".status.readyWorkloads",description="Children whose pods are all ready"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type UnitedDaemonSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   YurtAppDaemonSpec   `json:"spec,omitempty"`
	Status YurtAppDaemonStatus `json:"status,omitempty"`
}

// UnitedDaemonSetList is a list of UnitedDaemonSets.
//
// +kubebuilder:object:root=true
type UnitedDaemonSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UnitedDaemonSet `json:"items"`
}
