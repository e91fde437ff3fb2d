package kubestellarsim

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/scheme"
)

// reports gives one report per destination of the Binding, sorted by cluster, and how long until a held-back
// automatic status is due (0 if none is).
//
// As in KubeStellar, a destination that has not reported still counts: it is evaluated as a blank report,
// whose returned.status is an empty map and whose lastReturnedUpdateTimestamp is the zero time. A counting
// column counts it; an expression reading returned.status.<field> fails for it with "no such key".
//
// A status that did come back is shaped as the cluster's API server would have written it: the top-level
// status fields a built-in kind leaves out when they are zero are left out (a Deployment with no available
// replicas has no availableReplicas key), so a subject reading such a field fails as it does in KubeStellar.
func (s *Sim) reports(b *controlv1alpha1.Binding, ref ObjectRef, obj *unstructured.Unstructured) ([]clusterReport, time.Duration, error) {
	now := s.cfg.Now()
	gvk := obj.GroupVersionKind()
	out := make([]clusterReport, 0, len(b.Spec.Destinations))
	var wait time.Duration
	for _, d := range b.Spec.Destinations {
		status, changed, found := s.scripts.lookup(d.ClusterID, ref)
		if !found && s.cfg.AutoStatus != nil {
			var w time.Duration
			var err error
			status, changed, w, err = s.auto.observe(obj.GetUID(), d.ClusterID, now, s.cfg.AutoStatusDelay, func() (map[string]any, error) {
				return normalizeStatus(s.cfg.AutoStatus(d.ClusterID, obj))
			})
			if err != nil {
				return nil, 0, fmt.Errorf("computing the automatic status of %s in %s: %w", ref, d.ClusterID, err)
			}
			if w > 0 && (wait == 0 || w < wait) {
				wait = w
			}
		}
		if status == nil {
			out = append(out, blankReport(d.ClusterID))
			continue
		}
		out = append(out, clusterReport{Cluster: d.ClusterID, Status: returnedStatus(gvk, status), Updated: changed})
	}
	return sortedReports(out), wait, nil
}

// blankReport is what a destination that has not reported is evaluated as: an empty status, never updated.
func blankReport(cluster string) clusterReport {
	return clusterReport{Cluster: cluster, Status: map[string]any{}}
}

// returnedStatus is status as a cluster returns it for an object of kind gvk: for a kind the scheme knows,
// without the top-level fields its Go type leaves out when zero (omitempty on a number, string, bool, list or
// map; a pointer only when null). Other kinds, and every nested field, are returned as scripted. status is
// not modified; a copy is made only when a field goes.
func returnedStatus(gvk schema.GroupVersionKind, status map[string]any) map[string]any {
	rules := omittedStatusFields(gvk)
	var out map[string]any
	for key, v := range status {
		rule, ok := rules[key]
		if !ok || !rule.omits(v) {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(status))
			for k, x := range status {
				out[k] = x
			}
		}
		delete(out, key)
	}
	if out == nil {
		return status
	}
	return out
}

// omitRule says when a Go client leaves a status field out of the JSON it writes.
type omitRule int

const (
	omitWhenZero omitRule = iota // omitempty on a value: 0, "", false, an empty list or map
	omitWhenNull                 // omitempty on a pointer: only when nil (a pointer to 0 is written)
)

func (r omitRule) omits(v any) bool {
	if v == nil {
		return true
	}
	if r == omitWhenNull {
		return false
	}
	switch x := v.(type) {
	case bool:
		return !x
	case string:
		return x == ""
	case int64:
		return x == 0
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

var (
	omitRulesMu sync.Mutex
	omitRules   = map[schema.GroupVersionKind]map[string]omitRule{}
	omitScheme  = scheme.New()
)

// omittedStatusFields returns the rules of the top-level status fields of a kind the scheme knows, by JSON
// name; nil for a kind it does not know (custom resources) or one without a status struct.
func omittedStatusFields(gvk schema.GroupVersionKind) map[string]omitRule {
	omitRulesMu.Lock()
	defer omitRulesMu.Unlock()
	if rules, ok := omitRules[gvk]; ok {
		return rules
	}
	var rules map[string]omitRule
	if obj, err := omitScheme.New(gvk); err == nil {
		rules = statusOmitRules(reflect.TypeOf(obj))
	}
	omitRules[gvk] = rules
	return rules
}

// statusOmitRules reads the JSON tags of the Status struct of a typed object.
func statusOmitRules(t reflect.Type) map[string]omitRule {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	f, ok := t.FieldByName("Status")
	if !ok || f.Type.Kind() != reflect.Struct {
		return nil
	}
	rules := map[string]omitRule{}
	for i := range f.Type.NumField() {
		field := f.Type.Field(i)
		name, opts, _ := strings.Cut(field.Tag.Get("json"), ",")
		if name == "" || name == "-" || !strings.Contains(","+opts+",", ",omitempty,") {
			continue
		}
		switch field.Type.Kind() {
		case reflect.Pointer, reflect.Interface:
			rules[name] = omitWhenNull
		case reflect.Struct, reflect.Array:
			// encoding/json never omits these
		default:
			rules[name] = omitWhenZero
		}
	}
	return rules
}
