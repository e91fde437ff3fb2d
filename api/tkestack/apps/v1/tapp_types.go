package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Label, annotation, condition and template names of the TApp API. The tkestack.io and tapp_* names keep
// TKEStack's values so that drover and TKEStack's tapp-controller can take over from each other; drover's own
// names are under drover.dev/.
const (
	// TAppInstanceKey is the pod label holding the instance id; with the pod name it maps a pod to its id.
	TAppInstanceKey = "tapp_instance_key"
	// TAppHashKey is the pod label holding the hash of the pod's resolved template (metadata and spec).
	TAppHashKey = "tapp_template_hash_key"
	// TAppUniqHashKey is the pod label holding the hash of the resolved template spec with in-place-updatable
	// images blanked.
	TAppUniqHashKey = "tapp_uniq_hash_key"
	// InPlaceUpdateReady is the readiness gate appended to every pod and the pod condition type drover owns.
	InPlaceUpdateReady corev1.PodConditionType = "tkestack.io/InPlaceUpdate"
	// InPlaceUpdateStateKey is the pod annotation set to "true" when an image in-place update starts (never removed).
	InPlaceUpdateStateKey = "tkestack.io/inplace-update-state"
	// InPlaceUpdateStateValue is the value of InPlaceUpdateStateKey.
	InPlaceUpdateStateValue = "true"
	// InPlaceUpdateRecordKey is the pod annotation holding drover's JSON record of the in-place update in progress.
	InPlaceUpdateRecordKey = "drover.dev/inplace-update-record"
	// UpstreamHashesKey is the pod annotation in which drover keeps the hash labels another controller
	// (TKEStack's) had written on a pod when drover rewrites them, so that a rollback can put them back.
	UpstreamHashesKey = "drover.dev/upstream-hashes"
	// PortMappingKey is Galaxy's pod annotation; the live pod's value survives every in-place update.
	PortMappingKey = "tkestack.io/portmapping"
	// DefaultTemplateName is the template name that resolves to spec.template.
	DefaultTemplateName = "default"
	// MaxInstanceID is the largest id accepted as a key of spec.templates and spec.statuses.
	MaxInstanceID = 2147483646
)

// Condition types of TApp's status.conditions (a drover addition).
const (
	// TAppAvailable is True when enough desired-running instances are available.
	TAppAvailable = "Available"
	// TAppProgressing is True while some desired-running instance lacks a pod, is outdated or is being updated.
	TAppProgressing = "Progressing"
	// TAppReplicaFailure is True when the last pass could not realise some instance.
	TAppReplicaFailure = "ReplicaFailure"
)

// Condition reasons and event reasons (PascalCase).
const (
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	ReasonRolloutInProgress          = "RolloutInProgress"
	ReasonRolloutComplete            = "RolloutComplete"
	ReasonPaused                     = "Paused"
	ReasonNoFailures                 = "NoFailures"
	ReasonFailedCreate               = "FailedCreate"
	ReasonFailedDelete               = "FailedDelete"
	ReasonFailedUpdate               = "FailedUpdate"
	ReasonTemplateNotFound           = "TemplateNotFound"
	ReasonPodNameConflict            = "PodNameConflict"
	ReasonMalformedPod               = "MalformedPod"
	ReasonInvalidSpec                = "InvalidSpec"
	ReasonSuccessfulCreate           = "SuccessfulCreate"
	ReasonSuccessfulDelete           = "SuccessfulDelete"
	ReasonSuccessfulUpdate           = "SuccessfulUpdate"
	ReasonInPlaceUpdateCompleted     = "InPlaceUpdateCompleted"
	ReasonTemplatesPruned            = "TemplatesPruned"
	ReasonAdopted                    = "Adopted"
	ReasonReleased                   = "Released"
)

// InstanceStatus is the state of one instance: desired in spec.statuses (Killed or Running), observed in
// status.statuses.
type InstanceStatus string

const (
	InstanceNotCreated InstanceStatus = "NotCreated"
	InstancePending    InstanceStatus = "Pending"
	InstanceRunning    InstanceStatus = "Running"
	InstanceUpdating   InstanceStatus = "Updating"
	InstancePodFailed  InstanceStatus = "PodFailed"
	InstancePodSucc    InstanceStatus = "PodSucc"
	InstanceKilling    InstanceStatus = "Killing"
	InstanceKilled     InstanceStatus = "Killed"
	InstanceFailed     InstanceStatus = "Failed"
	InstanceSucc       InstanceStatus = "Succ"
	InstanceUnknown    InstanceStatus = "Unknown"
)

// IsFinished reports whether s is a finished instance status: Killed, Failed or Succ.
func (s InstanceStatus) IsFinished() bool {
	return s == InstanceKilled || s == InstanceFailed || s == InstanceSucc
}

// AppStatus is the state of a whole TApp.
type AppStatus string

const (
	AppPending AppStatus = "Pending"
	AppRunning AppStatus = "Running"
	AppFailed  AppStatus = "Failed"
	AppSucc    AppStatus = "Succ"
	AppKilled  AppStatus = "Killed"
)

// IsFinished reports whether s is a finished app status: Failed, Succ or Killed.
func (s AppStatus) IsFinished() bool {
	return s == AppFailed || s == AppSucc || s == AppKilled
}

// PersistentVolumeClaimRetentionPolicyType says what happens to an instance's PVCs.
// +kubebuilder:validation:Enum=Retain;Delete
type PersistentVolumeClaimRetentionPolicyType string

const (
	// RetainPersistentVolumeClaimRetentionPolicyType keeps the PVCs.
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	// DeletePersistentVolumeClaimRetentionPolicyType deletes the PVCs (through an ownerReference).
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// PersistentVolumeClaimRetentionPolicy says what happens to the PVCs created from volumeClaimTemplates, a
// drover addition. A missing member takes its value from the default {whenDeleted: Delete, whenScaled:
// Retain}, TKEStack's behaviour.
type PersistentVolumeClaimRetentionPolicy struct {
	// WhenDeleted applies when the TApp is deleted. Default Delete.
	// +optional
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`
	// WhenScaled applies to the PVCs of ids at or above spec.replicas after a scale-down. Default Retain.
	// +optional
	WhenScaled PersistentVolumeClaimRetentionPolicyType `json:"whenScaled,omitempty"`
}

// UpdateStrategy says how outdated pods are updated.
type UpdateStrategy struct {
	// Template is the rolling template name: instances using it are updated under maxUnavailable, all others
	// under forceUpdate.maxUnavailable. Empty means "follow defaultTemplateName".
	// +optional
	Template string `json:"template,omitempty"`

	// MaxUnavailable is the rolling budget: an integer >= 1 or a percentage "1%".."100%" of the desired-running
	// instances, rounded up. Defaulted to 1.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// ForceUpdate holds the budget of instances that are not on the rolling template.
	// +optional
	ForceUpdate ForceUpdateStrategy `json:"forceUpdate,omitempty"`

	// Paused stops updating and recreating outdated pods while true (a drover addition).
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// ForceUpdateStrategy is the budget of the force path.
type ForceUpdateStrategy struct {
	// MaxUnavailable is the force budget, same format as updateStrategy.maxUnavailable. Defaulted to "100%".
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// MaxReplicas bounds spec.replicas: status.statuses holds an entry of about 20 bytes per instance, and a
// TApp must stay well under etcd's object size limit (1.5 MB by default). The CRD schema enforces it, for
// kubectl scale and an HPA too.
const MaxReplicas = 50000

// MaxTemplatePool bounds spec.templatePool: every entry is a whole pod template, and the admission webhook
// checks each one with a dry-run pod create, all within the webhook's time limit.
const MaxTemplatePool = 32

// MaxVolumeClaimTemplates bounds spec.volumeClaimTemplates: each claim template is one PVC per instance and
// one volume in every pod.
const MaxVolumeClaimTemplates = 16

// TAppSpec is the desired state of a TApp.
type TAppSpec struct {
	// Replicas is the number of instances, with ids 0..replicas-1. Killed instances keep their id and count.
	// At most MaxReplicas (drover): the status lists every instance and the TApp must fit in one etcd object.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=50000
	// +optional
	Replicas int32 `json:"replicas"`

	// Selector is a label query over the pods of this TApp. Defaulted from the labels of spec.template.
	// Immutable once set.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Template is the pod template named "default".
	// +optional
	Template corev1.PodTemplateSpec `json:"template"`

	// TemplatePool holds named pod templates.
	// At most 32 (MaxTemplatePool): each entry is a whole pod template, and admission checks each one with a
	// dry-run pod create within the webhook's time limit.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	TemplatePool map[string]corev1.PodTemplateSpec `json:"templatePool,omitempty"`

	// Statuses holds the desired state of single instances, id -> Killed or Running.
	// At most 50000 (MaxReplicas): one entry per instance, and a TApp has at most that many.
	// +kubebuilder:validation:MaxProperties=50000
	// +optional
	Statuses map[string]InstanceStatus `json:"statuses,omitempty"`

	// Templates holds the template name of single instances, id -> template name.
	// At most 50000 (MaxReplicas): one entry per instance, and a TApp has at most that many.
	// +kubebuilder:validation:MaxProperties=50000
	// +optional
	Templates map[string]string `json:"templates,omitempty"`

	// UpdateStrategy says how outdated pods are updated.
	// +optional
	UpdateStrategy UpdateStrategy `json:"updateStrategy,omitempty"`

	// ForceDeletePod force-deletes terminating pods on lost nodes so that they can be replaced.
	// +optional
	ForceDeletePod bool `json:"forceDeletePod,omitempty"`

	// AutoDeleteUnusedTemplate removes templatePool entries no instance uses any more.
	// +optional
	AutoDeleteUnusedTemplate bool `json:"autoDeleteUnusedTemplate,omitempty"`

	// NeverMigrate keeps finished pods in place instead of recreating them elsewhere.
	// +optional
	NeverMigrate bool `json:"neverMigrate,omitempty"`

	// VolumeClaimTemplates are claims each instance gets its own PVC of, named <claim>-<tapp>-<id>.
	// At most 16 (MaxVolumeClaimTemplates): each claim template is one PVC per instance and one volume in
	// every pod; workloads need one to a few.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	// +listType=atomic
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// ServiceName is the headless Service governing the pods: pods get hostname <tapp>-<id> and this subdomain.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// DefaultTemplateName is the template of ids absent from templates. Defaulted to "default".
	// +optional
	DefaultTemplateName string `json:"defaultTemplateName"`

	// DefaultTemplateName, capitalised, is an alias of defaultTemplateName accepted for compatibility: the
	// TKEStack tutorial uses this spelling. When non-empty it replaces defaultTemplateName (the webhook moves
	// it over and clears it).
	// +optional
	DefaultTemplateNameCompat string `json:"DefaultTemplateName,omitempty"`

	// MinReadySeconds is how long a pod must be ready to count as available (a drover addition).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// PersistentVolumeClaimRetentionPolicy says what happens to the PVCs of volumeClaimTemplates (a drover addition).
	// Absent means {whenDeleted: Delete, whenScaled: Retain}.
	// +optional
	PersistentVolumeClaimRetentionPolicy *PersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`

	// DeletePodAfterAppFinish deletes the pods of finished instances once the app has finished (a drover addition).
	// Absent means the manager's --tapp-delete-pod-after-app-finish flag.
	// +optional
	DeletePodAfterAppFinish *bool `json:"deletePodAfterAppFinish,omitempty"`
}

// TAppStatus is the observed state of a TApp.
type TAppStatus struct {
	// ObservedGeneration is the metadata.generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of statuses entries other than NotCreated.
	// +optional
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of statuses entries equal to Running.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// UpdatedReplicas is the number of desired-running instances whose pod is up to date (a drover addition).
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// AvailableReplicas is the number of desired-running instances whose pod is available (a drover addition).
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// ScaleLabelSelector is the selector in string form, for the scale subresource.
	// +optional
	ScaleLabelSelector string `json:"scaleLabelSelector,omitempty"`

	// AppStatus is the state of the whole app.
	// +optional
	AppStatus AppStatus `json:"appStatus,omitempty"`

	// Statuses holds the observed state of each instance, id -> status.
	// +optional
	Statuses map[string]InstanceStatus `json:"statuses,omitempty"`

	// Conditions are Available, Progressing and ReplicaFailure (a drover addition).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TApp runs pods with stable integer identities, per-instance templates, in-place update and kill/restart of
// single instances.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.scaleLabelSelector
// +kubebuilder:resource:path=tapps,singular=tapp,scope=Namespaced
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="Number of instances"
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.replicas",description="Instances that exist or existed"
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="Running instances"
// +kubebuilder:printcolumn:name="AVAILABLE",type="integer",JSONPath=".status.availableReplicas",description="Available instances"
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="Up-to-date instances",priority=1
// +kubebuilder:printcolumn:name="STATUS",type="string",JSONPath=".status.appStatus",description="State of the app"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type TApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TAppSpec   `json:"spec,omitempty"`
	Status TAppStatus `json:"status,omitempty"`
}

// TAppList is a list of TApps.
//
// +kubebuilder:object:root=true
type TAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TApp `json:"items"`
}
