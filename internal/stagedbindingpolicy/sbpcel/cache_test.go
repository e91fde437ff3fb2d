package sbpcel

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// compileCounts counts a Cache's OnCompile calls.
type compileCounts struct{ hits, misses atomic.Uint64 }

func (n *compileCounts) onCompile(hit bool) {
	if hit {
		n.hits.Add(1)
	} else {
		n.misses.Add(1)
	}
}

func TestCompileCacheCounts(t *testing.T) {
	var n compileCounts
	hookHits, hookMisses := &n.hits, &n.misses
	c := NewCache(Options{OnCompile: n.onCompile})
	calls := []struct {
		kind    Kind
		expr    string
		wantErr bool
	}{
		{Condition, readmeCondition, false},        // miss
		{Condition, readmeCondition, false},        // hit
		{FailureCondition, readmeCondition, false}, // miss: another kind
		{Filter, readmeFilter, false},              // miss
		{Filter, `combinedStatus != null`, true},   // miss: a compile error
		{Filter, `combinedStatus != null`, true},   // hit: the error is cached
		{Filter, readmeFilter, false},              // hit
	}
	var first *Program
	var firstErr error
	for i, call := range calls {
		prg, err := c.Compile(call.kind, call.expr)
		if (err != nil) != call.wantErr {
			t.Fatalf("call %d: error = %v, want error %v", i, err, call.wantErr)
		}
		switch i {
		case 0:
			first = prg
		case 1:
			if prg != first {
				t.Errorf("a hit returned another program")
			}
		case 4:
			firstErr = err
		case 5:
			if !errors.Is(err, firstErr) {
				t.Errorf("a cached compile error is not the same error")
			}
		}
	}
	if hits, misses := hookHits.Load(), hookMisses.Load(); hits != 3 || misses != 4 {
		t.Errorf("OnCompile counted %d hits and %d misses, want 3 and 4", hits, misses)
	}
}

func TestCompileCacheIsBounded(t *testing.T) {
	var lastHit bool
	c := NewCache(Options{ProgramCacheSize: 10, OnCompile: func(hit bool) { lastHit = hit }}) // raised to the minimum
	compile := func(i int, wantHit bool, why string) {
		t.Helper()
		if _, err := c.Compile(Filter, fmt.Sprintf("stage.index == %d", i)); err != nil {
			t.Fatal(err)
		}
		if lastHit != wantHit {
			t.Errorf("expression %d: hit = %v, want %v (%s)", i, lastHit, wantHit, why)
		}
	}
	for i := range DefaultProgramCacheSize {
		compile(i, false, "first compile")
	}
	compile(0, true, "the cache holds DefaultProgramCacheSize expressions, not ProgramCacheSize")
	compile(DefaultProgramCacheSize, false, "first compile, evicting the least recently used (1)")
	compile(1, false, "evicted: the cache is bounded")
	compile(0, true, "recently used, kept")
}

func TestStatusValuesCache(t *testing.T) {
	c := NewCache(Options{})
	objOnly, err := c.Compile(Condition, readmeCondition)
	if err != nil {
		t.Fatal(err)
	}
	withResults, err := c.Compile(Condition, `results['deployments-aggregator'][0].count == 1.0`)
	if err != nil {
		t.Fatal(err)
	}
	in := csInput(t, csDevOne)
	if _, err := objOnly.Eval(Input{CombinedStatus: in}); err != nil {
		t.Fatal(err)
	}
	sv := c.statuses.values(in)
	if sv.results != nil || sv.resultErrors != nil {
		t.Fatalf("derived values built for a program that does not reference them")
	}
	for range 3 {
		if ok, err := withResults.Eval(Input{CombinedStatus: in}); err != nil || !ok {
			t.Fatalf("Eval() = %v, %v", ok, err)
		}
	}
	if c.statuses.values(in) != sv || sv.results == nil || sv.resultErrors != nil {
		t.Fatalf("results not cached under the UID and resourceVersion, or resultErrors built needlessly")
	}

	// A new resourceVersion of the same object replaces the entry.
	next := csInput(t, csDevTwo)
	if next.UID != in.UID || next.ResourceVersion == in.ResourceVersion {
		t.Fatalf("fixtures: want the same UID and another resourceVersion")
	}
	if ok, err := withResults.Eval(Input{CombinedStatus: next}); err != nil || ok {
		t.Fatalf("Eval() on the new version = %v, %v; want false", ok, err)
	}
	if got := c.statuses.values(next); got == sv || got.results == nil {
		t.Errorf("the new version reused the old entry or did not cache its results")
	}
	if got := c.statuses.entries.Len(); got != 1 {
		t.Errorf("status cache holds %d entries for one object, want 1", got)
	}
}

func TestConcurrentEval(t *testing.T) {
	c := NewCache(Options{})
	exprs := []string{
		readmeCondition,
		`results['deployments-aggregator'][0].count >= double(size(destinations))`,
		`resultErrors['deployments-aggregator'].size() == 0 && downsyncClause.group == 'apps'`,
	}
	fixtures := []string{csDevOne, csDevTwo, csZero}
	inputs := make([]*CSInput, len(fixtures))
	for i, f := range fixtures {
		inputs[i] = csInput(t, f)
	}
	want := [][]bool{{true, false, false}, {true, true, false}, {true, false, false}}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for n := range 50 {
				i, j := (g+n)%len(exprs), n%len(fixtures)
				prg, err := c.Compile(Condition, exprs[i])
				if err != nil {
					errs <- err
					return
				}
				got, err := prg.Eval(Input{Clause: deploymentClause, CombinedStatus: inputs[j], Destinations: []string{"cluster-dev-1"}})
				if err != nil || got != want[i][j] {
					errs <- fmt.Errorf("expr %d on fixture %d = %v, %w; want %v", i, j, got, err, want[i][j])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestRememberedOutcomes(t *testing.T) {
	c := NewCache(Options{})
	coverage, err := c.Compile(Condition, `results['deployments-aggregator'][0].count >= double(size(destinations)) && stage.index == 0`)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := c.Compile(Condition, readmeCondition)
	if err != nil {
		t.Fatal(err)
	}
	cs := csInput(t, csDevOne)
	steps := []struct {
		prg          *Program
		destinations []string
		stage        int
		want         bool
		remembered   int // outcomes remembered for cs afterwards
	}{
		{coverage, []string{"cluster-dev-1"}, 0, true, 1},
		{coverage, []string{"cluster-dev-1"}, 0, true, 1},                   // remembered
		{coverage, []string{"cluster-dev-1", "cluster-dev-2"}, 0, false, 2}, // a cluster joined
		{coverage, []string{"cluster-dev-1"}, 1, false, 3},                  // another stage
		{coverage, []string{"cluster-dev-1"}, 0, true, 3},                   // remembered
		{readme, []string{"cluster-dev-1"}, 0, true, 4},
		{readme, []string{"a", "b"}, 7, true, 4}, // the README condition references neither destinations nor stage
	}
	for i, s := range steps {
		got, err := s.prg.Eval(Input{CombinedStatus: cs, Destinations: s.destinations, Stage: StageRef{Index: s.stage}})
		if err != nil || got != s.want {
			t.Fatalf("step %d: Eval() = %v, %v; want %v", i, got, err, s.want)
		}
		if n := len(c.statuses.values(cs).outcomes); n != s.remembered {
			t.Errorf("step %d: %d outcomes remembered, want %d", i, n, s.remembered)
		}
	}

	// Errors are remembered too, and stay *Error values.
	bad := csInput(t, csBadNumber)
	for range 2 {
		_, err := coverage.Eval(Input{CombinedStatus: bad, Destinations: []string{"x"}})
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonInvalidNumber {
			t.Fatalf("Eval() error = %v, want %s", err, ReasonInvalidNumber)
		}
	}
	if n := len(c.statuses.values(bad).outcomes); n != 1 {
		t.Errorf("%d outcomes remembered for the bad status, want 1", n)
	}
}

// Concurrent Compiles of one expression compile it once: the others wait for that compilation (or find it
// cached) and count as hits.
func TestCompileOnceForConcurrentCallers(t *testing.T) {
	var n compileCounts
	c := NewCache(Options{OnCompile: n.onCompile})
	terms := make([]string, 15) // 419 syntax nodes, within MaxExpressionNodes
	for i := range terms {
		terms[i] = fmt.Sprintf("[1, 2].exists(a, [3, %d].exists(b, a + b == %d))", i, i)
	}
	expr := strings.Join(terms, " || ")
	const callers = 8
	start := make(chan struct{})
	var wg sync.WaitGroup
	progs := make([]*Program, callers)
	for i := range callers {
		wg.Go(func() {
			<-start
			p, err := c.Compile(Condition, expr)
			if err != nil {
				t.Error(err)
			}
			progs[i] = p
		})
	}
	close(start)
	wg.Wait()
	if n.misses.Load() != 1 || n.hits.Load() != callers-1 {
		t.Errorf("misses %d, hits %d; want 1 compilation for %d callers", n.misses.Load(), n.hits.Load(), callers)
	}
	for _, p := range progs[1:] {
		if p != progs[0] {
			t.Fatal("the callers got different programs")
		}
	}
}
