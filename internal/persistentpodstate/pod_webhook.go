package persistentpodstate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/webhook"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/persistentpodstate/inject"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsmetrics"
)

// The pod webhook steers a pod being created back to the topology its identity (its name) last ran on, from
// the PersistentPodState of its controller. It must never block pod creation: it fails open, answers within
// its timeout, and admits the pod unchanged on any internal error.

// podPersistentPodStatePath is the path the pod webhook is served at.
const podPersistentPodStatePath = "/mutate-pod-persistentpodstate"

// podWebhook declares the pod webhook. It never sees system namespaces, the manager's own namespace, or
// namespaces and pods labelled drover.dev/persistentpodstate=disabled; the API server sends it only pods with
// a name (not generateName) and a controller, since only those can have a recorded identity. It fails open
// within 5 seconds, and records events (so it is NoneOnDryRun).
func podWebhook() kit.Webhook {
	notIn := func(key string, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpNotIn, Values: values}
	}
	optOut := notIn(kruisev1beta1.LabelPersistentPodState, "disabled")
	return kit.Webhook{
		Name:     "mpod-persistentpodstate.drover.dev",
		Path:     podPersistentPodStatePath,
		Mutating: true,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
		FailurePolicy:      admissionregistrationv1.Ignore,
		SideEffects:        admissionregistrationv1.SideEffectClassNoneOnDryRun,
		TimeoutSeconds:     5,
		MatchPolicy:        admissionregistrationv1.Equivalent,
		ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			notIn(corev1.LabelMetadataName, "kube-system", "kube-public", "kube-node-lease", DefaultManagerNamespace), optOut,
		}},
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{optOut}},
		MatchConditions: []admissionregistrationv1.MatchCondition{
			{Name: "has-name", Expression: "has(object.metadata.name) && object.metadata.name != ''"},
			{Name: "has-controller", Expression: "has(object.metadata.ownerReferences) && " +
				"object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller)"},
		},
	}
}

// actionInjectPod is the event action of a node identity key that was not injected
// (kruisev1beta1.ReasonRecordedNodeGone).
const actionInjectPod = "InjectPod"

var podGK = corev1.SchemeGroupVersion.WithKind("Pod").GroupKind()

// podPersistentPodStateHandler is the pod webhook's handler.
type podPersistentPodStateHandler struct {
	opts    WebhookOptions
	decoder admission.Decoder
}

// newPodPersistentPodStateWebhook builds the pod webhook.
func newPodPersistentPodStateWebhook(scheme *runtime.Scheme, opts WebhookOptions) *admission.Webhook {
	if opts.NodeCheckTimeout <= 0 {
		opts.NodeCheckTimeout = DefaultNodeCheckTimeout
	}
	h := &podPersistentPodStateHandler{opts: opts, decoder: admission.NewDecoder(scheme)}
	return &admission.Webhook{Handler: h, RecoverPanic: ptr.To(true)}
}

// Handle steers a pod on CREATE. The patch holds only what was injected. A pod that does not decode is
// denied with a 422 listing the bad values at their field paths, like every denial of drover's webhooks. A
// panic is an internal error like any other: the pod is admitted unchanged.
func (h *podPersistentPodStateHandler) Handle(ctx context.Context, req admission.Request) (resp admission.Response) {
	if req.Operation != admissionv1.Create || req.SubResource != "" {
		return admission.Allowed("")
	}
	log := logf.FromContext(ctx)
	defer func() {
		if r := recover(); r != nil {
			log.Error(fmt.Errorf("panic: %v", r), "PersistentPodState pod webhook failed; the pod is admitted unchanged")
			ppsmetrics.PodAdmissions.WithLabelValues(ppsmetrics.AdmissionError).Inc()
			resp = admission.Allowed("internal error: the pod is not steered")
		}
	}()
	pod := &corev1.Pod{}
	if errs := webhook.DecodeObject(h.decoder, req.Object, pod); len(errs) > 0 {
		ppsmetrics.PodAdmissions.WithLabelValues(ppsmetrics.AdmissionError).Inc()
		return webhook.ErrorResponse(apierrors.NewInvalid(podGK, req.Name, errs), nil)
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	result, resp, err := h.steer(ctx, req, pod)
	if err != nil {
		log.Error(err, "PersistentPodState pod webhook failed; the pod is admitted unchanged", "pod", pod.Name)
		result, resp = ppsmetrics.AdmissionError, admission.Allowed("internal error: the pod is not steered")
	}
	ppsmetrics.PodAdmissions.WithLabelValues(result).Inc()
	return resp
}

// steer finds the PersistentPodState of the pod's controller and injects its entry for the pod. It returns
// the result label of the admission and the response.
func (h *podPersistentPodStateHandler) steer(ctx context.Context, req admission.Request, pod *corev1.Pod) (
	string, admission.Response, error) {
	notApplicable := admission.Allowed("")
	if pod.Name == "" { // generateName: the pod has no identity yet
		return ppsmetrics.AdmissionNotApplicable, notApplicable, nil
	}
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return ppsmetrics.AdmissionNotApplicable, notApplicable, nil
	}
	gk, ok := h.supported(owner)
	if !ok {
		return ppsmetrics.AdmissionNotApplicable, notApplicable, nil
	}
	list, err := ppsindex.ForTarget(ctx, h.opts.Reader, pod.Namespace, gk, owner.Name)
	if err != nil {
		return "", admission.Response{}, err
	}
	pps := ppsindex.Oldest(list)
	if pps == nil {
		return ppsmetrics.AdmissionNotApplicable, notApplicable, nil
	}
	before := steeringFieldsOf(pod)
	opts := inject.Options{IdentityKeys: h.opts.IdentityKeys}
	if h.opts.SkipMissingNode {
		opts.NodeGone = h.nodeGone(ctx)
	}
	res := inject.Pod(pod, pps, opts)
	ppsmetrics.NodeSelectorConflicts.Add(float64(len(res.Conflicts)))
	ppsmetrics.MissingNodeSkips.Add(float64(len(res.Dropped)))
	if len(res.Dropped) > 0 && !ptr.Deref(req.DryRun, false) && h.opts.Recorder != nil {
		h.opts.Recorder.Eventf(pps, pod, corev1.EventTypeWarning, kruisev1beta1.ReasonRecordedNodeGone, actionInjectPod,
			"Node %s recorded for pod %s no longer exists: %s not injected, so the pod may be scheduled elsewhere",
			pps.Status.PodStates[pod.Name].NodeName, pod.Name, strings.Join(res.Dropped, ", "))
	}
	if !res.Mutated {
		// No entry, or nothing of it to inject (no recorded label, only conflicts or dropped keys).
		return ppsmetrics.AdmissionNoState, admission.Allowed(""), nil
	}
	return ppsmetrics.AdmissionInjected, admission.Patched("", patchOps(before, pod)...), nil
}

// supported returns the group/kind of the controller owner and whether it may be tracked: a built-in target
// kind or a whitelisted one.
func (h *podPersistentPodStateHandler) supported(owner *metav1.OwnerReference) (schema.GroupKind, bool) {
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	gk := gv.WithKind(owner.Kind).GroupKind()
	return gk, err == nil && (slices.Contains(kruisev1beta1.BuiltinTargetKinds, gk) || (h.opts.Allowed != nil && h.opts.Allowed(gk)))
}

// nodeGone returns the check that a recorded node is gone: absent from the cache, and a live read within the
// node check budget answers NotFound. A node present in the cache (NotReady, cordoned or tainted alike), a
// read error or a timeout means it is not gone.
func (h *podPersistentPodStateHandler) nodeGone(ctx context.Context) func(string) bool {
	log := logf.FromContext(ctx)
	return func(name string) bool {
		err := h.opts.Reader.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
		if !apierrors.IsNotFound(err) {
			if err != nil {
				log.V(1).Info("reading the recorded node from the cache failed; its key is kept", "node", name, "error", err.Error())
			}
			return false
		}
		if h.opts.APIReader == nil {
			return false
		}
		liveCtx, cancel := context.WithTimeout(ctx, h.opts.NodeCheckTimeout)
		defer cancel()
		err = h.opts.APIReader.Get(liveCtx, client.ObjectKey{Name: name}, ppsindex.NodeMetadata())
		if err != nil && !apierrors.IsNotFound(err) {
			log.V(1).Info("reading the recorded node failed; its key is kept", "node", name, "error", err.Error())
		}
		return apierrors.IsNotFound(err)
	}
}

// steeringFields are the parts of a pod inject.Pod may change, as they were before it ran: which of the
// objects and lists holding them were present in the request (a JSON null decodes as absent), the
// annotations' and nodeSelector's entries, and the number of preferred node-affinity terms.
type steeringFields struct {
	annotations, nodeSelector map[string]string
	affinity, nodeAffinity    bool
	preferred                 int
}

func steeringFieldsOf(pod *corev1.Pod) steeringFields {
	f := steeringFields{
		annotations:  maps.Clone(pod.Annotations),
		nodeSelector: maps.Clone(pod.Spec.NodeSelector),
		affinity:     pod.Spec.Affinity != nil,
		preferred:    len(preferredTermsOf(pod)),
	}
	f.nodeAffinity = f.affinity && pod.Spec.Affinity.NodeAffinity != nil
	return f
}

func preferredTermsOf(pod *corev1.Pod) []corev1.PreferredSchedulingTerm {
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil {
		return nil
	}
	return pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
}

// patchOps returns the JSON patch operations that turn the request's pod (before) into pod, as inject.Pod
// changed it: inject.Pod only sets annotation and nodeSelector entries and appends preferred terms, so
// every operation is an "add". An entry that is new or changed is added under its map, or the whole map is
// added when the request had none; the new terms are appended to the request's list (path "/-"), or the
// list, the node affinity or the affinity holding them is added when the request lacked it. Nothing of the
// request is decoded again or diffed, and the patch holds only the injection.
func patchOps(before steeringFields, pod *corev1.Pod) []jsonpatch.JsonPatchOperation {
	ops := mapOps(nil, "/metadata/annotations", before.annotations, pod.Annotations)
	ops = mapOps(ops, "/spec/nodeSelector", before.nodeSelector, pod.Spec.NodeSelector)
	terms := preferredTermsOf(pod)
	if len(terms) <= before.preferred {
		return ops
	}
	added := terms[before.preferred:]
	nodeAffinity := &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: added}
	const preferredPath = "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution"
	switch {
	case !before.affinity:
		return append(ops, addOp("/spec/affinity", &corev1.Affinity{NodeAffinity: nodeAffinity}))
	case !before.nodeAffinity:
		return append(ops, addOp("/spec/affinity/nodeAffinity", nodeAffinity))
	case before.preferred == 0: // absent, null or empty: the list is set whole
		return append(ops, addOp(preferredPath, added))
	}
	for i := range added {
		ops = append(ops, addOp(preferredPath+"/-", &added[i]))
	}
	return ops
}

// mapOps appends to ops the operations that turn the string map at path from before into after, which
// holds every key of before: the whole map when before was absent, else one "add" per new or changed key,
// in key order.
func mapOps(ops []jsonpatch.JsonPatchOperation, path string, before, after map[string]string) []jsonpatch.JsonPatchOperation {
	if maps.Equal(after, before) {
		return ops
	}
	if before == nil {
		return append(ops, addOp(path, after))
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if old, ok := before[k]; !ok || old != after[k] {
			ops = append(ops, addOp(path+"/"+pointerEscaper.Replace(k), after[k]))
		}
	}
	return ops
}

func addOp(path string, value any) jsonpatch.JsonPatchOperation {
	return jsonpatch.JsonPatchOperation{Operation: "add", Path: path, Value: value}
}

// pointerEscaper escapes a key as a JSON pointer segment ("~" and "/").
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
