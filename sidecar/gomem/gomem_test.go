package gomem

import (
	"io/fs"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/gctune"
)

// TestDefaultGoMemLimit: without GOMEMLIMIT the process sets 0.9 of the cgroup limit (v2, then
// v1); no limit ("max", v1's unlimited value, no cgroup files) sets none, and any GOMEMLIMIT,
// "off" included, is left to the runtime; GOMEMLIMIT="" is unset, as the runtime reads it.
func TestDefaultGoMemLimit(t *testing.T) {
	const v2, v1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	unset := func(string) (string, bool) { return "", false }
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, k == "GOMEMLIMIT" }
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		env   func(string) (string, bool)
		want  int64
	}{
		{"no cgroup", nil, unset, 0},
		{"v2 max", map[string]string{v2: "max\n"}, unset, 0},
		{"v1 unlimited", map[string]string{v1: "9223372036854771712\n"}, unset, 0},
		{"v2 limit", map[string]string{v2: "536870912\n"}, unset, 536870912 * 9 / 10},
		{"v1 limit", map[string]string{v1: "1073741824\n"}, unset, 1073741824 * 9 / 10},
		{"explicit", map[string]string{v2: "536870912\n"}, env("400MiB"), 0},
		{"off", map[string]string{v2: "536870912\n"}, env("off"), 0},
		{"empty", map[string]string{v2: "536870912\n"}, env(""), 536870912 * 9 / 10}, // the runtime's unset too
	} {
		cg := merge.CgroupMemoryLimitFrom(func(p string) ([]byte, error) {
			if v, ok := c.files[p]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		})
		if got := defaultGoMemLimit(c.env, cg); got != c.want {
			t.Errorf("%s: GOMEMLIMIT default %d, want %d", c.name, got, c.want)
		}
	}
}

// TestDefaultGCPercent: without GOGC the process tunes the collector; any GOGC, "off" included,
// is left to the runtime; GOGC="" is unset, as the runtime reads it.
func TestDefaultGCPercent(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"GOGC": "100"}, false},
		{map[string]string{"GOGC": "off"}, false},
		{map[string]string{"GOGC": ""}, true}, // the runtime's unset too
		{map[string]string{"GOMEMLIMIT": "400MiB"}, true},
	} {
		if got := defaultGCPercent(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }); got != c.want {
			t.Errorf("env %v: tune the collector %v, want %v", c.env, got, c.want)
		}
	}
}

// TestGCTuning: the headroom is one drain batch (a floor when batches are one segment each or the
// process does not drain), at most a quarter of the memory budget, and the target stays between
// DefaultGCPercent, which bounds the drain's peak, and the runtime's 100.
func TestGCTuning(t *testing.T) {
	c := GCTuning(true, 32<<20, 1<<30)
	if c.Headroom != 32<<20 || c.MinPercent != DefaultGCPercent || c.MaxPercent != 100 {
		t.Fatalf("tuning %+v", c)
	}
	for _, x := range []struct {
		name          string
		drains        bool
		batch, budget int64
		wantHeadroom  int64
	}{
		{"one segment per batch", true, 0, 1 << 30, minGCHeadroom},
		{"maintenance only", false, 32 << 20, 1 << 30, minGCHeadroom},
		{"large batch, small budget", true, 1 << 30, 256 << 20, 64 << 20},
		{"tiny budget", true, 32 << 20, 16 << 20, minGCHeadroom},
		{"no budget known", true, 64 << 20, 0, 64 << 20},
	} {
		if got := GCTuning(x.drains, x.batch, x.budget).Headroom; got != x.wantHeadroom {
			t.Errorf("%s: headroom %d, want %d", x.name, got, x.wantHeadroom)
		}
	}
	for _, x := range []struct {
		live int64
		want int
	}{{0, 100}, {1 << 20, 100}, {32 << 20, 100}, {48 << 20, 66}, {64 << 20, 50}, {1 << 30, 50}} {
		if got := c.Percent(x.live); got != x.want {
			t.Errorf("%d bytes live: GOGC %d, want %d", x.live, got, x.want)
		}
	}
}

// TestSetDefaultGCPercentTunes: with GOGC set the process leaves the collector alone; unset, it
// starts the tuning, and the target the runtime reports (go_gc_gogc_percent in /metrics) is
// within the tuning's bounds.
func TestSetDefaultGCPercentTunes(t *testing.T) {
	if gctune.Running() {
		t.Skip("the tuning runs already in this test process")
	}
	t.Setenv("GOGC", "100")
	SetDefaultGCPercent(zap.NewNop(), GCTuning(true, 32<<20, 1<<30))
	if gctune.Running() {
		t.Fatal("GOGC=100 set, but the process started tuning the collector")
	}
	t.Setenv("GOGC", "")
	SetDefaultGCPercent(zap.NewNop(), GCTuning(true, 32<<20, 1<<30))
	if !gctune.Running() {
		t.Fatal("GOGC unset, but the process did not tune the collector")
	}
	// Three batches live: the collections that follow set DefaultGCPercent.
	live := make([]byte, 96<<20)
	for i := range live {
		live[i] = 1
	}
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		metrics.Read(s)
		if s[0].Value.Uint64() == DefaultGCPercent {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("GOGC %d with %d MiB live and a 32 MiB headroom, want %d", s[0].Value.Uint64(), len(live)>>20, DefaultGCPercent)
		}
	}
	runtime.KeepAlive(live)
}
