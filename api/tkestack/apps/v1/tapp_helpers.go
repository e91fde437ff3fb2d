package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Defaults of the fields the mutating webhook fills in; the controller applies them in memory when a field is
// absent.
var (
	// DefaultMaxUnavailable is the default of spec.updateStrategy.maxUnavailable.
	DefaultMaxUnavailable = intstr.FromInt32(1)
	// DefaultForceUpdateMaxUnavailable is the default of spec.updateStrategy.forceUpdate.maxUnavailable.
	DefaultForceUpdateMaxUnavailable = intstr.FromString("100%")
)

// EffectiveDefaultTemplateName returns the template name of ids absent from spec.templates: the capitalised
// compat field when set, else defaultTemplateName, else "default".
func (s *TAppSpec) EffectiveDefaultTemplateName() string {
	switch {
	case s.DefaultTemplateNameCompat != "":
		return s.DefaultTemplateNameCompat
	case s.DefaultTemplateName != "":
		return s.DefaultTemplateName
	default:
		return DefaultTemplateName
	}
}

// RollingTemplateName returns updateStrategy.template when set, else the effective default template name.
// Instances whose template name equals it are updated under maxUnavailable, the others are forced.
func (s *TAppSpec) RollingTemplateName() string {
	if s.UpdateStrategy.Template != "" {
		return s.UpdateStrategy.Template
	}
	return s.EffectiveDefaultTemplateName()
}

// TemplateNameOf returns the template name of the instance with the canonical id: templates[id] when the key
// exists, else the effective default template name.
func (s *TAppSpec) TemplateNameOf(id string) string {
	if name, ok := s.Templates[id]; ok {
		return name
	}
	return s.EffectiveDefaultTemplateName()
}

// TemplateByName resolves a template name: "default" is spec.template, any other name an entry of
// templatePool (templatePool["default"] is never consulted). It returns false when the name resolves to
// nothing. The result shares memory with s and must not be modified.
func (s *TAppSpec) TemplateByName(name string) (*corev1.PodTemplateSpec, bool) {
	if name == DefaultTemplateName {
		return &s.Template, true
	}
	if name == "" {
		return nil, false
	}
	t, ok := s.TemplatePool[name]
	if !ok {
		return nil, false
	}
	return &t, true
}

// EffectivePVCRetentionPolicy returns the PVC retention policy with absent members filled in from the
// default {whenDeleted: Delete, whenScaled: Retain} (TKEStack's behaviour; StatefulSet defaults to
// Retain/Retain).
func (s *TAppSpec) EffectivePVCRetentionPolicy() PersistentVolumeClaimRetentionPolicy {
	p := PersistentVolumeClaimRetentionPolicy{
		WhenDeleted: DeletePersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if s.PersistentVolumeClaimRetentionPolicy != nil {
		if w := s.PersistentVolumeClaimRetentionPolicy.WhenDeleted; w != "" {
			p.WhenDeleted = w
		}
		if w := s.PersistentVolumeClaimRetentionPolicy.WhenScaled; w != "" {
			p.WhenScaled = w
		}
	}
	return p
}

// IsTAppLabel reports whether key is one of the pod labels drover sets itself: tapp_instance_key,
// tapp_template_hash_key and tapp_uniq_hash_key.
func IsTAppLabel(key string) bool {
	return key == TAppInstanceKey || key == TAppHashKey || key == TAppUniqHashKey
}

// DefaultSelector returns the selector derived from the labels of spec.template minus the labels drover sets
// itself, or nil when nothing is left: the selector the mutating webhook sets when spec.selector is absent.
func (s *TAppSpec) DefaultSelector() *metav1.LabelSelector {
	l := TemplateLabelsWithoutTAppKeys(s.Template.Labels)
	if len(l) == 0 {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: l}
}

// TemplateLabelsWithoutTAppKeys returns a copy of labels without the labels drover sets itself, or nil when
// nothing is left.
func TemplateLabelsWithoutTAppKeys(labels map[string]string) map[string]string {
	var out map[string]string
	for k, v := range labels {
		if IsTAppLabel(k) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(labels))
		}
		out[k] = v
	}
	return out
}
