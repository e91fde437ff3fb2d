package kubestellarsim

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// Script ConfigMaps: with Config.ScriptConfigMaps, every ConfigMap labelled ScriptConfigMapLabel=true holds
// under the data key ScriptConfigMapKey a YAML list of ScriptEntry, for example
//
//   - cluster: "*"            # every destination
//     group: apps
//     resource: deployments
//     namespace: default
//     name: nginx
//     status: {availableReplicas: 2, readyReplicas: 2}
//   - cluster: prod-1         # a later entry wins
//     group: apps
//     resource: deployments
//     namespace: default
//     name: nginx
//     status: {availableReplicas: 0}
//
// The ConfigMaps are read in namespace/name order, and each one's entries in list order.
const (
	ScriptConfigMapLabel = "kssim.drover.dev/script"
	ScriptConfigMapKey   = "script.yaml"
	// AllClusters as the cluster of a script entry stands for every destination.
	AllClusters = "*"
)

// ScriptEntry says what status one destination (or every destination, with AllClusters) returns for one
// workload object. A nil Status means the destination has not reported, and hides an AutoStatus result.
type ScriptEntry struct {
	Cluster   string         `json:"cluster"`
	Group     string         `json:"group"`
	Resource  string         `json:"resource"`
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Status    map[string]any `json:"status"`
}

// Ref returns the object the entry is about.
func (e *ScriptEntry) Ref() ObjectRef {
	return ObjectRef{Group: e.Group, Resource: e.Resource, Namespace: e.Namespace, Name: e.Name}
}

// ParseScript reads the YAML list of a script ConfigMap.
func ParseScript(data []byte) ([]ScriptEntry, error) {
	var entries []ScriptEntry
	if err := yaml.Unmarshal(data, &entries, yaml.DisallowUnknownFields); err != nil {
		return nil, fmt.Errorf("parsing the script: %w", err)
	}
	for i := range entries {
		e := &entries[i]
		if e.Cluster == "" || e.Resource == "" || e.Name == "" {
			return nil, fmt.Errorf("script entry %d: cluster, resource and name are required", i)
		}
	}
	return entries, nil
}

// normalizeStatus deep-copies a status through JSON, so that whole numbers become int64 as in objects read
// from the API server, and later changes by the caller do not leak in.
func normalizeStatus(status map[string]any) (map[string]any, error) {
	if status == nil {
		return nil, nil
	}
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encoding a returned status: %w", err)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decoding a returned status: %w", err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// scripted is the status scripted for one object in one cluster (or AllClusters).
type scripted struct {
	status  map[string]any // nil: has not reported
	seq     uint64         // order of writing: a later entry wins over AllClusters or a specific cluster
	changed time.Time      // when the status last changed
}

// scriptStore holds the scripted returned statuses.
type scriptStore struct {
	mu    sync.RWMutex
	seq   uint64
	byRef map[ObjectRef]map[string]*scripted
}

func newScriptStore() *scriptStore {
	return &scriptStore{byRef: map[ObjectRef]map[string]*scripted{}}
}

// set records a normalized status; the change time moves only when the status differs.
func (st *scriptStore) set(cluster string, ref ObjectRef, status map[string]any, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.setLocked(st.byRef, cluster, ref, status, now)
}

func (st *scriptStore) setLocked(into map[ObjectRef]map[string]*scripted, cluster string, ref ObjectRef,
	status map[string]any, now time.Time) {
	st.seq++
	clusters := into[ref]
	if clusters == nil {
		clusters = map[string]*scripted{}
		into[ref] = clusters
	}
	changed := now
	if old := st.byRef[ref][cluster]; old != nil && reflect.DeepEqual(old.status, status) {
		changed = old.changed
	}
	clusters[cluster] = &scripted{status: status, seq: st.seq, changed: changed}
}

// clear forgets the status scripted for an object in a cluster (or AllClusters).
func (st *scriptStore) clear(cluster string, ref ObjectRef) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.byRef[ref], cluster)
	if len(st.byRef[ref]) == 0 {
		delete(st.byRef, ref)
	}
}

// replace swaps the whole script for normalized entries, keeping the change time of unchanged statuses, and
// returns the objects whose script changed.
func (st *scriptStore) replace(entries []ScriptEntry, now time.Time) map[ObjectRef]bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	next := map[ObjectRef]map[string]*scripted{}
	for i := range entries {
		st.setLocked(next, entries[i].Cluster, entries[i].Ref(), entries[i].Status, now)
	}
	changed := map[ObjectRef]bool{}
	for ref, clusters := range next {
		if !sameScript(st.byRef[ref], clusters) {
			changed[ref] = true
		}
	}
	for ref := range st.byRef {
		if _, kept := next[ref]; !kept {
			changed[ref] = true
		}
	}
	st.byRef = next
	return changed
}

func sameScript(a, b map[string]*scripted) bool {
	if len(a) != len(b) {
		return false
	}
	for cluster, x := range a {
		y, ok := b[cluster]
		if !ok || !reflect.DeepEqual(x.status, y.status) {
			return false
		}
	}
	return true
}

// lookup returns the status scripted for an object in a cluster: the later of the cluster's own entry and
// the AllClusters entry. found is false when neither exists.
func (st *scriptStore) lookup(cluster string, ref ObjectRef) (status map[string]any, changed time.Time, found bool) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	clusters := st.byRef[ref]
	own, all := clusters[cluster], clusters[AllClusters]
	pick := own
	if pick == nil || (all != nil && all.seq > own.seq) {
		pick = all
	}
	if pick == nil {
		return nil, time.Time{}, false
	}
	return pick.status, pick.changed, true
}

// autoState is what the simulator remembers of the AutoStatus of one object in one cluster.
type autoState struct {
	firstSeen time.Time
	status    map[string]any
	changed   time.Time
}

// autoMemo remembers, per object UID and cluster, when the object was first seen in a destination and the
// last AutoStatus result with the time it changed.
type autoMemo struct {
	mu    sync.Mutex
	byUID map[types.UID]map[string]*autoState
}

func newAutoMemo() *autoMemo {
	return &autoMemo{byUID: map[types.UID]map[string]*autoState{}}
}

// observe returns the automatic status of an object in a cluster. Until delay has passed since the object
// was first seen in that cluster it returns nil and how long is left.
func (m *autoMemo) observe(uid types.UID, cluster string, now time.Time, delay time.Duration,
	compute func() (map[string]any, error)) (status map[string]any, changed time.Time, wait time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	clusters := m.byUID[uid]
	if clusters == nil {
		clusters = map[string]*autoState{}
		m.byUID[uid] = clusters
	}
	st := clusters[cluster]
	if st == nil {
		st = &autoState{firstSeen: now}
		clusters[cluster] = st
	}
	if due := st.firstSeen.Add(delay); now.Before(due) {
		return nil, time.Time{}, due.Sub(now), nil
	}
	next, err := compute()
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	if !reflect.DeepEqual(next, st.status) {
		st.status, st.changed = next, now
	}
	return st.status, st.changed, 0, nil
}

// forget drops everything remembered of a deleted object.
func (m *autoMemo) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byUID, uid)
}

// DeploymentsAutoStatus is an AutoStatusFunc for Deployments: every destination reports replicas,
// readyReplicas, availableReplicas and updatedReplicas equal to spec.replicas (1 when unset); for a
// Deployment scaled to zero the fields are left out of the returned status, as a cluster leaves them out.
// Other objects get no status, so their destinations count as not reported.
func DeploymentsAutoStatus(_ string, obj *unstructured.Unstructured) map[string]any {
	gvk := obj.GroupVersionKind()
	if gvk.Group != "apps" || gvk.Kind != "Deployment" {
		return nil
	}
	replicas, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil || !found {
		replicas = 1
	}
	return map[string]any{
		"replicas":          replicas,
		"readyReplicas":     replicas,
		"availableReplicas": replicas,
		"updatedReplicas":   replicas,
	}
}
