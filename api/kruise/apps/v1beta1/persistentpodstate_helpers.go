package v1beta1

import "strings"

// ParseCommaList parses the value of a comma-list annotation (AnnotationRequiredPersistentTopology,
// AnnotationPreferredPersistentTopology, AnnotationPersistentPodAnnotations): it splits s on ",", trims the
// spaces around each item, and drops empty items and repeated ones, keeping each item's first occurrence in
// its order. The result is nil when no item remains.
func ParseCommaList(s string) []string {
	var out []string
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" || seen[item] {
			continue
		}
		seen[item] = true
		out = append(out, item)
	}
	return out
}
