package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	c := Config{Headroom: 32 << 20, MinPercent: 50, MaxPercent: 100}
	for _, x := range []struct {
		live int64
		want int
	}{{-1, 100}, {0, 100}, {8 << 20, 100}, {32 << 20, 100}, {40 << 20, 80}, {64 << 20, 50}, {512 << 20, 50}} {
		if got := c.Percent(x.live); got != x.want {
			t.Errorf("%d bytes live: %d, want %d", x.live, got, x.want)
		}
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// waitFor collects until the tuner has set want, or fails after a few seconds.
func waitFor(t *testing.T, want int, what string) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		if gogc() == want {
			return
		}
	}
	t.Fatalf("%s: GOGC %d, want %d", what, gogc(), want)
}

func TestZeroHeadroomLeavesTheCollectorAlone(t *testing.T) {
	if running.Load() {
		t.Skip("a tuner runs already in this process")
	}
	prev := debug.SetGCPercent(77)
	defer debug.SetGCPercent(prev)
	Start(Config{})
	runtime.GC()
	if got := gogc(); got != 77 {
		t.Fatalf("GOGC %d after Start with no headroom, want 77", got)
	}
}

var keep []byte

// TestStartFollowsTheLiveHeap: after collections the target follows what is live, both ways, and
// a second Start changes nothing. The tuner runs on for the rest of this test process.
func TestStartFollowsTheLiveHeap(t *testing.T) {
	Start(Config{Headroom: 4 << 20, MinPercent: 30, MaxPercent: 250})
	Start(Config{Headroom: 1 << 40, MinPercent: 1000, MaxPercent: 1000}) // ignored
	keep = make([]byte, 64<<20)
	for i := range keep {
		keep[i] = 1
	}
	waitFor(t, 30, "64 MiB live, 4 MiB headroom")
	keep = nil
	waitFor(t, 250, "little live")
}
