package commit

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// DefaultEvery is the heartbeat period assumed for a pod that sends none (every_ms 0): the drain's
// default batch age (commitBatch.maxAgeSecs).
const DefaultEvery = 10 * time.Second

// LiveFactor: a stream is live while it was heard within LiveFactor heartbeat periods, so one or
// two lost heartbeats (memberlist drops nothing, but a busy pod may send late) do not drop it.
const LiveFactor = 3

// MinAdvance is the least step of the published watermark: a smaller one is not worth a property
// write in every metadata.json the table keeps.
const MinAdvance = time.Second

// Watermark is one table's complete-through state in its committer (docs/design/group-commit.md
// section 6.1): per stream, the seal time through which everything it sealed is committed.
// Safe for concurrent use: heartbeats are heard on receive, Through is asked by the commit loop.
type Watermark struct {
	mu      sync.Mutex
	since   time.Time // this process began owning the table
	window  time.Duration
	streams map[string]*streamMark
}

// streamMark is what the committer knows of one stream.
type streamMark struct {
	through int64 // W_s, unix ms of the pod's clock; only moves forward once heard
	heard   time.Time
	window  time.Duration // LiveFactor x the stream's last heartbeat period
	// seeded: through is Seed's bound from the table, not the pod's report; the first report
	// replaces it, earlier or not (the bound was a guess, the report is the truth).
	seeded bool
}

// SeedWindow is how long a stream seeded from the table (Seed) counts without being heard: a pod
// whose request the previous committer held reaches this one within its fallback bound
// (group-commit-fallback-after), and one with nothing to commit heartbeats within its period.
const SeedWindow = DefaultFallbackAfter + LiveFactor*DefaultEvery

// Seed adds the streams a committer that just took the table over has not heard from yet, from
// the table's properties at now: every stream whose siglake.seen.<stream> (its last commit,
// refreshed hourly) is within marks.SeenRefresh + SeedWindow may still be sealing rows, so it
// counts, live for SeedWindow, at the earlier of its seen and the complete-through the table
// published (when it has one). The published T then never runs ahead of a stream the new owner has
// not heard from; once heard, the stream's own report replaces the seed.
func (w *Watermark) Seed(props iceberg.Properties, now time.Time) {
	published := int64(-1)
	if old, ok, err := CompleteThroughProperty.Read(props); ok && err == nil {
		published = old.TMs
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, v := range props {
		stream, ok := strings.CutPrefix(k, marks.SeenPrefix)
		sec, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || w.streams[stream] != nil || now.Sub(time.Unix(sec, 0)) > marks.SeenRefresh+SeedWindow {
			continue
		}
		through := sec * 1000
		if published >= 0 {
			through = min(through, published)
		}
		w.streams[stream] = &streamMark{through: through, heard: now, window: SeedWindow, seeded: true}
	}
}

// NewWatermark starts a table's watermark when this process began owning the table at since:
// nothing is published until it owned it for one liveness window (it heard every live pod).
func NewWatermark(since time.Time) *Watermark {
	return &Watermark{since: since, streams: map[string]*streamMark{}}
}

// Heard records a heartbeat, or a request found committed (committed or already_committed), at now.
// The stream's W_s becomes PendingMs - 1 ms when the pod had later sealed segments waiting (its
// oldest waiting seal time), else ScanMs (it had sealed nothing more when it scanned), and never
// moves back. A report carrying neither time says nothing and is ignored.
func (w *Watermark) Heard(r Request, now time.Time) {
	through := r.ScanMs
	if r.PendingMs > 0 {
		through = r.PendingMs - 1
	}
	if through <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	every := time.Duration(r.EveryMs) * time.Millisecond
	if every <= 0 {
		every = DefaultEvery
	}
	s := w.streams[r.Stream]
	if s == nil {
		s = &streamMark{}
		w.streams[r.Stream] = s
	}
	if s.seeded {
		s.through, s.seeded = through, false
	} else {
		s.through = max(s.through, through)
	}
	s.heard = now
	s.window = LiveFactor * every
	// The wait before publishing is the longest window ever heard, not the current streams':
	// a pod that slowed its heartbeats must not be forgotten by a shorter wait.
	w.window = max(w.window, s.window)
}

// Through is the table's complete-through time at now over the live streams, and how many are
// live; ok false: nothing to publish yet (owned for less than the longest liveness window heard,
// or no stream live). Streams silent past their window leave the set and are forgotten: their
// rows sealed but not committed are outside the promise until they are heard again.
func (w *Watermark) Through(now time.Time) (t time.Time, live int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var low int64
	for name, s := range w.streams {
		if now.Sub(s.heard) > s.window {
			delete(w.streams, name)
			continue
		}
		if live == 0 || s.through < low {
			low = s.through
		}
		live++
	}
	if live == 0 || now.Sub(w.since) < w.window {
		return time.Time{}, live, false
	}
	return time.UnixMilli(low).UTC(), live, true
}

// CompleteThrough is the value of the siglake.complete-through table property
// (docs/format/table-properties.md).
type CompleteThrough struct {
	Version int    `json:"version"`
	TMs     int64  `json:"t_ms"`    // every live stream's rows sealed at or before it are committed
	Streams int    `json:"streams"` // live streams it was computed over
	By      string `json:"by"`      // the committer's member name
}

// CompleteThroughProperty reads and writes siglake.complete-through.
var CompleteThroughProperty = tableprops.Codec[CompleteThrough]{Name: tableprops.CompleteThrough,
	What: "complete-through watermark", Version: func(c *CompleteThrough) *int { return &c.Version },
	MinVersion: 1, MaxVersion: 1}

// CompleteThroughProps is the siglake.complete-through property to set in the next group commit
// given the table's current properties, or nil when it did not advance by a second (written as
// the max of old and new: two committers, failover). by is the committer's member name.
// A current value that does not decode (hand-edited, a newer siglake's version) is overwritten:
// the watermark is derived state, the next commit of any committer restores it.
func CompleteThroughProps(current iceberg.Properties, t time.Time, live int, by string) iceberg.Properties {
	if t.IsZero() || live <= 0 {
		return nil
	}
	ms := t.UnixMilli()
	old, ok, err := CompleteThroughProperty.Read(current)
	if ok && err == nil && ms < old.TMs+MinAdvance.Milliseconds() {
		return nil
	}
	v, err := CompleteThroughProperty.Encode(CompleteThroughProperty.Current(CompleteThrough{TMs: ms, Streams: live, By: by}))
	if err != nil {
		return nil // a struct of ints and a string always encodes
	}
	return iceberg.Properties{tableprops.CompleteThrough: v}
}
