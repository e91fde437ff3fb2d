package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	"github.com/drover-dev/drover/internal/scheme"
)

// sbpAnchorName is the ConfigMap of the anchor writes; sbpAnchorLabel selects it for the watch.
const (
	sbpAnchorName  = "sbp-anchor"
	sbpAnchorLabel = "bench.drover.dev/sbp-anchor"
)

// sbpWatch records what the scenario measures at the time this process receives each watch event: the
// policies, the BindingPolicies and the CombinedStatuses of the bench namespace, and the anchor ConfigMap.
// Everything is read under mu; the handlers keep the cache's objects, which nobody modifies.
type sbpWatch struct {
	held string // the held object's name
	stop func()

	mu   sync.Mutex
	sbps map[string]*communityv1alpha1.StagedBindingPolicy
	// activeAt is, per policy and stage, the first event with status.activeStage on the stage.
	activeAt map[string]map[string]time.Time
	bps      map[string]sbpBPSeen
	css      map[string]sbpCSSeen // by namespace/name
	// heldCS is, per BindingPolicy, the held object's CombinedStatus values in event order.
	heldCS map[string][]sbpCSPoint
	// updates counts the update events of each policy and BindingPolicy (by kind/name).
	updates map[string]int
	// anchorAt is the event time of each anchor write, by its sequence number.
	anchorAt map[string]time.Time
	// last is the time of the last event of a policy, BindingPolicy or CombinedStatus.
	last time.Time
}

// sbpBPSeen is what the watch keeps of a BindingPolicy.
type sbpBPSeen struct {
	policy    string // its drover.dev/staged-binding-policy label
	rv        string
	createdAt time.Time // the event that added it
}

// sbpCSSeen is what the watch keeps of a CombinedStatus.
type sbpCSSeen struct {
	bp, object       string
	count, available float64
	ok               bool // both columns were read
	bytes            int
}

// sbpCSPoint is one event of the held object's CombinedStatus.
type sbpCSPoint struct {
	at               time.Time
	count, available float64
	ok               bool
}

// startSBPWatch starts the watches of the scenario and waits until they have synced.
func startSBPWatch(ctx context.Context, cfg *rest.Config, ns, held string) (*sbpWatch, error) {
	cs := &unstructured.Unstructured{}
	cs.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind("CombinedStatus"))
	c, err := cache.New(cfg, cache.Options{
		Scheme:           scheme.New(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			cs: {Namespaces: map[string]cache.Config{ns: {}}},
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{ns: {}},
				Label: labels.SelectorFromSet(labels.Set{sbpAnchorLabel: "true"})},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("building the watches: %w", err)
	}
	w := &sbpWatch{
		held: held, sbps: map[string]*communityv1alpha1.StagedBindingPolicy{}, activeAt: map[string]map[string]time.Time{},
		bps: map[string]sbpBPSeen{}, css: map[string]sbpCSSeen{}, heldCS: map[string][]sbpCSPoint{},
		updates: map[string]int{}, anchorAt: map[string]time.Time{},
	}
	handlers := map[client.Object]func(obj any, deleted bool){
		&communityv1alpha1.StagedBindingPolicy{}: w.onPolicy,
		&controlv1alpha1.BindingPolicy{}:         w.onBindingPolicy,
		cs:                                       w.onCombinedStatus,
		&corev1.ConfigMap{}:                      w.onAnchor,
	}
	for obj, h := range handlers {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { h(obj, false) },
			UpdateFunc: func(_, obj any) { h(obj, false) },
			DeleteFunc: func(obj any) { h(obj, true) },
		}); err != nil {
			return nil, fmt.Errorf("handling %T events: %w", obj, err)
		}
	}
	watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(watchCtx) }()
	w.stop = func() { cancel(); <-done }
	if !c.WaitForCacheSync(ctx) {
		w.stop()
		return nil, errors.New("the scenario's watches did not sync")
	}
	return w, nil
}

// sbpUnwrap returns the object of an event, a tombstone's included.
func sbpUnwrap(obj any) client.Object {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, _ := obj.(client.Object)
	return o
}

func (w *sbpWatch) onPolicy(obj any, deleted bool) {
	now := time.Now()
	sbp, ok := sbpUnwrap(obj).(*communityv1alpha1.StagedBindingPolicy)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = now
	if deleted {
		delete(w.sbps, sbp.Name)
		return
	}
	if old, ok := w.sbps[sbp.Name]; ok && old.ResourceVersion != sbp.ResourceVersion {
		w.updates["sbp/"+sbp.Name]++
	}
	w.sbps[sbp.Name] = sbp
	if st := sbp.Status.ActiveStage; st != "" {
		if w.activeAt[sbp.Name] == nil {
			w.activeAt[sbp.Name] = map[string]time.Time{}
		}
		if _, seen := w.activeAt[sbp.Name][st]; !seen {
			w.activeAt[sbp.Name][st] = now
		}
	}
}

func (w *sbpWatch) onBindingPolicy(obj any, deleted bool) {
	now := time.Now()
	bp, ok := sbpUnwrap(obj).(*controlv1alpha1.BindingPolicy)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = now
	if deleted {
		delete(w.bps, bp.Name)
		return
	}
	seen, known := w.bps[bp.Name]
	switch {
	case !known:
		seen = sbpBPSeen{policy: bp.Labels[communityv1alpha1.LabelStagedBindingPolicy], createdAt: now}
	case seen.rv != bp.ResourceVersion:
		w.updates["bp/"+bp.Name]++
	}
	seen.rv = bp.ResourceVersion
	w.bps[bp.Name] = seen
}

func (w *sbpWatch) onCombinedStatus(obj any, deleted bool) {
	now := time.Now()
	u, ok := sbpUnwrap(obj).(*unstructured.Unstructured)
	if !ok {
		return
	}
	key := u.GetNamespace() + "/" + u.GetName()
	seen := sbpCSSeen{bp: u.GetLabels()[controlv1alpha1.LabelCombinedStatusBindingPolicy], object: u.GetLabels()[controlv1alpha1.LabelCombinedStatusName]}
	if !deleted {
		seen.count, seen.available, seen.ok = sbpColumns(u.Object)
		if raw, err := u.MarshalJSON(); err == nil {
			seen.bytes = len(raw)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = now
	if deleted {
		delete(w.css, key)
		return
	}
	w.css[key] = seen
	if seen.object == w.held {
		w.heldCS[seen.bp] = append(w.heldCS[seen.bp], sbpCSPoint{at: now, count: seen.count, available: seen.available, ok: seen.ok})
	}
}

func (w *sbpWatch) onAnchor(obj any, deleted bool) {
	now := time.Now()
	cm, ok := sbpUnwrap(obj).(*corev1.ConfigMap)
	if !ok || deleted {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.anchorAt[cm.Data["seq"]]; !seen {
		w.anchorAt[cm.Data["seq"]] = now
	}
}

// sbpColumns reads the count and available columns of the first row of the scenario collector's result in a
// CombinedStatus's content; ok is false when they are not there.
func sbpColumns(obj map[string]any) (count, available float64, ok bool) {
	results, _, _ := unstructured.NestedSlice(obj, "results")
	for _, r := range results {
		res, _ := r.(map[string]any)
		if res["name"] != sbpCollector {
			continue
		}
		names, _, _ := unstructured.NestedStringSlice(res, "columnNames")
		rows, _, _ := unstructured.NestedSlice(res, "rows")
		if len(rows) == 0 {
			return 0, 0, false
		}
		row, _ := rows[0].(map[string]any)
		cols, _, _ := unstructured.NestedSlice(row, "columns")
		var okCount, okAvail bool
		for i, name := range names {
			if i >= len(cols) {
				break
			}
			col, _ := cols[i].(map[string]any)
			v, err := strconv.ParseFloat(fmt.Sprint(col["float"]), 64)
			switch {
			case err != nil:
			case name == "count":
				count, okCount = v, true
			case name == "available":
				available, okAvail = v, true
			}
		}
		return count, available, okCount && okAvail
	}
	return 0, 0, false
}

// sbpSatisfies reports whether a CombinedStatus's values meet the stages' condition for dests destinations.
func sbpSatisfies(count, available float64, dests int) bool {
	return count >= float64(dests) && available >= float64(dests)
}

// satisfiedAt is the time of the first event of the held object's CombinedStatus of BindingPolicy bp whose
// values meet the condition for dests destinations.
func (w *sbpWatch) satisfiedAt(bp string, dests int) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.heldCS[bp] {
		if p.ok && sbpSatisfies(p.count, p.available, dests) {
			return p.at, true
		}
	}
	return time.Time{}, false
}

// promotedAt is the time the policy was seen on stage and the time the stage's BindingPolicy bp was seen
// created; zero for what was not seen yet.
func (w *sbpWatch) promotedAt(policy, stage, bp string) (active, created time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.activeAt[policy][stage], w.bps[bp].createdAt
}

// waiting returns "" when the policy waits at stage on AwaitingStatus, its BindingPolicy bp current and
// the only one it has, with a CombinedStatus of bp for each of the objects, and nothing was seen for quiet;
// otherwise what is missing.
func (w *sbpWatch) waiting(policy, stage, bp string, objects int, quiet time.Duration) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	sbp := w.sbps[policy]
	if sbp == nil {
		return "the policy is not seen"
	}
	if why := waitingStatus(sbp, stage, objects); why != "" {
		return why
	}
	for name, seen := range w.bps {
		if seen.policy == policy && name != bp {
			return "BindingPolicy " + name + " is still there"
		}
	}
	if n := w.countCS(bp, nil); n != objects {
		return fmt.Sprintf("%d CombinedStatuses of %s, want %d", n, bp, objects)
	}
	if since := time.Since(w.last); since < quiet {
		return "events " + since.Round(time.Millisecond).String() + " ago"
	}
	return ""
}

// waitingStatus returns "" when the policy's status says it waits at stage on AwaitingStatus with its
// BindingPolicy current and every one of objects with status; otherwise what differs.
func waitingStatus(sbp *communityv1alpha1.StagedBindingPolicy, stage string, objects int) string {
	st := &sbp.Status
	if st.ActiveStage != stage || st.ObservedGeneration != sbp.Generation {
		return fmt.Sprintf("active stage %q at generation %d", st.ActiveStage, st.ObservedGeneration)
	}
	prog := meta.FindStatusCondition(st.Conditions, communityv1alpha1.ConditionProgressing)
	if prog == nil || prog.Reason != communityv1alpha1.ReasonAwaitingStatus {
		return fmt.Sprintf("phase %s, Progressing %v", st.Phase, condSummary(prog))
	}
	if ready := meta.FindStatusCondition(st.Conditions, communityv1alpha1.ConditionBindingPolicyReady); ready == nil || ready.Status != metav1.ConditionTrue {
		return "BindingPolicyReady " + condSummary(ready)
	}
	for _, e := range st.Stages {
		if e.Name != stage {
			continue
		}
		if e.LastEvaluation == nil || int(e.LastEvaluation.ObjectsWithStatus) != objects {
			return fmt.Sprintf("last evaluation %+v", e.LastEvaluation)
		}
		return ""
	}
	return "no history entry for " + stage
}

func condSummary(c *metav1.Condition) string {
	if c == nil {
		return "absent"
	}
	return string(c.Status) + "/" + c.Reason
}

// countCS counts the CombinedStatuses of bp (for which match, when set, holds). Callers hold mu.
func (w *sbpWatch) countCS(bp string, match func(sbpCSSeen) bool) int {
	n := 0
	for _, cs := range w.css {
		if cs.bp == bp && (match == nil || match(cs)) {
			n++
		}
	}
	return n
}

// countCSWith is countCS under the lock.
func (w *sbpWatch) countCSWith(bp string, match func(sbpCSSeen) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.countCS(bp, match)
}

// csBytes is the size of the largest CombinedStatus seen of bp (its JSON, managedFields stripped).
func (w *sbpWatch) csBytes(bp string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, cs := range w.css {
		if cs.bp == bp {
			n = max(n, cs.bytes)
		}
	}
	return n
}

// gone returns "" when the watch sees neither the policy nor a BindingPolicy or CombinedStatus of it.
func (w *sbpWatch) gone(policy string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.sbps[policy]; ok {
		return "the policy"
	}
	for name, seen := range w.bps {
		if seen.policy == policy {
			return "BindingPolicy " + name
		}
	}
	for key, cs := range w.css {
		if strings.HasPrefix(cs.bp, policy+".") {
			return "CombinedStatus " + key
		}
	}
	return ""
}

// writes is the number of update events of the policy and of its BindingPolicies seen so far.
func (w *sbpWatch) writes(policy string) (sbp, bps int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, seen := range w.bps {
		if seen.policy == policy {
			bps += w.updates["bp/"+name]
		}
	}
	return w.updates["sbp/"+policy], bps
}

// anchorSeen is the event time of anchor write seq.
func (w *sbpWatch) anchorSeen(seq string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.anchorAt[seq]
	return t, ok
}

// sbpLogger is a logger writing to out, indented and named.
func sbpLogger(out io.Writer, name string) logr.Logger {
	var mu sync.Mutex
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(out, "   ["+name+"]", prefix, args)
	}, funcr.Options{})
}
