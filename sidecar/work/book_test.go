package work

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan"
)

var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

func newBook(cfg Config) *Book { return NewBook(cfg, rand.NewPCG(1, 2)) }

// bin returns a job over files name-0 .. name-(n-1) of size bytes each.
func bin(name string, n int, size int64) Job { return job(name, n, size) }

// oneSlot is a want for a single bin of any size.
var oneSlot = Want{FreeBytes: 1, MergeBytes: 1}

func mustTake(t *testing.T, b *Book, worker string, w Want, local bool, now time.Time) []Lease {
	t.Helper()
	ls, err := b.Take(worker, w, local, now)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func TestOfferRefuses(t *testing.T) {
	b := newBook(Config{})
	leased := bin("a", 2, 10)
	b.Offer("events", []Job{leased}, t0)
	if ls := mustTake(t, b, "w1", oneSlot, false, t0); len(ls) != 1 {
		t.Fatalf("took %d bins, want 1", len(ls))
	}
	huge := bin("h", 1, 10)
	huge.Inputs[0].Path = strings.Repeat("p", 4000)
	for len(huge.Inputs)*4000 < MaxMessageBytes {
		huge.Inputs = append(huge.Inputs, Input{Path: fmt.Sprintf("%s%d", strings.Repeat("p", 4000), len(huge.Inputs)), Size: 1})
	}
	overLease := bin("x", 1, 10)
	overLease.Inputs = append(overLease.Inputs, leased.Inputs[1])
	overLease.Generation = 2
	first, second := bin("c", 2, 10), bin("d", 1, 10)
	second.Inputs = append(second.Inputs, first.Inputs[0])
	invalid := bin("e", 1, 10)
	invalid.Kind = "delete-task"
	refused := b.Offer("events", []Job{huge, overLease, first, second, invalid}, t0)
	if len(refused) != 4 {
		t.Fatalf("refused %d bins, want 4: %v", len(refused), refused)
	}
	var fe *FieldError
	for i, want := range []func(error) bool{
		func(err error) bool { return errors.Is(err, ErrTooLarge) },
		func(err error) bool {
			return errors.Is(err, ErrLeased) && strings.Contains(err.Error(), leased.Inputs[1].Path)
		},
		func(err error) bool { return errors.Is(err, ErrTwice) },
		func(err error) bool { return errors.As(err, &fe) && fe.Field == "kind" },
	} {
		if !want(refused[i].Err) {
			t.Errorf("refusal %d: %v", i, refused[i].Err)
		}
	}
	if o := b.Offers("events"); len(o) != 1 || binKey(o[0].Job) != binKey(first) {
		t.Fatalf("on offer: %v, want the one valid bin", o)
	}
	if r := b.Offer("Bad", []Job{bin("f", 1, 1)}, t0); len(r) != 1 || !strings.Contains(r[0].Err.Error(), "table") {
		t.Fatalf("a bad table name: %v", r)
	}
}

// TestOfferReplacesUnleased: a pass's offers replace the last pass's unleased ones; a bin offered
// again (its files, in any order) keeps its offer time; leased bins stay.
func TestOfferReplacesUnleased(t *testing.T) {
	b := newBook(Config{})
	a, c, d := bin("a", 2, 10), bin("c", 1, 10), bin("d", 1, 10)
	b.Offer("events", []Job{a, c, d}, t0)
	ls := mustTake(t, b, "w1", Want{FreeBytes: 1, MergeBytes: 1, MaxBinBytes: 10}, false, t0) // c or d: a is 20 bytes
	if len(ls) != 1 || binKey(ls[0].Job) != binKey(c) {
		t.Fatalf("took %v, want c", ls)
	}
	again := bin("a", 2, 10)
	again.Inputs[0], again.Inputs[1] = again.Inputs[1], again.Inputs[0]
	e := bin("e", 1, 10)
	b.Offer("events", []Job{again, e}, t0.Add(time.Minute))
	offers := b.Offers("events")
	if len(offers) != 2 || binKey(offers[0].Job) != binKey(a) || !offers[0].Offered.Equal(t0) || !offers[1].Offered.Equal(t0.Add(time.Minute)) {
		t.Fatalf("offers after the second pass: %+v", offers)
	}
	if got := b.Outstanding("events"); got != (Outstanding{OfferedBins: 2, OfferedBytes: 30, LeasedBins: 1, LeasedBytes: 10}) {
		t.Fatalf("outstanding %+v", got)
	}
	b.Offer("events", nil, t0.Add(2*time.Minute))
	if got := b.Outstanding("events"); got != (Outstanding{LeasedBins: 1, LeasedBytes: 10}) || b.Offering() {
		t.Fatalf("an empty pass left %+v (offering %v), want only the lease", got, b.Offering())
	}
}

// TestTakePlacement: the bins that fit in their pass's order (each table's first before any
// table's second, older offers first among equals), never more than free/merge of them.
func TestTakePlacement(t *testing.T) {
	for _, c := range []struct {
		name string
		want Want
		got  []string // bins taken, in order
	}{
		{"pass order", Want{FreeBytes: 2 << 30, MergeBytes: 1 << 30}, []string{"old", "mid"}},
		{"free/merge rounds down", Want{FreeBytes: 3<<30 - 1, MergeBytes: 1 << 30}, []string{"old", "mid"}},
		{"all", Want{FreeBytes: 10, MergeBytes: 1}, []string{"old", "mid", "big", "new"}},
		{"no free merge", Want{FreeBytes: 1<<30 - 1, MergeBytes: 1 << 30}, nil},
		{"max bin", Want{FreeBytes: 3, MergeBytes: 1, MaxBinBytes: 300}, []string{"old", "mid", "new"}},
		{"max bin below all", Want{FreeBytes: 2, MergeBytes: 1, MaxBinBytes: 99}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBook(Config{})
			b.Offer("events", []Job{bin("old", 1, 100), bin("big", 2, 500)}, t0)
			b.Offer("logs", []Job{bin("mid", 3, 100)}, t0)
			b.Offer("events", []Job{bin("old", 1, 100), bin("big", 2, 500), bin("new", 1, 100)}, t0.Add(time.Second))
			ls := mustTake(t, b, "w1", c.want, false, t0.Add(time.Second))
			var got []string
			for _, l := range ls {
				got = append(got, strings.TrimSuffix(l.Job.Inputs[0].Path[strings.LastIndex(l.Job.Inputs[0].Path, "/")+1:], "-0.parquet"))
			}
			if fmt.Sprint(got) != fmt.Sprint(c.got) {
				t.Fatalf("took %v, want %v", got, c.got)
			}
		})
	}
}

// TestTakeOlderOfEqualPlaces: of two tables' first bins, the one on offer longer goes first, and
// a bin keeps the offer time of the first pass that offered it but takes its place from the last.
func TestTakeOlderOfEqualPlaces(t *testing.T) {
	b := newBook(Config{})
	b.Offer("logs", []Job{bin("later", 1, 100)}, t0.Add(time.Second))
	b.Offer("events", []Job{bin("sooner", 1, 100), bin("kept", 1, 100)}, t0)
	b.Offer("events", []Job{bin("kept", 1, 100), bin("sooner", 1, 100)}, t0.Add(2*time.Second))
	var got []string
	for _, l := range mustTake(t, b, "w1", Want{FreeBytes: 3, MergeBytes: 1}, false, t0.Add(2*time.Second)) {
		got = append(got, l.Job.Inputs[0].Path[strings.LastIndex(l.Job.Inputs[0].Path, "/")+1:])
	}
	if want := "[kept-0.parquet later-0.parquet sooner-0.parquet]"; fmt.Sprint(got) != want {
		t.Fatalf("took %v, want %s", got, want)
	}
}

// TestTakeOwnerWaitAfterDrop: a table dropped takes its offers' time on offer with it; the next
// offer's bins wait for the other workers from their own offer.
func TestTakeOwnerWaitAfterDrop(t *testing.T) {
	wait := 10 * time.Second
	b := newBook(Config{OwnerWait: wait})
	mustTake(t, b, "w1", Want{FreeBytes: 0, MergeBytes: 1}, false, t0)
	b.Offer("events", []Job{bin("a", 1, 10)}, t0)
	b.Drop("events")
	t1 := t0.Add(time.Minute)
	b.Offer("logs", []Job{bin("b", 1, 10)}, t1)
	if ls := mustTake(t, b, "owner", Want{FreeBytes: 10, MergeBytes: 1}, true, t1.Add(time.Second)); len(ls) != 0 {
		t.Fatalf("the owner took %v offered a second ago, counting the dropped table's offer time", ls)
	}
}

// TestTakeOwnerWait: the owner's own worker gets a bin only once it waited the owner wait, unless
// no other worker asked within the wait (counted from the first offer until one asks).
func TestTakeOwnerWait(t *testing.T) {
	wait := 10 * time.Second
	many := Want{FreeBytes: 10, MergeBytes: 1}
	b := newBook(Config{OwnerWait: wait})
	b.Offer("events", []Job{bin("a", 1, 10)}, t0)
	if ls := mustTake(t, b, "owner", many, true, t0.Add(wait-time.Millisecond)); len(ls) != 0 {
		t.Fatalf("a new owner's worker took %d bins before one owner wait", len(ls))
	}
	if ls := mustTake(t, b, "owner", many, true, t0.Add(wait)); len(ls) != 1 || !ls[0].Local {
		t.Fatalf("after one owner wait with nobody asking: %v", ls)
	}
	// Nobody asked: a fresh bin goes to the owner at once.
	t1 := t0.Add(time.Minute)
	b.Offer("events", []Job{bin("b", 1, 10)}, t1)
	if ls := mustTake(t, b, "owner", many, true, t1); len(ls) != 1 {
		t.Fatalf("no worker asked within the wait, yet the owner took %d fresh bins", len(ls))
	}
	// A worker asked (and took nothing): fresh bins wait for it, aged ones do not.
	b.Offer("events", []Job{bin("c", 1, 10)}, t1)
	mustTake(t, b, "w1", Want{FreeBytes: 0, MergeBytes: 1}, false, t1.Add(5*time.Second))
	b.Offer("events", []Job{bin("c", 1, 10), bin("d", 1, 10)}, t1.Add(5*time.Second))
	ls := mustTake(t, b, "owner", many, true, t1.Add(wait))
	if len(ls) != 1 || ls[0].Job.Inputs[0].Path != bin("c", 1, 10).Inputs[0].Path {
		t.Fatalf("one owner wait after a worker asked: took %v, want only the bin offered a wait ago", ls)
	}
	if ls := mustTake(t, b, "owner", many, true, t1.Add(wait+4*time.Second)); len(ls) != 0 {
		t.Fatalf("took %v before d waited", ls)
	}
	if ls := mustTake(t, b, "w1", many, false, t1.Add(wait+4*time.Second)); len(ls) != 1 {
		t.Fatalf("a worker took %v, want d at once", ls)
	}
	// Nothing on offer for longer than the wait (a slow pass): workers ask only owners with
	// offers, so that silence is not a wait in which nobody asked. The next pass's fresh bin
	// waits for them again, and goes to the owner once it waited with nobody asking.
	t2 := t1.Add(5 * wait)
	b.Offer("events", []Job{bin("e", 1, 10)}, t2)
	if ls := mustTake(t, b, "owner", many, true, t2.Add(time.Second)); len(ls) != 0 {
		t.Fatalf("the owner took %v offered a second ago: workers had no offer to ask for since the last pass", ls)
	}
	if ls := mustTake(t, b, "owner", many, true, t2.Add(wait)); len(ls) != 1 {
		t.Fatalf("a wait with the bin on offer and nobody asking: the owner took %v", ls)
	}
	// That wait is kept: the workers left (or stay busy), and the next passes' fresh bins go
	// to the owner at once, as they would to an owner alone.
	t3 := t2.Add(5 * wait)
	b.Offer("events", []Job{bin("f", 1, 10)}, t3)
	if ls := mustTake(t, b, "owner", many, true, t3); len(ls) != 1 {
		t.Fatalf("an owner wait of offers nobody asked for passed, yet the owner took %v of a fresh bin", ls)
	}
	// Until a worker asks again: then fresh bins wait for the others once more.
	mustTake(t, b, "w1", Want{FreeBytes: 0, MergeBytes: 1}, false, t3.Add(time.Second))
	b.Offer("events", []Job{bin("g", 1, 10)}, t3.Add(2*time.Second))
	if ls := mustTake(t, b, "owner", many, true, t3.Add(3*time.Second)); len(ls) != 0 {
		t.Fatalf("a worker asked a second ago, yet the owner took %v of a fresh bin", ls)
	}
}

// TestTakeBoundedByMessage: the leases one Take returns fit one leases message; a bin that would
// not fit is left for a smaller one.
func TestTakeBoundedByMessage(t *testing.T) {
	b := newBook(Config{})
	var jobs []Job
	for i := range 5 {
		j := bin(fmt.Sprint("j", i), 1, 1)
		for n := 1; n < 1500; n++ { // each about 300 KiB encoded
			j.Inputs = append(j.Inputs, Input{Path: fmt.Sprintf("%s/%s-%d-%s.parquet", j.Dir, "j", i*10000+n, strings.Repeat("x", 100)), Size: 1})
		}
		jobs = append(jobs, j)
	}
	small := bin("small", 1, 1)
	jobs = append(jobs, small)
	if r := b.Offer("events", jobs, t0); len(r) != 0 {
		t.Fatal(r[0].Err)
	}
	ls := mustTake(t, b, "w1", Want{FreeBytes: 100, MergeBytes: 1}, false, t0)
	if len(ls) < 2 || len(ls) > 4 || binKey(ls[len(ls)-1].Job) != binKey(small) {
		t.Fatalf("took %d leases, want the large ones that fit and then the small one", len(ls))
	}
	m := OwnerMessage{V: 1, Type: TypeLeases, Catalog: strings.Repeat("c", maxCatalogLen), RetryMs: 1 << 40}
	for _, l := range ls {
		g := l.Grant()
		g.Table = strings.Repeat("t", 128) // the longest table name
		m.Leases = append(m.Leases, g)
	}
	if _, err := m.Encode(); err != nil {
		t.Fatalf("the leases of one Take do not fit a message: %v", err)
	}
}

func TestRenewAndComplete(t *testing.T) {
	b := newBook(Config{MinDuration: time.Minute})
	b.Offer("events", []Job{bin("a", 2, 10)}, t0)
	l := mustTake(t, b, "w1", oneSlot, false, t0)[0]
	if !l.Deadline.Equal(t0.Add(time.Minute)) || l.Duration != time.Minute || l.Worker != "w1" || !l.Taken.Equal(t0) {
		t.Fatalf("lease %+v", l)
	}
	if _, err := b.Renew(l.ID, "w2", t0.Add(time.Second)); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("renewal by another worker: %v", err)
	}
	r, err := b.Renew(l.ID, "w1", t0.Add(50*time.Second))
	if err != nil || !r.Deadline.Equal(t0.Add(110*time.Second)) {
		t.Fatalf("renewal: %+v %v", r, err)
	}
	if _, err := b.Complete(l.ID, "w2", t0.Add(100*time.Second)); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("completion by another worker: %v", err)
	}
	if _, err := b.Complete(l.ID, "w1", t0.Add(110*time.Second)); !errors.Is(err, ErrNotLive) {
		t.Fatalf("completion at the deadline: %v", err)
	}
	if _, err := b.Renew(l.ID, "w1", t0.Add(110*time.Second)); !errors.Is(err, ErrNotLive) {
		t.Fatalf("renewal at the deadline: %v", err)
	}
	if _, err := b.Renew(testLeaseID(1), "w1", t0); !errors.Is(err, ErrNotLive) {
		t.Fatalf("renewal of an unknown lease: %v", err)
	}

	b.Offer("events", []Job{bin("c", 1, 10)}, t0)
	l = mustTake(t, b, "w1", oneSlot, false, t0)[0]
	done, err := b.Complete(l.ID, "w1", t0.Add(time.Second))
	if err != nil || done.ID != l.ID || binKey(done.Job) != binKey(bin("c", 1, 10)) {
		t.Fatalf("complete: %+v %v", done, err)
	}
	if _, err := b.Complete(l.ID, "w1", t0.Add(time.Second)); !errors.Is(err, ErrNotLive) {
		t.Fatalf("a second completion: %v", err)
	}
	if !b.InFlight("events")[l.Job.Inputs[0].Path] {
		t.Fatal("a completed lease's file left flight before its commit was settled")
	}
	b.Settle(done)
	if b.InFlight("events")[l.Job.Inputs[0].Path] {
		t.Fatal("a settled lease's file is still in flight")
	}
}

// TestExpire: a lapsed lease ends at Expire, its files are plannable again, and its holder's
// result is refused even when the same bin is leased again.
func TestExpire(t *testing.T) {
	b := newBook(Config{MinDuration: time.Minute})
	a, c := bin("a", 2, 10), bin("c", 1, 10)
	b.Offer("events", []Job{a, c}, t0)
	ls := mustTake(t, b, "w1", Want{FreeBytes: 2, MergeBytes: 1}, false, t0)
	if _, err := b.Renew(ls[1].ID, "w1", t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := b.InFlight("events"); len(got) != 3 {
		t.Fatalf("in flight: %v", got)
	}
	if r := b.Offer("events", []Job{a}, t0.Add(time.Minute)); len(r) != 1 || !errors.Is(r[0].Err, ErrLeased) {
		t.Fatalf("a lapsed lease's bin offered before Expire: %v", r)
	}
	gone := b.Expire(t0.Add(time.Minute))
	if len(gone) != 1 || gone[0].ID != ls[0].ID {
		t.Fatalf("expired %v, want the unrenewed lease", gone)
	}
	if got := b.InFlight("events"); len(got) != 1 || !got[c.Inputs[0].Path] {
		t.Fatalf("in flight after expiry: %v", got)
	}
	if r := b.Offer("events", []Job{a}, t0.Add(time.Minute)); len(r) != 0 {
		t.Fatalf("an expired lease's bin refused: %v", r)
	}
	again := mustTake(t, b, "w2", oneSlot, false, t0.Add(time.Minute))
	if len(again) != 1 || again[0].ID == ls[0].ID {
		t.Fatalf("re-leased %v", again)
	}
	if _, err := b.Complete(ls[0].ID, "w1", t0.Add(time.Minute)); !errors.Is(err, ErrNotLive) {
		t.Fatalf("the expired holder's result: %v", err)
	}
	if gone := b.Expire(t0.Add(time.Minute)); len(gone) != 0 {
		t.Fatalf("expired twice: %v", gone)
	}
}

func TestLeaseDuration(t *testing.T) {
	for _, c := range []struct {
		min, estimate, want time.Duration
	}{
		{2 * time.Minute, 0, 2 * time.Minute},
		{2 * time.Minute, 20 * time.Second, 2 * time.Minute},
		{2 * time.Minute, time.Minute, 4 * time.Minute},
		{2 * time.Minute, 10 * time.Hour, MaxDuration},
		{2 * time.Hour, 10 * time.Hour, 2 * time.Hour},
		{time.Minute, -time.Second, time.Minute},
		{time.Minute, math.MaxInt64, MaxDuration},
	} {
		if got := LeaseDuration(c.min, c.estimate); got != c.want {
			t.Errorf("LeaseDuration(%v, %v) = %v, want %v", c.min, c.estimate, got, c.want)
		}
	}
	// From the measured rate: 10 MB take 10 s, so a 60 MB bin is estimated at 60 s and leased 4 min.
	var rate plan.RewriteRate
	for range 3 {
		rate.Add(10e6, 10*time.Second)
	}
	b := newBook(Config{MinDuration: time.Minute})
	b.SetRate(rate)
	b.Offer("events", []Job{bin("a", 6, 10e6), bin("b", 1, 1e6)}, t0)
	ls := mustTake(t, b, "w1", Want{FreeBytes: 2, MergeBytes: 1}, false, t0)
	if ls[0].Duration != 4*time.Minute || ls[1].Duration != time.Minute {
		t.Fatalf("durations %v and %v, want 4m (60 MB) and the 1m minimum (1 MB)", ls[0].Duration, ls[1].Duration)
	}
	if g := ls[0].Grant(); g.DurationMs != 240_000 || g.Duration() != 4*time.Minute {
		t.Fatalf("grant %+v", g)
	}
}

// repeating is a broken id source.
type repeating struct{}

func (repeating) Uint64() uint64 { return 42 }

func TestLeaseIDs(t *testing.T) {
	take := func(src IDSource) []string {
		b := NewBook(Config{}, src)
		var jobs []Job
		for i := range 50 {
			jobs = append(jobs, bin(fmt.Sprint("b", i), 1, 10))
		}
		b.Offer("events", jobs, t0)
		ls, err := b.Take("w1", Want{FreeBytes: 50, MergeBytes: 1}, false, t0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range ls {
			ids = append(ids, l.ID)
		}
		return ids
	}
	a, c := take(rand.NewPCG(7, 7)), take(rand.NewPCG(7, 7))
	seen := map[string]bool{}
	for i, id := range a {
		if !idRe.MatchString(id) || seen[id] || id != c[i] {
			t.Fatalf("lease id %d %q: not 32 hex, repeated, or not from the source (%q)", i, id, c[i])
		}
		seen[id] = true
	}
	b := NewBook(Config{}, repeating{})
	b.Offer("events", []Job{bin("a", 1, 1), bin("b", 1, 1)}, t0)
	ls, err := b.Take("w1", Want{FreeBytes: 2, MergeBytes: 1}, false, t0)
	if len(ls) != 1 || err == nil {
		t.Fatalf("a source that repeats: %d leases, %v; want one lease and an error", len(ls), err)
	}
}

func TestDrop(t *testing.T) {
	b := newBook(Config{})
	b.Offer("events", []Job{bin("a", 1, 1), bin("b", 1, 1)}, t0)
	b.Offer("logs", []Job{bin("c", 1, 1)}, t0)
	l := mustTake(t, b, "w1", oneSlot, false, t0)[0]
	gone := b.Drop(l.Table)
	if len(gone) != 1 || gone[0].ID != l.ID || b.Outstanding(l.Table) != (Outstanding{}) {
		t.Fatalf("drop: %v, left %+v", gone, b.Outstanding(l.Table))
	}
	if _, err := b.Complete(l.ID, "w1", t0); !errors.Is(err, ErrNotLive) {
		t.Fatalf("a dropped lease completed: %v", err)
	}
	if tables := b.Tables(); len(tables) != 1 {
		t.Fatalf("tables %v, want the other one", tables)
	}
}

func TestTakeRefusesBadInput(t *testing.T) {
	b := newBook(Config{})
	for _, c := range []struct {
		worker string
		want   Want
	}{{"", oneSlot}, {"w", Want{FreeBytes: 1}}, {"w", Want{FreeBytes: -1, MergeBytes: 1}}, {"w", Want{MergeBytes: 1, MaxBinBytes: -1}}} {
		if _, err := b.Take(c.worker, c.want, false, t0); err == nil {
			t.Errorf("Take(%q, %+v) took", c.worker, c.want)
		}
	}
}

// TestBookConcurrent: the transport and the table loops call the book at once (run with -race).
func TestBookConcurrent(t *testing.T) {
	b := newBook(Config{MinDuration: time.Second})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
				ls, _ := b.Take(fmt.Sprint("w", w), Want{FreeBytes: 2, MergeBytes: 1}, w == 0, now)
				for _, l := range ls {
					b.Renew(l.ID, l.Worker, now)
					b.Complete(l.ID, l.Worker, now)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
			b.Expire(now)
			b.Offer("events", []Job{bin(fmt.Sprint("a", i%7), 2, 10), bin(fmt.Sprint("b", i%5), 1, 10)}, now)
			b.InFlight("events")
			b.Outstanding("events")
			b.Leases("events")
		}
	})
	wg.Wait()
}

// TestLeaseAgeBound: a lease ends MaxAge after it was taken however often it is renewed, so a
// worker's outputs are committed (if ever) inside orphan gc's floor; its result past the bound is
// refused.
func TestLeaseAgeBound(t *testing.T) {
	b := newBook(Config{MinDuration: time.Minute, MaxAge: 150 * time.Second})
	b.Offer("events", []Job{bin("a", 2, 10)}, t0)
	ls := mustTake(t, b, "w1", oneSlot, false, t0)
	if len(ls) != 1 || !ls[0].Deadline.Equal(t0.Add(time.Minute)) {
		t.Fatalf("took %v, want one lease until t0+1m", ls)
	}
	id := ls[0].ID
	for _, at := range []time.Duration{40 * time.Second, 80 * time.Second, 120 * time.Second} {
		l, err := b.Renew(id, "w1", t0.Add(at))
		if err != nil {
			t.Fatalf("renew at +%v: %v", at, err)
		}
		if want := minTime(t0.Add(at+time.Minute), t0.Add(150*time.Second)); !l.Deadline.Equal(want) {
			t.Fatalf("renewed at +%v until %v, want %v", at, l.Deadline, want)
		}
	}
	if _, err := b.Renew(id, "w1", t0.Add(150*time.Second)); !errors.Is(err, ErrNotLive) {
		t.Fatalf("renew at the age bound: %v, want ErrNotLive", err)
	}
	if _, err := b.Complete(id, "w1", t0.Add(151*time.Second)); !errors.Is(err, ErrNotLive) {
		t.Fatalf("result past the age bound: %v, want ErrNotLive", err)
	}
	if ended := b.Expire(t0.Add(151 * time.Second)); len(ended) != 1 || ended[0].ID != id {
		t.Fatalf("expired %v, want the lease", ended)
	}
	if len(b.InFlight("events")) != 0 {
		t.Fatal("an expired lease's files are still in flight")
	}
}

// TestCompletedLeaseInFlightUntilSettled: a completed lease's inputs stay in flight while its
// result is committed, so a pass in the meantime cannot plan them again (and lose to the commit).
func TestCompletedLeaseInFlightUntilSettled(t *testing.T) {
	b := newBook(Config{})
	j := bin("a", 2, 10)
	b.Offer("events", []Job{j}, t0)
	ls := mustTake(t, b, "w1", oneSlot, false, t0)
	l, err := b.Complete(ls[0].ID, "w1", t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.InFlight("events"); len(got) != 2 {
		t.Fatalf("in flight while committing: %v, want both inputs", got)
	}
	if o := b.Outstanding("events"); o.LeasedBins != 0 || o.CommittingBins != 1 {
		t.Fatalf("outstanding while committing: %+v", o)
	}
	if _, err := b.Renew(l.ID, "w1", t0.Add(2*time.Second)); !errors.Is(err, ErrNotLive) {
		t.Fatalf("renewing a completed lease: %v, want ErrNotLive", err)
	}
	if refused := b.Offer("events", []Job{j}, t0.Add(2*time.Second)); len(refused) != 1 || !errors.Is(refused[0].Err, ErrLeased) {
		t.Fatalf("offering the committing bin again: %v, want ErrLeased", refused)
	}
	b.Settle(l)
	b.Settle(l) // twice is harmless
	if got := b.InFlight("events"); len(got) != 0 {
		t.Fatalf("in flight after settling: %v", got)
	}
	if o := b.Outstanding("events"); o != (Outstanding{}) || len(b.Tables()) != 0 {
		t.Fatalf("after settling: %+v, tables %v", o, b.Tables())
	}
}
