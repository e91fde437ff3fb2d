package sbpcel

import (
	"strconv"

	"golang.org/x/sync/singleflight"
	"k8s.io/utils/lru"
)

// DefaultProgramCacheSize is the default and minimum number of compiled expressions a Cache keeps.
const DefaultProgramCacheSize = 1024

// statusCacheSize is the number of CombinedStatuses whose derived values (the results and resultErrors
// variables) a Cache keeps.
const statusCacheSize = 1024

// Options configure a Cache. The zero value is usable.
type Options struct {
	// ProgramCacheSize bounds the number of compiled expressions (programs and compile errors) kept;
	// values below DefaultProgramCacheSize mean DefaultProgramCacheSize.
	ProgramCacheSize int
	// OnCompile, if set, is called once per Compile with whether the expression was found in the cache
	// (a hit) or compiled (a miss). It must be cheap and safe for concurrent use.
	OnCompile func(hit bool)

	// noMemo disables remembering evaluations (benchmarks of evaluation itself).
	noMemo bool
}

// Cache compiles expressions once and keeps the result in a bounded LRU keyed by (kind, environment
// version, expression text); compile errors are kept too. The programs it returns, and the derived
// CombinedStatus values they cache, are shared by all programs of the Cache. A Cache is safe for
// concurrent use.
type Cache struct {
	programs  *lru.Cache
	statuses  *statusCache
	onCompile func(hit bool)
	memoize   bool
	// inflight makes concurrent Compiles of one expression wait for a single compilation: admission
	// requests sent at once with the same large object would otherwise each compile every expression.
	inflight singleflight.Group
}

type programKey struct {
	kind    Kind
	version int
	expr    string
}

// compiled is a cache entry: a program or a compile error.
type compiled struct {
	prg *Program
	err *Error
}

// NewCache returns an empty Cache.
func NewCache(opts Options) *Cache {
	size := max(opts.ProgramCacheSize, DefaultProgramCacheSize)
	return &Cache{programs: lru.New(size), statuses: newStatusCache(statusCacheSize),
		onCompile: opts.OnCompile, memoize: !opts.noMemo}
}

// Compile returns the program of expr in the environment of kind, compiling it on a cache miss. The
// error, if any, is an *Error with ReasonCompileError whose message carries the compiler's report
// (line:column of each issue).
func (c *Cache) Compile(kind Kind, expr string) (*Program, error) {
	key := programKey{kind: kind, version: EnvironmentVersion, expr: expr}
	v, hit := c.programs.Get(key)
	if !hit {
		compiledHere := false
		v, _, _ = c.inflight.Do(string(kind)+"\x00"+strconv.Itoa(EnvironmentVersion)+"\x00"+expr, func() (any, error) {
			if v, ok := c.programs.Get(key); ok {
				return v, nil // compiled by a call that has just finished
			}
			compiledHere = true
			entry := c.compile(kind, expr)
			c.programs.Add(key, entry)
			return entry, nil
		})
		hit = !compiledHere
	}
	if c.onCompile != nil {
		c.onCompile(hit)
	}
	entry, _ := v.(compiled)
	if entry.err != nil {
		return nil, entry.err
	}
	return entry.prg, nil
}

func (c *Cache) compile(kind Kind, expr string) compiled {
	if !kind.valid() {
		return compiled{err: newError(kind, ReasonCompileError, "unknown expression kind %q", kind)}
	}
	env, err := environmentFor(kind)
	if err != nil {
		return compiled{err: newError(kind, ReasonCompileError, "%v", err)}
	}
	checked, prg, cerr := env.compile(kind, expr)
	if cerr != nil {
		return compiled{err: cerr}
	}
	return compiled{prg: &Program{
		kind:     kind,
		env:      env,
		checked:  checked,
		prg:      prg,
		uses:     referencedVariables(checked),
		statuses: c.statuses,
		memoize:  c.memoize,
	}}
}
