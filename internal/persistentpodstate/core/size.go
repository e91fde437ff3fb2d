package core

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

// DefaultSizeLimit is the default bound, in bytes, of a PersistentPodState's estimated stored size. etcd
// refuses objects over 1,572,864 bytes by default; the 172 KB left cover what the estimate leaves out: the
// fixed part of metadata.managedFields (each manager's header and the spec's fields, a few hundred bytes per
// manager), the conditions written with the status, and a margin.
const DefaultSizeLimit = 1_400_000

// The stored object carries metadata.managedFields, which the cache drops and the estimate must add back.
// The status writer's entry there lists every record as a field set, in the JSON form:
//
//	"f:<pod name>":{".":{},"f:nodeName":{},"f:nodeTopologyLabels":{".":{},"f:<key>":{},...},"f:annotations":{...}},
//
// Counting the bytes: a record costs len(pod name) + 15 for its own `"f:":{".":{},` and its closing brace
// and comma; each field costs its name + 8 (`"f:":{}` and a comma); each map field 7 more for its
// `".":{},`; each map key its length + 8. A record as the controller writes it has nodeName and, unless the
// node lacks every tracked key, nodeTopologyLabels: 15 + 8 + 15 = 38 bytes besides the lengths, which
// EntryOverhead rounds up to 40. Annotations add the same 15 for their map (AnnotationsOverhead) and every
// key adds 8 (KeyOverhead). The sum is an upper bound of the record's share of managedFields, measured
// against a real field manager by the tests: at 5,000 records with two keys the estimate is about 1.5% above
// the stored size (the fixed part of managedFields is left to DefaultSizeLimit's margin).
const (
	// EntryOverhead is the per-record managedFields allowance besides the lengths of the pod name, the field
	// names and the map keys: the record's own skeleton and those of nodeName and nodeTopologyLabels.
	EntryOverhead = 40
	// AnnotationsOverhead is the managedFields allowance of a record's annotations map, when present,
	// besides the lengths of its field name and keys.
	AnnotationsOverhead = 16
	// KeyOverhead is the managedFields allowance of each key of a record's nodeTopologyLabels or
	// annotations, besides the key's length: `"f:":{}` and a comma.
	KeyOverhead = 8
)

// unencodable is the size given to an object that cannot be encoded: far above any limit, so that nothing
// is added to it, yet small enough that sums do not overflow.
const unencodable = math.MaxInt / 4

// Estimate returns the estimated stored size of pps with podStates as its status.podStates: the JSON
// encoding of the object without metadata.managedFields (with apiVersion and kind, which the cache may have
// cleared), plus, for each record, the managedFields allowance of managedSize. It does not modify pps.
func Estimate(pps *kruisev1beta1.PersistentPodState, podStates map[string]kruisev1beta1.PodState) int {
	n := baseSize(pps, podStates)
	for name, e := range podStates {
		n += managedSize(name, e)
	}
	return n
}

// baseSize returns the length of the JSON encoding of pps with podStates as its records, without
// managedFields.
func baseSize(pps *kruisev1beta1.PersistentPodState, podStates map[string]kruisev1beta1.PodState) int {
	cp := *pps // shallow: only fields of the copy are replaced, nothing shared is written
	cp.ManagedFields = nil
	cp.Status.PodStates = podStates
	if cp.APIVersion == "" || cp.Kind == "" {
		cp.APIVersion = kruisev1beta1.GroupVersion.String()
		cp.Kind = "PersistentPodState"
	}
	raw, err := json.Marshal(&cp)
	if err != nil {
		return unencodable
	}
	return len(raw)
}

// managedSize is the managedFields allowance of one record.
func managedSize(name string, e kruisev1beta1.PodState) int {
	n := len(name) + EntryOverhead
	if e.NodeName != "" {
		n += len("nodeName")
	}
	if len(e.NodeTopologyLabels) > 0 {
		n += len("nodeTopologyLabels") + keysSize(e.NodeTopologyLabels)
	}
	if len(e.Annotations) > 0 {
		n += len("annotations") + AnnotationsOverhead + keysSize(e.Annotations)
	}
	return n
}

func keysSize(m map[string]string) int {
	n := 0
	for k := range m {
		n += len(k) + KeyOverhead
	}
	return n
}

// emptyPodStatesSize bounds what the first record adds besides itself to an object without records:
// `,"podStates":{}`.
const emptyPodStatesSize = len(`,"podStates":{}`)

// Guard keeps want within limit bytes, as estimated by Estimate. Removals, and updates of records that
// already exist in pps.Status.PodStates, always apply, even over the limit. New records (names absent from
// the current status) are added in ascending ordinal order, then by name (names without an ordinal after
// those with one), while the estimate stays within the limit; the first that does not fit stops the
// additions. It returns the podStates to write (nil if empty) and how many new records were left out.
//
// The estimate is incremental: one encoding of the object with the kept records, plus each new record's
// encoded size and managedFields allowance.
func Guard(pps *kruisev1beta1.PersistentPodState, want map[string]kruisev1beta1.PodState,
	limit int) (map[string]kruisev1beta1.PodState, int) {
	current := pps.Status.PodStates
	out := make(map[string]kruisev1beta1.PodState, len(want))
	var added []string
	for name, e := range want {
		if _, ok := current[name]; ok {
			out[name] = e
		} else {
			added = append(added, name)
		}
	}
	if len(added) > 0 {
		size := Estimate(pps, out)
		if len(out) == 0 {
			size += emptyPodStatesSize
		}
		slices.SortFunc(added, compareByOrdinal)
		for i, name := range added {
			cost := encodedEntrySize(name, want[name]) + managedSize(name, want[name])
			if size+cost > limit {
				return nilIfEmpty(out), len(added) - i
			}
			size += cost
			out[name] = want[name]
		}
	}
	return nilIfEmpty(out), 0
}

// encodedEntrySize bounds what one record adds to the object's JSON: `"<name>":<record>,`.
func encodedEntrySize(name string, e kruisev1beta1.PodState) int {
	k, errK := json.Marshal(name)
	v, errV := json.Marshal(e)
	if errK != nil || errV != nil {
		return unencodable
	}
	return len(k) + 1 + len(v) + 1
}

// compareByOrdinal orders pod names by ascending ordinal, then by name; names without an ordinal come last,
// by name.
func compareByOrdinal(a, b string) int {
	oa, okA := OrdinalOf(a)
	ob, okB := OrdinalOf(b)
	switch {
	case okA && !okB:
		return -1
	case !okA && okB:
		return 1
	case okA && okB && oa != ob:
		return cmp.Compare(oa, ob)
	}
	return strings.Compare(a, b)
}

func nilIfEmpty(m map[string]kruisev1beta1.PodState) map[string]kruisev1beta1.PodState {
	if len(m) == 0 {
		return nil
	}
	return m
}
