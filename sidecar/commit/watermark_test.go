package commit

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

var t0 = time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)

// beat is a heartbeat of stream with the pod's scan and oldest pending seal times (ms after t0,
// pending < 0 for none) and its period.
func beat(stream string, scan, pending int64, every time.Duration) Request {
	r := Request{Stream: stream, ScanMs: t0.UnixMilli() + scan, EveryMs: every.Milliseconds()}
	if pending >= 0 {
		r.PendingMs = t0.UnixMilli() + pending
	}
	return r
}

func TestWatermarkThrough(t *testing.T) {
	ms := func(d int64) time.Time { return t0.Add(time.Duration(d) * time.Millisecond) }
	type heard struct {
		r  Request
		at int64 // ms after t0
	}
	for _, c := range []struct {
		name     string
		heard    []heard
		now      int64
		wantT    time.Time
		wantLive int
		wantOK   bool
	}{
		{name: "nothing heard", now: 60_000},
		{"owned shorter than the window", []heard{{beat("a", 5_000, -1, 10*time.Second), 5_000}}, 20_000, time.Time{}, 1, false},
		{"scan time without pending", []heard{{beat("a", 5_000, -1, 10*time.Second), 25_000}}, 30_000, ms(5_000), 1, true},
		{"pending minus 1 ms", []heard{{beat("a", 9_000, 4_000, 10*time.Second), 25_000}}, 30_000, ms(3_999), 1, true},
		{"min over live streams", []heard{
			{beat("a", 9_000, -1, 10*time.Second), 25_000},
			{beat("b", 7_000, -1, 10*time.Second), 26_000},
			{beat("c", 8_000, 6_000, 10*time.Second), 27_000},
		}, 30_000, ms(5_999), 3, true},
		{"dead stream leaves the set", []heard{
			{beat("dead", 1_000, -1, time.Second), 1_000},
			{beat("a", 40_000, -1, 10*time.Second), 40_000},
		}, 41_000, ms(40_000), 1, true},
		{"only moves forward", []heard{
			{beat("a", 20_000, -1, 10*time.Second), 31_000},
			{beat("a", 15_000, -1, 10*time.Second), 32_000},
		}, 33_000, ms(20_000), 1, true},
		{"longest window heard delays the start", []heard{
			{beat("slow", 1_000, -1, 20*time.Second), 1_000},
			{beat("a", 40_000, -1, 10*time.Second), 40_000},
		}, 45_000, time.Time{}, 2, false},
		{"no times: ignored", []heard{{Request{Stream: "a", EveryMs: 1000}, 40_000}}, 45_000, time.Time{}, 0, false},
		{"default period without every_ms", []heard{{beat("a", 5_000, -1, 0), 5_000}}, 35_000, ms(5_000), 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := NewWatermark(t0)
			for _, h := range c.heard {
				w.Heard(h.r, ms(h.at))
			}
			got, live, ok := w.Through(ms(c.now))
			if !got.Equal(c.wantT) || live != c.wantLive || ok != c.wantOK {
				t.Errorf("Through = %v, %d live, ok %v; want %v, %d, %v", got, live, ok, c.wantT, c.wantLive, c.wantOK)
			}
		})
	}
}

func TestCompleteThroughProps(t *testing.T) {
	at := t0.Add(time.Hour)
	stored := func(tms int64) iceberg.Properties {
		v, err := CompleteThroughProperty.Encode(CompleteThrough{Version: 1, TMs: tms, Streams: 2, By: "old"})
		if err != nil {
			t.Fatal(err)
		}
		return iceberg.Properties{tableprops.CompleteThrough: v}
	}
	for _, c := range []struct {
		name    string
		current iceberg.Properties
		t       time.Time
		live    int
		want    string // the value written, "" for nil
	}{
		{"first", nil, at, 3, `{"version":1,"t_ms":` + itoa(at.UnixMilli()) + `,"streams":3,"by":"me"}`},
		{"advanced by a second", stored(at.UnixMilli() - 1000), at, 3, `{"version":1,"t_ms":` + itoa(at.UnixMilli()) + `,"streams":3,"by":"me"}`},
		{"less than a second", stored(at.UnixMilli() - 999), at, 3, ""},
		{"behind the stored value", stored(at.UnixMilli() + 60_000), at, 3, ""},
		{"no live stream", nil, at, 0, ""},
		{"zero time", nil, time.Time{}, 2, ""},
		{"unreadable value overwritten", iceberg.Properties{tableprops.CompleteThrough: "{"}, at, 1, `{"version":1,"t_ms":` + itoa(at.UnixMilli()) + `,"streams":1,"by":"me"}`},
		{"newer version overwritten", iceberg.Properties{tableprops.CompleteThrough: `{"version":9,"t_ms":1}`}, at, 1, `{"version":1,"t_ms":` + itoa(at.UnixMilli()) + `,"streams":1,"by":"me"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CompleteThroughProps(c.current, c.t, c.live, "me")
			if c.want == "" {
				if got != nil {
					t.Errorf("wrote %v, want nothing", got)
				}
				return
			}
			if len(got) != 1 || got[tableprops.CompleteThrough] != c.want {
				t.Errorf("wrote %v, want %s", got, c.want)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestWatermarkProperty: over random heard sequences of streams with random periods and clocks,
// the published T never exceeds the W_s of a stream live at that time (as the test keeps it), and
// the written property never goes backwards, also with two committers writing in turn.
func TestWatermarkProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 10))
	for iter := range 300 {
		streams := 1 + r.IntN(8)
		every := make([]time.Duration, streams)
		for i := range every {
			every[i] = time.Duration(1+r.IntN(20)) * time.Second
		}
		ws := []*Watermark{NewWatermark(t0), NewWatermark(t0.Add(time.Duration(r.IntN(60)) * time.Second))}
		wantW := map[string]int64{} // the test's own W_s
		lastHeard := map[string]time.Time{}
		window := map[string]time.Duration{}
		props := iceberg.Properties{}
		written := int64(0)
		now := t0
		for step := range 400 {
			now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
			s := r.IntN(streams)
			name := string(rune('a' + s))
			if r.IntN(10) < 7 && !(s == 0 && step > 200) { // stream a dies half way
				scan := now.UnixMilli() - int64(r.IntN(5000)) // pod clock skew and scan age
				pending := int64(-1)
				if r.IntN(3) == 0 {
					pending = scan - int64(r.IntN(30_000)) - t0.UnixMilli()
				}
				req := beat(name, scan-t0.UnixMilli(), pending, every[s])
				for _, w := range ws {
					w.Heard(req, now)
				}
				through := req.ScanMs
				if req.PendingMs > 0 {
					through = req.PendingMs - 1
				}
				wantW[name] = max(wantW[name], through)
				lastHeard[name] = now
				window[name] = 3 * every[s]
			}
			w := ws[step%2]
			tt, live, ok := w.Through(now)
			if !ok {
				continue
			}
			for name, at := range lastHeard {
				if now.Sub(at) <= window[name] && tt.UnixMilli() > wantW[name] {
					t.Fatalf("iter %d step %d: T %v above live stream %s's W %v", iter, step, tt, name, time.UnixMilli(wantW[name]))
				}
			}
			if set := CompleteThroughProps(props, tt, live, "c"); set != nil {
				v, _, err := CompleteThroughProperty.Read(set)
				if err != nil || v.TMs < written+1000 && written != 0 {
					t.Fatalf("iter %d step %d: wrote %v after %d (err %v)", iter, step, v, written, err)
				}
				written = v.TMs
				props = set
			}
		}
	}
}

// TestWatermarkConcurrent: heartbeats heard on receive while the commit loop asks Through (run
// with -race).
func TestWatermarkConcurrent(t *testing.T) {
	w := NewWatermark(t0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				w.Heard(beat(string(rune('a'+g)), int64(i)*1000, -1, time.Second), t0.Add(time.Duration(i)*time.Second))
			}
		}()
	}
	for i := range 200 {
		w.Through(t0.Add(time.Duration(i) * time.Second))
	}
	wg.Wait()
	if got, live, ok := w.Through(t0.Add(199 * time.Second)); !ok || live != 4 || !got.Equal(t0.Add(199*time.Second)) {
		t.Errorf("after the heartbeats: %v, %d live, ok %v; want %v, 4, true", got, live, ok, t0.Add(199*time.Second))
	}
}
