package work

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// hookLog records what the observer hooks were told, in order.
type hookLog struct {
	mu    sync.Mutex
	lines []string
}

func (h *hookLog) add(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, fmt.Sprintf(format, args...))
}

func (h *hookLog) has(line string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.lines, line)
}

func (h *hookLog) count(line string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.lines {
		if l == line {
			n++
		}
	}
	return n
}

func (h *hookLog) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprint(h.lines)
}

func (h *hookLog) wait(t *testing.T, line string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !h.has(line); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %s", line, h)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestOwnerHooks: Ended is told of every lease's end exactly once, with the outcome its result
// was answered (committed, conflict, failed for a failed merge or a result failing the check,
// maybe_committed), lapsed when the book expired it without a result, dropped when the owner
// dropped the table; Refused is told of each renewal and result refused, with why (not_live,
// not_holder, catalog), and a refused result ends no lease again.
func TestOwnerHooks(t *testing.T) {
	hub := peermsg.NewLocalHub()
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	log := &hookLog{}
	commits := map[string]string{} // the input path of a bin -> the commit's outcome
	book := NewBook(Config{MinDuration: time.Minute, OwnerWait: time.Hour}, rand.NewChaCha8([32]byte{3}))
	o := NewOwner(OwnerConfig{Book: book, Catalog: "cat", Now: clock, Tick: time.Hour,
		Check: func(_ context.Context, l Lease, _ [][]byte) error {
			if commits[l.Job.Inputs[0].Path] == "bad files" {
				return errors.New("not the job's outputs")
			}
			return nil
		},
		Commit: func(_ context.Context, l Lease, _ WorkerMessage) CommitResult {
			return CommitResult{Outcome: commits[l.Job.Inputs[0].Path], Removed: true}
		},
		Remove: func(context.Context, Lease, [][]byte) {},
		Ended: func(l Lease, outcome string) {
			log.add("ended %s %s", l.Job.Inputs[0].Path[len(l.Job.Dir)+1:], outcome)
		},
		Refused: func(m WorkerMessage, reason string) { log.add("refused %s %s %s", m.Type, m.From, reason) },
	}, hub.Member("owner"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for !hub.Member("owner").Handles(KindWorker) {
		time.Sleep(time.Millisecond)
	}
	bins := map[string]string{"ok": OutcomeCommitted, "race": OutcomeConflict, "unsure": OutcomeMaybeCommitted,
		"bad": "bad files", "broken": "", "late": "", "other": "", "xheld": ""}
	var jobs []Job
	for _, name := range slices.Sorted(maps.Keys(bins)) { // offered in this order: xheld last
		j := job(name, 2, 100)
		commits[j.Inputs[0].Path] = bins[name]
		jobs = append(jobs, j)
	}
	if refused := o.Offer("events", jobs); len(refused) > 0 {
		t.Fatal(refused[0].Err)
	}
	leases := map[string]Grant{} // by bin name
	got := map[string]chan OwnerMessage{}
	for _, w := range []string{"w", "x"} {
		ch := make(chan OwnerMessage, 16)
		got[w] = ch
		hub.Member(w).Handle(KindOwner, func(_ string, msg []byte) {
			if m, err := DecodeOwner(msg); err == nil {
				ch <- m
			}
		})
	}
	send := func(from string, m WorkerMessage) {
		t.Helper()
		m.V, m.From = Version, from
		if m.Catalog == "" {
			m.Catalog = "cat"
		}
		msg, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := hub.Member(from).Send("owner", msg); err != nil {
			t.Fatal(err)
		}
	}
	leased := func(w string) []Grant { // the next leases message to w, past the answers before it
		t.Helper()
		for {
			select {
			case m := <-got[w]:
				if m.Type == TypeLeases {
					return m.Leases
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s got no leases", w)
			}
		}
	}
	send("w", WorkerMessage{Type: TypeWant, FreeBytes: 7, MergeBytes: 1}) // every bin but xheld, the last offered
	for _, g := range leased("w") {
		leases[g.Job.Inputs[0].Path[len(g.Job.Dir)+1:len(g.Job.Inputs[0].Path)-len("-0.parquet")]] = g
	}
	if len(leases) != 7 {
		t.Fatalf("leased %d bins, want 7: %v", len(leases), leases)
	}
	send("x", WorkerMessage{Type: TypeWant, FreeBytes: 1, MergeBytes: 1})
	if g := leased("x"); len(g) != 1 {
		t.Fatalf("x leased %d bins, want 1", len(g))
	}
	for _, name := range []string{"ok", "race", "unsure", "bad"} {
		send("w", WorkerMessage{Type: TypeResult, Lease: leases[name].ID, Status: StatusMerged, Files: [][]byte{[]byte("f")}})
	}
	send("w", WorkerMessage{Type: TypeResult, Lease: leases["broken"].ID, Status: StatusFailed, Error: "merge failed"})
	for name, outcome := range map[string]string{"ok": OutcomeCommitted, "race": OutcomeConflict, "unsure": OutcomeMaybeCommitted,
		"bad": OutcomeFailed, "broken": OutcomeFailed} {
		log.wait(t, "ended "+name+"-0.parquet "+outcome)
	}
	// A lease x holds: w's renewal is not the holder's; a renewal of another catalog is refused.
	var xs string
	for _, l := range book.Leases("events") {
		if l.Worker == "x" {
			xs = l.ID
		}
	}
	send("w", WorkerMessage{Type: TypeRenew, Lease: xs})
	log.wait(t, "refused renew w not_holder")
	send("w", WorkerMessage{Type: TypeRenew, Catalog: "other", Lease: leases["late"].ID})
	log.wait(t, "refused renew w catalog")

	// Every lease left lapses; a result of one is refused and ends nothing again, as is a second
	// result of a lease that ended with its first.
	now.Add(int64(2 * time.Minute))
	o.InFlight("events")
	for _, name := range []string{"late", "other", "xheld"} {
		log.wait(t, "ended "+name+"-0.parquet lapsed")
	}
	send("w", WorkerMessage{Type: TypeResult, Lease: leases["late"].ID, Status: StatusMerged, Files: [][]byte{[]byte("f")}})
	log.wait(t, "refused result w not_live")
	send("w", WorkerMessage{Type: TypeResult, Lease: leases["ok"].ID, Status: StatusMerged, Files: [][]byte{[]byte("f")}})
	for log.count("refused result w not_live") < 2 {
		time.Sleep(time.Millisecond)
	}

	// A table dropped ends its leases.
	if refused := o.Offer("events", []Job{job("drop", 2, 100)}); len(refused) > 0 {
		t.Fatal(refused[0].Err)
	}
	bins["drop"] = ""
	send("w", WorkerMessage{Type: TypeWant, FreeBytes: 1, MergeBytes: 1})
	if g := leased("w"); len(g) != 1 {
		t.Fatalf("w leased %d bins, want 1", len(g))
	}
	o.Drop("events")
	log.wait(t, "ended drop-0.parquet dropped")
	ends := 0
	for name := range bins {
		for _, outcome := range []string{OutcomeCommitted, OutcomeConflict, OutcomeFailed, OutcomeMaybeCommitted, EndLapsed, EndDropped} {
			ends += log.count("ended " + name + "-0.parquet " + outcome)
		}
	}
	if ends != len(bins) {
		t.Fatalf("%d lease ends told for %d leases: %s", ends, len(bins), log)
	}
}

// TestWorkerHooks: Started is told of each lease the worker runs, with its owner; Merging once
// when its merge holds its memory, or when it returned without saying so (then it waits on the
// answer); Merged of what each merge returned; Done of how each lease ended: the answer's outcome, lost for a result
// too large to send (and Dropped of that message), refused for a lease of another catalog, which
// never starts.
func TestWorkerHooks(t *testing.T) {
	hub := peermsg.NewLocalHub()
	log := &hookLog{}
	owner := hub.Member("o")
	var wants atomic.Int32
	grant := func(name string) Grant {
		return Grant{ID: testLeaseID(len(name)), Table: "events", Job: job(name, 2, 100), DurationMs: time.Hour.Milliseconds()}
	}
	owner.Handle(KindWorker, func(from string, msg []byte) {
		m, err := DecodeWorker(msg, from)
		if err != nil {
			t.Error(err)
			return
		}
		var reply OwnerMessage
		switch {
		case m.Type == TypeResult:
			reply = OwnerMessage{V: Version, Type: TypeAnswer, Lease: m.Lease, Outcome: OutcomeCommitted}
		case m.Type != TypeWant:
			return
		case wants.Add(1) == 1:
			reply = OwnerMessage{V: Version, Type: TypeLeases, Catalog: "cat", Leases: []Grant{grant("ok"), grant("huge")}}
		case wants.Load() == 2:
			reply = OwnerMessage{V: Version, Type: TypeLeases, Catalog: "other", Leases: []Grant{grant("alien")}}
		default:
			reply = OwnerMessage{V: Version, Type: TypeLeases, Catalog: "cat", RetryMs: time.Hour.Milliseconds()}
		}
		enc, err := reply.Encode()
		if err != nil {
			t.Error(err)
			return
		}
		_ = owner.Send(from, enc)
	})
	w := NewWorker(WorkerConfig{Catalog: "cat", Poll: 5 * time.Millisecond,
		Owners: func() []string { return []string{"o"} },
		Budget: func() Want { return Want{FreeBytes: 4, MergeBytes: 1} },
		Merge: func(_ context.Context, g Grant, merging func()) Merge {
			if g.ID == grant("huge").ID { // never says it holds memory
				return Merge{Files: [][]byte{make([]byte, MaxMessageBytes)}, BytesRead: 7, Took: time.Second}
			}
			merging()
			merging()
			return Merge{Files: [][]byte{[]byte("f")}, BytesRead: 200, BytesWritten: 150, Took: 2 * time.Second}
		},
		Started: func(owner string, g Grant) { log.add("started %s from %s", g.ID, owner) },
		Merging: func(g Grant) { log.add("merging %s", g.ID) },
		Merged:  func(g Grant, m Merge) { log.add("merged %s %d bytes in %s", g.ID, m.BytesRead, m.Took) },
		Done:    func(g Grant, outcome string) { log.add("done %s %s", g.ID, outcome) },
		Dropped: func() { log.add("dropped") },
	}, hub.Member("w"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	ok, huge, alien := grant("ok").ID, grant("huge").ID, grant("alien").ID
	for _, line := range []string{
		"started " + ok + " from o", "merging " + ok, "merged " + ok + " 200 bytes in 2s", "done " + ok + " committed",
		"started " + huge + " from o", "merging " + huge, "merged " + huge + " 7 bytes in 1s", "dropped", "done " + huge + " lost",
		"done " + alien + " refused",
	} {
		log.wait(t, line)
	}
	cancel()
	<-done
	if log.has("started "+alien+" from o") || log.count("done "+ok+" committed") != 1 || log.count("merging "+ok) != 1 ||
		log.count("merging "+huge) != 1 || log.has("merging "+alien) {
		t.Fatalf("hooks told %s", log)
	}
}

// TestWorkerAsksForWhatItsMergesLeave: a worker's want counts a granted bin whose merge does not
// hold its memory yet as spent, a merging bin only through the budget's held bytes (not twice),
// and a bin waiting on the owner's answer not at all (its merge released its memory).
func TestWorkerAsksForWhatItsMergesLeave(t *testing.T) {
	hub := peermsg.NewLocalHub()
	owner := hub.Member("o")
	grant := func(name string) Grant {
		return Grant{ID: testLeaseID(len(name)), Table: "events", Job: job(name, 2, 100), DurationMs: time.Hour.Milliseconds()}
	}
	var mu sync.Mutex
	var wants []int64
	var results atomic.Int32
	owner.Handle(KindWorker, func(from string, msg []byte) {
		m, err := DecodeWorker(msg, from)
		if err != nil {
			t.Error(err)
			return
		}
		var reply OwnerMessage
		switch m.Type {
		case TypeResult:
			results.Add(1) // never answered: the bin waits on the answer
			return
		case TypeWant:
			mu.Lock()
			wants = append(wants, m.FreeBytes)
			first := len(wants) == 1
			mu.Unlock()
			reply = OwnerMessage{V: Version, Type: TypeLeases, Catalog: "cat", RetryMs: 1}
			if first {
				reply.Leases = []Grant{grant("a"), grant("bb")}
			}
		default:
			return
		}
		enc, err := reply.Encode()
		if err != nil {
			t.Error(err)
			return
		}
		_ = owner.Send(from, enc)
	})
	var held atomic.Int64 // the budget's held bytes: what merges reserved
	release := map[string]chan struct{}{grant("a").ID: make(chan struct{}), grant("bb").ID: make(chan struct{})}
	admit := make(chan struct{}) // bb's merge gets its memory
	// A poll long enough for the owner's answer to come back within two (a later one drops the
	// grant: its leases lapse, and this owner grants once).
	w := NewWorker(WorkerConfig{Catalog: "cat", Poll: 25 * time.Millisecond, AnswerWait: time.Hour,
		Owners: func() []string { return []string{"o"} },
		Budget: func() Want { return Want{FreeBytes: 4 - held.Load(), MergeBytes: 1} },
		Merge: func(ctx context.Context, g Grant, merging func()) Merge {
			if g.ID == grant("bb").ID {
				select { // waits for merge memory
				case <-admit:
				case <-ctx.Done():
					return Merge{Err: ctx.Err()}
				}
			}
			held.Add(1)
			merging()
			select {
			case <-release[g.ID]:
			case <-ctx.Done():
			}
			held.Add(-1)
			return Merge{Files: [][]byte{[]byte("f")}}
		},
	}, hub.Member("w"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// lastWant waits until the last three wants, sent since it was called, asked for free bytes
	// want (the state settles between them; a worker that counts wrong never does).
	lastWant := func(what string, want int64) {
		t.Helper()
		var seen []int64
		mu.Lock()
		from := len(wants)
		mu.Unlock()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			mu.Lock()
			seen = slices.Clone(wants[max(len(wants)-3, from):])
			mu.Unlock()
			if len(seen) == 3 && seen[0] == want && seen[1] == want && seen[2] == want {
				return
			}
		}
		t.Fatalf("%s: the last wants asked for %v free bytes, want %d", what, seen, want)
	}
	lastWant("a merging, bb waiting for memory", 2) // 4 - 1 held by a - 1 for bb
	close(admit)
	lastWant("both merging", 2) // 4 - 2 held
	close(release[grant("a").ID])
	close(release[grant("bb").ID])
	for deadline := time.Now().Add(10 * time.Second); results.Load() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d results sent in 10 s, want 2", results.Load())
		}
	}
	lastWant("both waiting on the answer", 4)
}

// TestWantNeverCountsAMergeAsFree: a bin whose merge takes its memory while the worker builds a
// want (between its reads of the budget and of its waiting bins) is counted at least once: the
// want never asks for the merge it already runs.
func TestWantNeverCountsAMergeAsFree(t *testing.T) {
	hub := peermsg.NewLocalHub()
	owner := hub.Member("o")
	g := Grant{ID: testLeaseID(1), Table: "events", Job: job("a", 2, 100), DurationMs: time.Hour.Milliseconds()}
	var mu sync.Mutex
	var wants []int64
	owner.Handle(KindWorker, func(from string, msg []byte) {
		m, err := DecodeWorker(msg, from)
		if err != nil || m.Type != TypeWant {
			return
		}
		mu.Lock()
		wants = append(wants, m.FreeBytes)
		first := len(wants) == 1
		mu.Unlock()
		reply := OwnerMessage{V: Version, Type: TypeLeases, Catalog: "cat", RetryMs: 1}
		if first {
			reply.Leases = []Grant{g}
		}
		if enc, err := reply.Encode(); err == nil {
			_ = owner.Send(from, enc)
		}
	})
	var held atomic.Int64
	var started atomic.Bool
	admit, admitted := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w := NewWorker(WorkerConfig{Catalog: "cat", Poll: 2 * time.Millisecond, AnswerWait: time.Hour,
		Owners: func() []string { return []string{"o"} },
		Budget: func() Want {
			free := 4 - held.Load()
			if started.Load() { // the bin's merge takes its memory right after this read
				once.Do(func() { close(admit); <-admitted })
			}
			return Want{FreeBytes: free, MergeBytes: 1}
		},
		Merge: func(ctx context.Context, _ Grant, merging func()) Merge {
			started.Store(true)
			<-admit
			held.Add(1)
			merging()
			close(admitted)
			<-ctx.Done()
			return Merge{Err: ctx.Err()}
		},
	}, hub.Member("w"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(wants)
		mu.Unlock()
		if n >= 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d wants in 10 s", n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range wants[1:] {
		if f > 3 {
			t.Fatalf("wants of %v free merges while one of 4 merges: a merge counted as free", wants)
		}
	}
}
