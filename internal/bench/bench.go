// Package bench holds drover's benchmark frame: scenarios that run against a live cluster (the local
// cluster, started fresh by cmd/drover-bench), measured in one run so every figure can be compared with
// the anchors measured next to it.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Env is what a scenario gets: the cluster and the run's parameters.
type Env struct {
	// Config is an admin client configuration for the cluster under test.
	Config *rest.Config
	// N is the object count of the scenarios that take one (--n).
	N int
	// Nodes are the names of the fake nodes pods may run on.
	Nodes []string
	// Log receives progress lines.
	Log io.Writer
}

// Figure is one measured number.
type Figure struct {
	Scenario string  `json:"scenario"`
	Metric   string  `json:"metric"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	// Note says what the number means or what it is compared with.
	Note string `json:"note,omitempty"`
}

// Scenario is one benchmark. Run returns its figures, or an error when it could not finish.
type Scenario struct {
	Name        string
	Description string
	Run         func(ctx context.Context, env Env) ([]Figure, error)
}

// Report is what a run writes to JSON.
type Report struct {
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
	N        int       `json:"n"`
	Nodes    int       `json:"nodes"`
	Figures  []Figure  `json:"figures"`
	Errors   []string  `json:"errors,omitempty"`
}

// Run executes the scenarios in order. A failing scenario is recorded and the others still run.
func Run(ctx context.Context, env Env, scenarios []Scenario) Report {
	rep := Report{Started: time.Now().UTC(), N: env.N, Nodes: len(env.Nodes)}
	for _, s := range scenarios {
		fmt.Fprintf(env.Log, "== %s: %s\n", s.Name, s.Description)
		figs, err := s.Run(ctx, env)
		rep.Figures = append(rep.Figures, figs...)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", s.Name, err))
			fmt.Fprintf(env.Log, "   FAILED: %v\n", err)
		}
	}
	rep.Duration = time.Since(rep.Started).Round(time.Second).String()
	return rep
}

// PrintTable writes the figures as an aligned table.
func PrintTable(w io.Writer, rep Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintf(tw, "scenario\tmetric\tvalue\tunit\t note\n")
	for _, f := range rep.Figures {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t %s\n", f.Scenario, f.Metric, formatValue(f.Value), f.Unit, f.Note)
	}
	_ = tw.Flush()
	if len(rep.Errors) > 0 {
		fmt.Fprintf(w, "errors:\n  %s\n", strings.Join(rep.Errors, "\n  "))
	}
}

func formatValue(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}

// WriteJSON writes the report to dir/<timestamp>.json and dir/latest.json and returns the first path.
func WriteJSON(dir string, rep Report) (string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding report: %w", err)
	}
	path := filepath.Join(dir, rep.Started.Format("20060102-150405")+".json")
	for _, p := range []string{path, filepath.Join(dir, "latest.json")} {
		if err := os.WriteFile(p, append(data, '\n'), 0o600); err != nil {
			return "", fmt.Errorf("writing %s: %w", p, err)
		}
	}
	return path, nil
}

// runInformer starts inf (of factory) with transform and the handlers set (add, update) and remove (delete), and
// waits until it has synced. It returns the function that stops it.
func runInformer(ctx context.Context, factory informers.SharedInformerFactory, inf cache.SharedIndexInformer,
	transform cache.TransformFunc, set, remove func(any)) (func(), error) {
	if err := inf.SetTransform(transform); err != nil {
		return nil, fmt.Errorf("setting the informer transform: %w", err)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: remove,
	}); err != nil {
		return nil, fmt.Errorf("adding the informer handler: %w", err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		close(stop)
		factory.Shutdown()
		return nil, errors.New("the informer did not sync")
	}
	return func() { close(stop); factory.Shutdown() }, nil
}
