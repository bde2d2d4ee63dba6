package commit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// seedProps are a table's properties: each stream's seen (seconds before t0) and, unless
// published is zero, the complete-through published.
func seedProps(seen map[string]int64, published time.Time) iceberg.Properties {
	p := iceberg.Properties{}
	if !published.IsZero() {
		p = CompleteThroughProps(p, published, 1, "old-owner")
	}
	for s, ago := range seen {
		p[marks.SeenPrefix+s] = strconv.FormatInt(t0.Unix()-ago, 10)
	}
	return p
}

// TestWatermarkSeed: a committer that took the table over counts the streams the table says
// committed within the last hour before it hears from them, at the earlier of their seen and the
// published complete-through; a stream's first report replaces the seed, even an earlier one; a
// seeded stream never heard leaves after SeedWindow; a stream silent for hours is not seeded.
func TestWatermarkSeed(t *testing.T) {
	ms := func(d int64) time.Time { return t0.Add(time.Duration(d) * time.Millisecond) }
	w := NewWatermark(t0)
	// a: seen 10 min ago; b: seen 2 min ago (after the published T); old: seen 3 h ago.
	w.Seed(seedProps(map[string]int64{"a": 600, "b": 120, "old": 3 * 3600}, ms(-300_000)), t0)
	w.Heard(beat("live", 25_000, -1, 10*time.Second), ms(25_000))
	got, live, ok := w.Through(ms(30_000))
	if !ok || live != 3 || !got.Equal(ms(-600_000)) {
		t.Fatalf("through %v over %d live (%v), want a's seen %v over a, b and live", got, live, ok, ms(-600_000))
	}
	w.Heard(beat("a", -1_200_000, -1, 10*time.Second), ms(31_000)) // a's truth is earlier than its seed
	if got, _, _ := w.Through(ms(32_000)); !got.Equal(ms(-1_200_000)) {
		t.Fatalf("through %v after a reported %v: the seed must not hold it later than the truth", got, ms(-1_200_000))
	}
	w.Heard(beat("a", 28_000, -1, 10*time.Second), ms(33_000))
	if got, _, _ := w.Through(ms(34_000)); !got.Equal(ms(-300_000)) {
		t.Fatalf("through %v, want b's seed: the published T, earlier than its seen", got)
	}
	w.Heard(beat("live", 58_000, -1, 10*time.Second), ms(58_000))
	w.Heard(beat("a", 58_000, -1, 10*time.Second), ms(58_000))
	got, live, _ = w.Through(ms(SeedWindow.Milliseconds() + 1))
	if live != 2 || !got.Equal(ms(58_000)) {
		t.Fatalf("through %v over %d live after the seed window, want %v over 2: b was never heard", got, live, ms(58_000))
	}
	// Without a published T the seed is the stream's seen.
	w2 := NewWatermark(t0)
	w2.Seed(seedProps(map[string]int64{"c": 60}, time.Time{}), t0)
	w2.Heard(beat("live", 25_000, -1, 10*time.Second), ms(25_000))
	if got, _, _ := w2.Through(ms(30_000)); !got.Equal(ms(-60_000)) {
		t.Fatalf("through %v, want c's seen %v", got, ms(-60_000))
	}
}

// TestNewOwnerHoldsForUnheardStreams: a committer taking over a table whose properties name a
// stream that committed minutes ago does not publish a complete-through past that stream's seen
// while it has not heard from it, though the pod it does hear from is current.
func TestNewOwnerHoldsForUnheardStreams(t *testing.T) {
	cl := newCluster(t)
	setup := cl.pod("", nil) // creates the table, committing directly
	cl.seal(setup, 1, 100, day)
	cl.drainAll()
	seen := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	if err := cl.base.Lake.SetProperty(context.Background(), "events", marks.SeenPrefix+"quiet", strconv.FormatInt(seen.Unix(), 10), false); err != nil {
		t.Fatal(err)
	}
	c, _, _, _ := cl.committer("owner", nil)
	p := cl.pod("owner", func(cfg *ClientConfig) { cfg.Every = func(string) time.Duration { return 300 * time.Millisecond } })
	deadline := time.Now().Add(20 * time.Second)
	for k := 0; ; k++ {
		cl.seal(p, 1, 100, day.Add(time.Duration(k+1)*time.Minute))
		if err := cl.drain(p, 5); err != nil {
			t.Fatal(err)
		}
		st := c.Status()
		if len(st.Tables) == 1 && !st.Tables[0].CompleteThrough.IsZero() {
			if got := st.Tables[0].CompleteThrough; got.After(seen) || st.Tables[0].LiveStreams != 3 {
				t.Fatalf("published %v over %d live streams: past the seen %v of a stream not heard from yet", got, st.Tables[0].LiveStreams, seen)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing published: %+v", st.Tables)
		}
		time.Sleep(100 * time.Millisecond)
	}
	v, ok, err := CompleteThroughProperty.Read(cl.table().Properties())
	if err != nil || ok && time.UnixMilli(v.TMs).After(seen) {
		t.Fatalf("%s = %+v (%v): past the unheard stream's seen %v", tableprops.CompleteThrough, v, err, seen)
	}
	cl.checkOnce()
}
