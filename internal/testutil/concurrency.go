package testutil

import (
	"sync"
	"time"
)

// ConcurrencyProbe measures how many calls of an executor are in flight at once, without depending on how
// busy the machine is: each call stays in flight until Want calls have been in flight together, or at most
// MaxWait (for a batch smaller than Want, as slow start makes). A serial executor never reaches Want, so a
// test asserting Peak() == Want fails for it.
type ConcurrencyProbe struct {
	want    int
	maxWait time.Duration

	mu       sync.Mutex
	cond     *sync.Cond
	inflight int
	peak     int
	atEntry  []int
}

// NewConcurrencyProbe returns a probe waiting for want calls in flight, each at most maxWait.
func NewConcurrencyProbe(want int, maxWait time.Duration) *ConcurrencyProbe {
	p := &ConcurrencyProbe{want: want, maxWait: maxWait}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Call is one call of the executor: it enters, waits as described above, and leaves.
func (p *ConcurrencyProbe) Call() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight++
	p.peak = max(p.peak, p.inflight)
	p.atEntry = append(p.atEntry, p.inflight)
	p.cond.Broadcast()
	deadline := time.Now().Add(p.maxWait)
	for p.peak < p.want && time.Now().Before(deadline) {
		// Wake up now and then to check the deadline.
		go func() { time.Sleep(10 * time.Millisecond); p.cond.Broadcast() }()
		p.cond.Wait()
	}
	p.inflight--
}

// Peak returns the most calls seen in flight at once.
func (p *ConcurrencyProbe) Peak() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// InFlightAtEntry returns, for each call in the order they entered, how many were in flight (itself
// included) when it entered.
func (p *ConcurrencyProbe) InFlightAtEntry() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.atEntry...)
}
