package testutil

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
)

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}

func mergeMap(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}

func copyTaints(t []corev1.Taint) []corev1.Taint {
	if t == nil {
		return nil
	}
	out := make([]corev1.Taint, len(t))
	for i := range t {
		t[i].DeepCopyInto(&out[i])
	}
	return out
}
