package render

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/rand"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// revisionPrefixLimit keeps "<prefix>-<hash ≤ 10>" within a 63-character label value.
const revisionPrefixLimit = 52

// RevisionData returns the ControllerRevision data of spec: spec.workloadTemplate only, as the
// replace patch {"spec":{"workloadTemplate":{…,"$patch":"replace"}}}. The encoding is deterministic
// (encoding/json sorts map keys), so equal templates give equal bytes.
func RevisionData(spec *openyurtv1alpha1.YurtAppDaemonSpec) ([]byte, error) {
	if spec == nil {
		return nil, fmt.Errorf("no spec")
	}
	raw, err := json.Marshal(spec.WorkloadTemplate)
	if err != nil {
		return nil, fmt.Errorf("encoding the workload template: %w", err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return nil, fmt.Errorf("decoding the workload template: %w", err)
	}
	tmpl["$patch"] = "replace"
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"workloadTemplate": tmpl}})
	if err != nil {
		return nil, fmt.Errorf("encoding the revision data: %w", err)
	}
	return data, nil
}

// RevisionHash returns the revision hash of data, computed exactly as Kubernetes' controller
// history does (k8s.io/kubernetes/pkg/controller/history.HashControllerRevision, which uses the 32-bit
// FNV-1 hash): the data bytes, then the decimal collision count when it is set, safe-encoded.
func RevisionHash(data []byte, collisionCount *int32) string {
	hf := fnv.New32()
	_, _ = hf.Write(data)
	if collisionCount != nil {
		_, _ = hf.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(hf.Sum32()), 10))
}

// RevisionName returns the ControllerRevision name "<prefix>-<hash>": the prefix is the owner name
// cut to 52 characters and stripped of trailing '-' and '.', so the name fits a 63-character label value.
func RevisionName(owner, hash string) string {
	prefix := owner
	if len(prefix) > revisionPrefixLimit {
		prefix = prefix[:revisionPrefixLimit]
	}
	return strings.TrimRight(prefix, "-.") + "-" + hash
}
