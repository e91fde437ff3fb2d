package render

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

const (
	// DeploymentNameLimit keeps the ReplicaSet name <deployment>-<pod-template-hash ≤ 10> within 253.
	DeploymentNameLimit = 242
	// StatefulSetNameLimit keeps the pods' controller-revision-hash label <statefulset>-<hash ≤ 10> within
	// 63.
	StatefulSetNameLimit = 52
	// fallbackHashLen is the number of hex characters of the fallback name's hash.
	fallbackHashLen = 10
)

// ChildName returns the deterministic name of the child of owner for pool: "<owner>-<pool>" when
// it is a valid name within the kind's limit, else a prefix of it cut to the limit minus 11 plus "-" and
// 10 hex characters of SHA-256 over "<owner>/<pool>". StatefulSet names are DNS labels, so the fallback
// replaces dots with dashes. An unknown kind gets the Deployment rule.
func ChildName(kind openyurtv1alpha1.TemplateType, owner, pool string) string {
	base := owner + "-" + pool
	limit := nameLimit(kind)
	if kind == openyurtv1alpha1.StatefulSetTemplateType {
		if len(base) <= limit && len(validation.IsDNS1123Label(base)) == 0 {
			return base
		}
		base = strings.ReplaceAll(base, ".", "-")
	} else if len(base) <= limit && len(validation.IsDNS1123Subdomain(base)) == 0 {
		return base
	}
	sum := sha256.Sum256([]byte(owner + "/" + pool))
	h := hex.EncodeToString(sum[:])[:fallbackHashLen]
	prefix := base
	if maxPrefix := limit - fallbackHashLen - 1; len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	prefix = strings.TrimRight(prefix, "-.")
	if prefix == "" {
		return h
	}
	return prefix + "-" + h
}

func nameLimit(kind openyurtv1alpha1.TemplateType) int {
	if kind == openyurtv1alpha1.StatefulSetTemplateType {
		return StatefulSetNameLimit
	}
	return DeploymentNameLimit
}
