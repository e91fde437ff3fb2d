package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	"github.com/drover-dev/drover/internal/controller/persistentpodstate/inject"
	"github.com/drover-dev/drover/internal/controller/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/controller/persistentpodstate/ppsmetrics"
)

// The pod webhook steers a pod being created back to the topology its identity (its name) last ran on, from
// the PersistentPodState of its controller. It must never block pod creation: it fails open, answers within
// its timeout, and admits the pod unchanged on any internal error. The namespace and object selectors and the
// match conditions (only pods with a name and a controller) cannot be written as markers; hack/webhookpatch
// adds them to the generated manifest.
//
// +kubebuilder:webhook:path=/mutate-pod-persistentpodstate,mutating=true,failurePolicy=ignore,sideEffects=NoneOnDryRun,groups="",resources=pods,verbs=create,versions=v1,name=mpod-persistentpodstate.drover.dev,admissionReviewVersions=v1,timeoutSeconds=5,reinvocationPolicy=Never,matchPolicy=Equivalent

// podPersistentPodStatePath is the path the pod webhook is served at.
const podPersistentPodStatePath = "/mutate-pod-persistentpodstate"

// Event reason and action of a node identity key that was not injected.
const (
	reasonRecordedNodeGone = "RecordedNodeGone"
	actionInjectPod        = "InjectPod"
)

var podGK = corev1.SchemeGroupVersion.WithKind("Pod").GroupKind()

// podPersistentPodStateHandler is the pod webhook's handler.
type podPersistentPodStateHandler struct {
	opts    PersistentPodStateWebhookOptions
	decoder admission.Decoder
}

// newPodPersistentPodStateWebhook builds the pod webhook.
func newPodPersistentPodStateWebhook(scheme *runtime.Scheme, opts PersistentPodStateWebhookOptions) *admission.Webhook {
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
	if errs := decodeObject(h.decoder, req.Object, pod); len(errs) > 0 {
		ppsmetrics.PodAdmissions.WithLabelValues(ppsmetrics.AdmissionError).Inc()
		return errorResponse(apierrors.NewInvalid(podGK, req.Name, errs), nil)
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
		h.opts.Recorder.Eventf(pps, pod, corev1.EventTypeWarning, reasonRecordedNodeGone, actionInjectPod,
			"Node %s recorded for pod %s no longer exists: %s not injected, so the pod may be scheduled elsewhere",
			pps.Status.PodStates[pod.Name].NodeName, pod.Name, strings.Join(res.Dropped, ", "))
	}
	if !res.Mutated {
		// No entry, or nothing of it to inject (no recorded label, only conflicts or dropped keys).
		return ppsmetrics.AdmissionNoState, admission.Allowed(""), nil
	}
	patched, err := patchedPod(req.Object.Raw, before, pod)
	if err != nil {
		return "", admission.Response{}, err
	}
	return ppsmetrics.AdmissionInjected, admission.PatchResponseFromRaw(req.Object.Raw, patched), nil
}

// supported returns the group/kind of the controller owner and whether it may be tracked: a built-in target
// kind or a whitelisted one.
func (h *podPersistentPodStateHandler) supported(owner *metav1.OwnerReference) (schema.GroupKind, bool) {
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	gk := gv.WithKind(owner.Kind).GroupKind()
	return gk, err == nil && (slices.Contains(kruisev1alpha1.BuiltinTargetKinds, gk) || (h.opts.Allowed != nil && h.opts.Allowed(gk)))
}

// nodeGone returns the check that a recorded node is gone: absent from the cache, and a live read within the
// node check budget answers NotFound. A node present in the cache (NotReady, cordoned or tainted alike), a
// read error or a timeout means it is not gone.
func (h *podPersistentPodStateHandler) nodeGone(ctx context.Context) func(string) bool {
	log := logf.FromContext(ctx)
	return func(name string) bool {
		err := h.opts.Reader.Get(ctx, client.ObjectKey{Name: name}, ppsindex.NodeMetadata())
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

// steeringFields are the parts of a pod inject.Pod may change, as they were before it ran.
type steeringFields struct {
	annotations, nodeSelector map[string]string
	preferred                 int
}

func steeringFieldsOf(pod *corev1.Pod) steeringFields {
	return steeringFields{
		annotations:  maps.Clone(pod.Annotations),
		nodeSelector: maps.Clone(pod.Spec.NodeSelector),
		preferred:    len(preferredTermsOf(pod)),
	}
}

func preferredTermsOf(pod *corev1.Pod) []corev1.PreferredSchedulingTerm {
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil {
		return nil
	}
	return pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
}

// patchedPod returns the request's pod raw with what inject.Pod changed on pod: annotations and nodeSelector
// entries set key by key, and the appended preferred terms added after the request's own. Nothing else of
// the request's JSON is re-encoded, so the patch holds only the injection.
func patchedPod(raw []byte, before steeringFields, pod *corev1.Pod) ([]byte, error) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decoding the pod: %w", err)
	}
	var err error
	set := func(value any, path ...string) {
		if err == nil {
			doc, err = applyPatchOperation(doc, "add", jsonPointer(path...), value)
		}
	}
	for k, v := range pod.Annotations {
		if old, ok := before.annotations[k]; !ok || old != v {
			set(v, "metadata", "annotations", k)
		}
	}
	for k, v := range pod.Spec.NodeSelector {
		if old, ok := before.nodeSelector[k]; !ok || old != v {
			set(v, "spec", "nodeSelector", k)
		}
	}
	if terms := preferredTermsOf(pod); len(terms) > before.preferred {
		set(appendTerms(doc, terms[before.preferred:]), "spec", "affinity", "nodeAffinity",
			"preferredDuringSchedulingIgnoredDuringExecution")
	}
	if err != nil {
		return nil, fmt.Errorf("patching the pod: %w", err)
	}
	return json.Marshal(doc)
}

// appendTerms returns the request's preferred node-affinity terms (doc is the request's pod) followed by
// terms.
func appendTerms(doc any, terms []corev1.PreferredSchedulingTerm) []any {
	var list []any
	if m, ok := doc.(map[string]any); ok {
		spec, _ := m["spec"].(map[string]any)
		affinity, _ := spec["affinity"].(map[string]any)
		nodeAffinity, _ := affinity["nodeAffinity"].(map[string]any)
		list, _ = nodeAffinity["preferredDuringSchedulingIgnoredDuringExecution"].([]any)
	}
	out := slices.Clone(list)
	for _, t := range terms {
		var v any
		if b, err := json.Marshal(t); err == nil && json.Unmarshal(b, &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// jsonPointer joins path segments into a JSON pointer, escaping "~" and "/".
func jsonPointer(path ...string) string {
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(esc.Replace(p))
	}
	return b.String()
}
