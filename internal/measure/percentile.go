package measure

import "time"

// Percentile returns the nearest-rank p-th percentile of sorted (ascending), or 0 when it is empty.
func Percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 × n)
	return sorted[max(rank, 1)-1]
}
