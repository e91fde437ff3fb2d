package stager

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClockStartRoundsUp: the status keeps times to the second, rounded down; a clock started within a
// second is stored as the next whole second, so a soak or a deadline measured from the stored value never
// ends early.
func TestClockStartRoundsUp(t *testing.T) {
	cases := map[string]struct {
		now, want time.Time
	}{
		"a whole second stays":        {now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), want: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)},
		"within a second rounds up":   {now: time.Date(2025, 3, 1, 12, 0, 0, 300_000_000, time.UTC), want: time.Date(2025, 3, 1, 12, 0, 1, 0, time.UTC)},
		"a nanosecond past rounds up": {now: time.Date(2025, 3, 1, 12, 0, 59, 1, time.UTC), want: time.Date(2025, 3, 1, 12, 1, 0, 0, time.UTC)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &pass{now: metav1.NewTime(tc.now)}
			if got := p.clockStart().Time; !got.Equal(tc.want) {
				t.Errorf("clockStart() = %s, want %s", got, tc.want)
			}
		})
	}
}
