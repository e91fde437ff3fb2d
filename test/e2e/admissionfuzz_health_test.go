package e2e

// The admission fuzz's watch on the manager: its process, its log and its metrics.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-dev/drover/internal/localcluster"
	"github.com/drover-dev/drover/internal/measure"
)

// managerWatch follows the manager from the start of the fuzz: the process it was, where its log was, and
// its metrics.
type managerWatch struct {
	scraper  *measure.Scraper
	proc     localcluster.ProcessRecord
	logStart int64
}

// watchManager records the manager's process and log position, and sets up a metrics reader authenticated
// as a ServiceAccount of ns (its role and binding go at the end of the spec).
func watchManager(ns string) *managerWatch {
	w := &managerWatch{logStart: fileSize(cluster.ManagerLog())}
	for _, p := range cluster.Processes() {
		if p.Name == localcluster.Manager {
			w.proc = p
		}
	}
	Expect(w.proc.PID).NotTo(BeZero(), "the cluster records no manager process")
	cs, err := kubernetes.NewForConfig(cluster.Config)
	Expect(err).NotTo(HaveOccurred())
	scraper, cleanup, err := measure.NewManagerScraper(suiteCtx, k8sClient, cs, cluster.MetricsAddr, ns, "drover-e2e-fuzz-metrics")
	DeferCleanup(cleanup)
	Expect(err).NotTo(HaveOccurred(), "reading the manager's metrics")
	w.scraper = scraper
	return w
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// sample reads the manager's metrics.
func (w *managerWatch) sample() []measure.Sample {
	s, err := w.scraper.Scrape(suiteCtx)
	Expect(err).NotTo(HaveOccurred())
	return s
}

// perController sums a metric by its controller label.
func perController(samples []measure.Sample, metric string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		if s.Name == metric && s.Labels["controller"] != "" {
			out[s.Labels["controller"]] += s.Value
		}
	}
	return out
}

func reconcileErrors(samples []measure.Sample) map[string]float64 {
	return perController(samples, "controller_runtime_reconcile_errors_total")
}

// panics counts the reconcile and webhook panics the manager recovered from.
func panics(samples []measure.Sample) float64 {
	return measure.Sum(samples, "controller_runtime_reconcile_panics_total", nil) +
		measure.Sum(samples, "controller_runtime_webhook_panics_total", nil)
}

// subtract returns a - b by key, keys of a.
func subtract(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		out[k] = v - b[k]
	}
	return out
}

// waitQuiet polls the metrics every second until no controller has queued or running work three samples
// in a row, at most for limit. It returns how long that took and whether it happened.
func (w *managerWatch) waitQuiet(limit time.Duration) (time.Duration, bool) {
	began, quiet := time.Now(), 0
	err := wait.PollUntilContextTimeout(suiteCtx, time.Second, limit, true, func(context.Context) (bool, error) {
		s := w.sample()
		busy := measure.Sum(s, "controller_runtime_active_workers", nil)
		for _, v := range perController(s, "workqueue_depth") {
			busy += v
		}
		if busy == 0 {
			quiet++
		} else {
			quiet = 0
		}
		return quiet >= 3, nil
	})
	return time.Since(began), err == nil
}

// expectAlive checks that the manager process the spec started with still runs, that the cluster saw no
// process exit, and that the manager's log since the start names no panic.
func (w *managerWatch) expectAlive() []string {
	var problems []string
	if err := cluster.Err(); err != nil {
		problems = append(problems, "a cluster process exited: "+err.Error())
	}
	if !localcluster.Running(w.proc.PID, w.proc.Path) {
		problems = append(problems, fmt.Sprintf("the manager (pid %d) no longer runs", w.proc.PID))
	}
	for _, p := range cluster.Processes() {
		if p.Name == localcluster.Manager && p.PID != w.proc.PID {
			problems = append(problems, fmt.Sprintf("the manager was restarted: pid %d, then %d", w.proc.PID, p.PID))
		}
	}
	lines := w.logLines(func(l string) bool { return strings.Contains(strings.ToLower(l), "panic") })
	if len(lines) > 0 {
		problems = append(problems, fmt.Sprintf("the manager's log names a panic %d time(s), first: %s", len(lines), cut(lines[0], 2000)))
	}
	return problems
}

// logLines returns the lines of the manager's log written since the spec started that keep returns true
// for.
func (w *managerWatch) logLines(keep func(string) bool) []string {
	return logLinesFrom(cluster.ManagerLog(), w.logStart, keep)
}

func logLinesFrom(file string, offset int64, keep func(string) bool) []string {
	f, err := os.Open(filepath.Clean(file))
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	_, err = f.Seek(offset, io.SeekStart)
	Expect(err).NotTo(HaveOccurred())
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if keep(sc.Text()) {
			out = append(out, sc.Text())
		}
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	return out
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// reconcileErrorLine is what the fuzz reads of a "Reconciler error" line of the manager's JSON log.
type reconcileErrorLine struct {
	Controller string `json:"controller"`
	Kind       string `json:"controllerKind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Error      string `json:"error"`
}

// erroringObject is an object its controller failed on, with how often and the first error.
type erroringObject struct {
	reconcileErrorLine
	Count int
}

// key names the object as fuzzRun.history does.
func (e erroringObject) key() string { return e.Kind + " " + e.Namespace + "/" + e.Name }

var uidLike = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// erroringObjects groups the "Reconciler error" lines of the manager's log since offset by object, most
// frequent first.
func erroringObjects(offset int64) []erroringObject {
	byKey := map[string]*erroringObject{}
	for _, l := range logLinesFrom(cluster.ManagerLog(), offset, func(l string) bool { return strings.Contains(l, "Reconciler error") }) {
		var e reconcileErrorLine
		if json.Unmarshal([]byte(l), &e) != nil {
			e.Error = l
		}
		generatorObject(&e)
		o := &erroringObject{reconcileErrorLine: e}
		if prev, ok := byKey[o.key()]; ok {
			o = prev
		} else {
			o.Error = uidLike.ReplaceAllString(cut(strings.Join(strings.Fields(e.Error), " "), 400), "<uid>")
			byKey[o.key()] = o
		}
		o.Count++
	}
	out := make([]erroringObject, 0, len(byKey))
	for _, k := range sortedKeys(byKey) {
		out = append(out, *byKey[k])
	}
	slices.SortStableFunc(out, func(a, b erroringObject) int { return b.Count - a.Count })
	return out
}
