package whitelist

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// document is the JSON form of the whitelist. encoding/json matches object keys to these fields without
// regard to case, so "Group", "group" and "GROUP" all fill Group; unknown keys are ignored.
type document struct {
	Workloads []rawEntry `json:"workloads"`
}

type rawEntry struct {
	Group        string `json:"group"`
	Version      string `json:"version"`
	Kind         string `json:"kind"`
	ReplicasPath string `json:"replicasPath"`
}

// Parse parses the value of DataKey: {"workloads":[{"Group":"…","Version":"…","Kind":"…","replicasPath":"…"},
// …]}, keys matched without regard to case and unknown keys ignored. A blank value gives the empty
// snapshot. Malformed JSON, or a value of the wrong shape (workloads not a list, a field not a string), is an
// error.
//
// Every value is trimmed of surrounding spaces. Entries are then dropped when their Kind is empty, when they
// name a built-in target kind (those need no whitelisting), or when an earlier entry has the same group and
// kind (the first one wins). An empty Version is kept empty: the caller resolves it.
func Parse(value string) (*Snapshot, error) {
	s, _, err := parse(value)
	return s, err
}

// ParseConfigMap parses the DataKey value of cm. A nil ConfigMap (it does not exist) or a missing key gives
// the empty snapshot and no error.
func ParseConfigMap(cm *corev1.ConfigMap) (*Snapshot, error) {
	return Parse(rawValue(cm))
}

// rawValue is the whitelist text of cm; "" when cm is nil or lacks the key.
func rawValue(cm *corev1.ConfigMap) string {
	if cm == nil {
		return ""
	}
	return cm.Data[DataKey]
}

// parse is Parse that also describes the entries it dropped, so that the store can log them.
func parse(value string) (*Snapshot, []string, error) {
	if strings.TrimSpace(value) == "" {
		return Empty(), nil, nil
	}
	var doc document
	if err := json.Unmarshal([]byte(value), &doc); err != nil {
		return nil, nil, fmt.Errorf("invalid whitelist JSON: %w", err)
	}
	var (
		entries []Entry
		dropped []string
		seen    = make(map[schema.GroupKind]bool, len(doc.Workloads))
	)
	for i, raw := range doc.Workloads {
		e := Entry{
			Group:        strings.TrimSpace(raw.Group),
			Version:      strings.TrimSpace(raw.Version),
			Kind:         strings.TrimSpace(raw.Kind),
			ReplicasPath: strings.TrimSpace(raw.ReplicasPath),
		}
		if reason := dropReason(e, seen); reason != "" {
			dropped = append(dropped, fmt.Sprintf("workloads[%d] (%s): %s", i, describe(e), reason))
			continue
		}
		seen[e.GroupKind()] = true
		entries = append(entries, e)
	}
	return newSnapshot(entries), dropped, nil
}

// dropReason says why e is left out of the snapshot; "" keeps it. seen holds the group-kinds already kept.
func dropReason(e Entry, seen map[schema.GroupKind]bool) string {
	switch {
	case e.Kind == "":
		return "no kind"
	case slices.Contains(kruisev1beta1.BuiltinTargetKinds, e.GroupKind()):
		return "a built-in kind, supported without whitelisting"
	case seen[e.GroupKind()]:
		return "duplicate group and kind, the first entry wins"
	}
	return ""
}

// describe renders an entry's group, version and kind for a log line.
func describe(e Entry) string {
	return fmt.Sprintf("group %q, version %q, kind %q", e.Group, e.Version, e.Kind)
}
