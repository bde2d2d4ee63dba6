package restcat

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Fault is what the server does to one table commit (updateTable) instead of answering it plainly.
type Fault string

const (
	none Fault = ""
	// ApplyThen503 commits, then answers 503 ServiceUnavailable: the client's REST library reads it
	// as "commit state unknown" although the commit is in (the lost response of apache/iceberg#14425).
	ApplyThen503 Fault = "apply_then_503"
	// ApplyThenCut commits, then resets the connection without an answer: the client sees a broken
	// connection and cannot know the commit is in.
	ApplyThenCut Fault = "apply_then_cut"
	// Conflict409 commits nothing and answers 409 CommitFailedException, as when a concurrent commit
	// moved the table first: the client may retry on fresh metadata.
	Conflict409 Fault = "conflict_409"
	// Throttle429 commits nothing and answers 429 Too Many Requests with a Retry-After header.
	Throttle429 Fault = "throttle_429"
	// HoldBeforeApply holds the commit before applying it until Release (then it is applied and
	// answered as usual) or until the client goes away (then nothing is applied): a client killed
	// while its commit is in flight, before it landed.
	HoldBeforeApply Fault = "hold_before_apply"
	// ApplyThenHold applies the commit, then holds the answer until Release or until the client
	// goes away, and cuts the connection: a client killed after its commit landed, before it heard.
	ApplyThenHold Fault = "apply_then_hold"
	// Delayed counts the requests (of any operation) that Faults.Latency and Jitter slowed down.
	Delayed Fault = "delayed"
)

// AllFaults are the commit faults.
var AllFaults = []Fault{ApplyThen503, ApplyThenCut, Conflict409, Throttle429}

// Faults configures the faults. The zero value injects nothing.
type Faults struct {
	// Rates are the fraction of commits (0..1, summing to at most 1) that get each fault.
	Rates map[Fault]float64
	// RetryAfter is the Retry-After of a 429, in whole seconds (rounded up); 0 means 1 s.
	RetryAfter time.Duration
	// Latency is added to every request before it is handled, plus up to Jitter more (uniform).
	Latency, Jitter time.Duration
	// Tables limits the commit faults to the tables of these names; empty means every table.
	Tables []string
	// Seed makes the sequence of faults repeatable for a given order of commits.
	Seed uint64
}

type faultState struct {
	mu      sync.Mutex
	release chan struct{} // closed by Release: held commits go on
	holding int           // commits held now
	held    []string      // the updates of the commits held now, as JSON
	cfg     Faults
	rng     *rand.Rand
	queue   []Fault
	counts  map[Fault]int64
	last    map[Fault]time.Time
}

func (f *faultState) init() {
	f.counts, f.last, f.release = map[Fault]int64{}, map[Fault]time.Time{}, make(chan struct{})
	f.rng = rand.New(rand.NewPCG(0, 0))
}

// SetFaults replaces the fault configuration (Faults{} to heal the server). Queued faults stay.
func (s *Server) SetFaults(cfg Faults) {
	f := &s.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg = cfg
	f.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
}

// Inject queues fault for the next n commits to a table Faults.Tables admits, ahead of the
// rates. A queued ApplyThen503 or ApplyThenCut whose commit the catalog refuses (a conflict) has
// not fired and stays queued for the next commit.
func (s *Server) Inject(fault Fault, n int) {
	f := &s.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.queue = append(f.queue, fault)
	}
}

// Holding is how many commits a hold fault holds now.
func (s *Server) Holding() int {
	f := &s.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.holding
}

// Held returns the updates (JSON) of the commits held now: a test tells which client's commit it
// holds (a group commit's snapshot summary carries siglake.group.requests).
func (s *Server) Held() []string {
	f := &s.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.held)
}

// Release lets every commit held now go on.
func (s *Server) Release() {
	f := &s.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.release)
	f.release = make(chan struct{})
}

// hold blocks until Release or the end of ctx (the client went away) and reports whether the
// client is still there.
func (f *faultState) hold(ctx context.Context, fault Fault, updates string) bool {
	f.mu.Lock()
	f.holding++
	f.held = append(f.held, updates)
	release := f.release
	f.counts[fault]++
	f.last[fault] = time.Now()
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.holding--
		if i := slices.Index(f.held, updates); i >= 0 {
			f.held = slices.Delete(f.held, i, i+1)
		}
		f.mu.Unlock()
	}()
	select {
	case <-release:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// Queued is how many injected faults have not fired yet.
func (s *Server) Queued() int {
	f := &s.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// Fired returns how many times each fault fired.
func (s *Server) Fired() map[Fault]int64 {
	f := &s.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[Fault]int64, len(f.counts))
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}

// LastFired is when fault last fired (zero if never).
func (s *Server) LastFired(fault Fault) time.Time {
	f := &s.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[fault]
}

// RetryAfter is the Retry-After a 429 carries now.
func (s *Server) RetryAfter() time.Duration {
	f := &s.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.retryAfterLocked()
}

func (f *faultState) retryAfterLocked() time.Duration {
	secs := (f.cfg.RetryAfter + time.Second - 1) / time.Second
	return max(1, secs) * time.Second
}

func (f *faultState) delay(ctx context.Context) error {
	f.mu.Lock()
	d := f.cfg.Latency
	if f.cfg.Jitter > 0 {
		d += time.Duration(f.rng.Int64N(int64(f.cfg.Jitter) + 1))
	}
	f.mu.Unlock()
	if d == 0 {
		return nil
	}
	f.fired(Delayed)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pick decides the fault of a commit to table name; queued says it came from Inject.
func (f *faultState) pick(name string) (fault Fault, queued bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cfg.Tables) > 0 && !slices.Contains(f.cfg.Tables, name) {
		return none, false
	}
	if len(f.queue) > 0 {
		fault := f.queue[0]
		f.queue = f.queue[1:]
		return fault, true
	}
	x := f.rng.Float64()
	for _, k := range AllFaults {
		if x < f.cfg.Rates[k] {
			return k, false
		}
		x -= f.cfg.Rates[k]
	}
	return none, false
}

func (fault Fault) refuses() bool { return fault == Conflict409 || fault == Throttle429 }

func (f *faultState) fired(fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[fault]++
	f.last[fault] = time.Now()
}

// unfired puts an injected fault back at the head of the queue: the commit it was picked for
// failed on its own, so an apply-then fault had nothing to act on.
func (f *faultState) unfired(fault Fault, queued bool) {
	if fault == none || !queued {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append([]Fault{fault}, f.queue...)
}

// refuse answers a commit that was not applied.
func (f *faultState) refuse(w http.ResponseWriter, fault Fault) {
	f.fired(fault)
	switch fault {
	case Conflict409:
		writeError(w, http.StatusConflict, "CommitFailedException",
			"restcat fault: a concurrent commit changed the table first; nothing was committed")
	case Throttle429:
		f.mu.Lock()
		ra := f.retryAfterLocked()
		f.mu.Unlock()
		w.Header().Set("Retry-After", strconv.Itoa(int(ra/time.Second)))
		writeError(w, http.StatusTooManyRequests, "TooManyRequestsException",
			"restcat fault: too many requests; nothing was committed")
	}
}

// afterApply answers a commit that was applied as fault says.
func (f *faultState) afterApply(w http.ResponseWriter, fault Fault) {
	switch fault {
	case ApplyThen503:
		f.fired(fault)
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException",
			"restcat fault: the commit was applied, but this answer says the service is unavailable")
	case ApplyThenCut:
		f.fired(fault)
		f.cut(w)
	}
}

// cut resets the connection of w without an answer.
func (f *faultState) cut(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		writeError(w, http.StatusInternalServerError, "InternalServerError", "restcat: cannot cut the connection")
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalServerError", "restcat: cannot cut the connection: "+err.Error())
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close with RST: the connection is reset, not shut down cleanly
	}
	_ = conn.Close()
}
