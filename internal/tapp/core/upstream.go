package core

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// UpstreamHashes are the hash labels another controller (TKEStack's) wrote on a pod, kept in the annotation
// tkestackv1.UpstreamHashesKey when drover rewrites them. TKEStack's hashes cannot be computed outside
// TKEStack (they hash a dump of Go structs of its Kubernetes version), so these are the only copies: a
// rollback to TKEStack restores them, and TKEStack then finds its pods as it left them.
type UpstreamHashes struct {
	// Template and Uniq are the values of tapp_template_hash_key and tapp_uniq_hash_key.
	Template string `json:"template"`
	Uniq     string `json:"uniq"`
	// For is drover's template hash of the template they were computed from, when the pod matched its
	// template as drover took it over (a restamp): another pod with that drover hash has the same upstream
	// hashes. Empty when the template had changed (an in-place update at the takeover).
	For string `json:"for,omitempty"`
}

// UpstreamHashesOf returns the hashes kept on a pod; false when it has none (or they do not decode).
func UpstreamHashesOf(pod *corev1.Pod) (UpstreamHashes, bool) {
	raw, ok := pod.Annotations[tkestackv1.UpstreamHashesKey]
	if !ok {
		return UpstreamHashes{}, false
	}
	var h UpstreamHashes
	if err := json.Unmarshal([]byte(raw), &h); err != nil || h.Template == "" {
		return UpstreamHashes{}, false
	}
	return h, true
}

// keepUpstreamHashes records on out the foreign hash labels of pod (another controller's: not drover's
// format and not empty) before drover rewrites them, unless out keeps some already. forHash is drover's hash
// of the template they stand for ("" when unknown).
func keepUpstreamHashes(pod, out *corev1.Pod, forHash string) {
	tpl, uniq := pod.Labels[tkestackv1.TAppHashKey], pod.Labels[tkestackv1.TAppUniqHashKey]
	if tpl == "" || IsCurrentHashFormat(tpl) {
		return
	}
	if _, ok := out.Annotations[tkestackv1.UpstreamHashesKey]; ok {
		return
	}
	raw, err := json.Marshal(UpstreamHashes{Template: tpl, Uniq: uniq, For: forHash})
	if err != nil {
		return
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[tkestackv1.UpstreamHashesKey] = string(raw)
}
