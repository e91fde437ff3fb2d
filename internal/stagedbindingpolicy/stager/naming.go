package stager

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxBindingPolicyNameLength bounds the name of a generated BindingPolicy. Kubernetes allows 253 characters,
// but KubeStellar copies the BindingPolicy's (and its Binding's) name into label values, for instance the
// status.kubestellar.io/binding-policy label of every CombinedStatus, and a label value holds at most 63.
const MaxBindingPolicyNameLength = 63

// BindingPolicyName is the name of the BindingPolicy of stage in the StagedBindingPolicy sbp: the stager's
// "<sbp>.stage.<stage>" when that fits in 63 characters. Otherwise the first 24 characters of the policy's
// name and the first 22 of the stage's (each without a trailing "-" or "."), joined by ".stage.", and "-"
// followed by the first 8 hex digits of the SHA-256 of the long name, so that two long names that share
// their beginnings do not collide. Stage names have no dots, so two long names never collide either.
//
// drover finds its BindingPolicies by label and owner, never by parsing this name; the name a stage got is
// recorded in its status entry.
func BindingPolicyName(sbp, stage string) string {
	preferred := sbp + ".stage." + stage
	if len(preferred) <= MaxBindingPolicyNameLength {
		return preferred
	}
	sum := sha256.Sum256([]byte(preferred))
	a := strings.TrimRight(prefix(sbp, 24), "-.")
	b := strings.TrimRight(prefix(stage, 22), "-")
	return a + ".stage." + b + "-" + hex.EncodeToString(sum[:])[:8]
}

func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
