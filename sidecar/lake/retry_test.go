package lake

import (
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake/backoff"
)

// TestDefaultRetryBackoff: the commit retries double from 200 ms to 5 s with equal jitter (the
// policy backoff's TestBackoffPolicy checks).
func TestDefaultRetryBackoff(t *testing.T) {
	want := backoff.Policy{Min: 200 * time.Millisecond, Max: 5 * time.Second, Factor: 2, Jitter: backoff.EqualJitter}
	if got := DefaultRetry.Backoff(); got != want {
		t.Errorf("DefaultRetry.Backoff() = %+v, want %+v", got, want)
	}
}

// TestRetryBackoffBounds: Retry's fields are the least and most a retry waits.
func TestRetryBackoffBounds(t *testing.T) {
	r := Retry{Attempts: 6, MinWait: 10 * time.Millisecond, MaxWait: 50 * time.Millisecond}
	b := r.Backoff()
	if got := b.Wait(1, func(int64) int64 { return 0 }); got != r.MinWait {
		t.Errorf("least first wait %v, want MinWait %v", got, r.MinWait)
	}
	for k := 1; k < r.Attempts; k++ {
		if got := b.Wait(k, func(n int64) int64 { return n - 1 }); got > r.MaxWait {
			t.Errorf("retry %d may wait %v, above MaxWait %v", k, got, r.MaxWait)
		}
	}
}
