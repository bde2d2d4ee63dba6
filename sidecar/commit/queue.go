package commit

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/siglake/siglake/localwal"
)

// MaxQueueBytes caps the encoded bytes of every queued request together: with MaxMessageBytes per
// request, at least 64 requests always fit, and a committer's queue never holds more than this.
// Under a small memory limit the process memory budget bounds it first (QueueConfig.Reserve).
const MaxQueueBytes = 64 << 20

// DefaultMaxRequests is group-commit-queue-max's default: 4096 requests of a few KiB each (a
// batch's files are a few hundred bytes of stats apiece) hold far less than MaxQueueBytes.
const DefaultMaxRequests = 4096

// MaxSlowDown is the most a committer asks pods to stretch their batch age.
const MaxSlowDown = 60 * time.Second

// QueueConfig is what a committer's queue decides with.
type QueueConfig struct {
	// Catalog is this process's catalog identity: a request for another catalog is refused.
	Catalog string
	// MaxRequests caps queued requests over all tables (group-commit-queue-max); beyond it,
	// busy. 0 means DefaultMaxRequests.
	MaxRequests int
	// MaxBytes caps their encoded bytes; 0 means MaxQueueBytes.
	MaxBytes int
	// Reserve takes a request's encoded bytes of the process memory budget (membudget's
	// Share.TryReserve) without waiting, as it is queued; release gives them back when it leaves
	// the queue. ok false: the budget is spent and the request is answered busy, so a committer
	// under a small memory limit refuses rather than grows. nil: only MaxBytes bounds the queue.
	Reserve func(bytes int64) (release func(), ok bool)
	// MaxFiles is the files one group commit takes (group-commit-max-files), and Interval how often
	// one runs (group-commit-interval): together they say how far behind a table's queue is.
	MaxFiles int
	Interval time.Duration
	// MaxWait is how long a request may wait for a fuller commit (group-commit-max-wait): acks
	// carry it, so pods wait for this committer's answer by its setting, not their own.
	MaxWait time.Duration
	// Authenticated reports whether messages come over an authenticated transport right now (a
	// gossip key and no key migration); nil means they do. Unauthenticated requests are refused:
	// a forged one could move a mark past rows it does not hold.
	Authenticated func() bool
	// Owner reports whether this process owns table's commits and, if not, who does in its view
	// (required; the gossip leases, settling included).
	Owner func(table string) (owns bool, owner string)
}

// Queued is a request waiting in a table's queue.
type Queued struct {
	Request  Request
	Received time.Time // when it was first received, with the monotonic reading of the caller's clock
	Size     int       // encoded bytes
	release  func()    // gives its bytes of the memory budget back; nil when none were taken
}

// giveBack returns the request's bytes of the memory budget.
func (q Queued) giveBack() {
	if q.release != nil {
		q.release()
	}
}

// Files is the number of data files the request carries.
func (q Queued) Files() int { return len(q.Request.Files) }

// Refusal reasons (siglake_group_commit_refused_total{reason}).
const (
	ReasonInvalid         = "invalid"
	ReasonCatalog         = "catalog"
	ReasonUnauthenticated = "unauthenticated"
	ReasonNotOwner        = "not_owner"
	ReasonBusy            = "busy"
)

// Verdict is what Receive did with one message.
type Verdict struct {
	// To is the member the answer goes to; empty when nothing is answered (a heartbeat, or a
	// message too broken to name its sender).
	To     string
	Answer Answer
	// Reason is why the request was not queued (a Reason* constant); empty when it was queued,
	// was already queued, or is a heartbeat.
	Reason string
	// Err is the validation error of an invalid message.
	Err error
	// Request is the decoded message; a heartbeat's watermark inputs are read from it.
	Request Request
}

// Queue is a committer's per-table FIFOs of requests, bounded over all tables. It is safe for
// concurrent use: the transport receives while the committer loops take.
type Queue struct {
	cfg    QueueConfig
	mu     sync.Mutex
	tables map[string][]Queued
	files  map[string]int    // queued files per table
	byID   map[string]string // request id -> table
	count  int
	bytes  int
	closed bool // the committer stopped: every request is answered not_owner
}

// NewQueue returns an empty queue.
func NewQueue(cfg QueueConfig) *Queue {
	if cfg.MaxRequests <= 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = MaxQueueBytes
	}
	return &Queue{cfg: cfg, tables: map[string][]Queued{}, files: map[string]int{}, byID: map[string]string{}}
}

// Receive applies the receive rules to one request message from sender, the member the
// transport's authenticated envelope names, in order: invalid (a From other than sender
// included), an unauthenticated transport or another catalog -> done refused (the pod commits
// directly); a table this process does not own -> not_owner; a heartbeat -> nothing queued; an id
// already queued -> its From updated, ack; the caps reached -> busy; else queued -> ack. Answers
// go to sender, never to a member the message names: one member must not make the committer
// send answers to another. A heartbeat is never answered, whatever the rule (its Reason still
// says which). now is the caller's clock (time.Now: its monotonic reading measures the request's
// age).
func (q *Queue) Receive(sender string, msg []byte, now time.Time) Verdict {
	r, err := DecodeRequest(msg)
	if err != nil {
		return q.invalid(sender, msg, err)
	}
	if r.From != sender {
		v := Verdict{To: sender, Request: r, Reason: ReasonInvalid,
			Err: fmt.Errorf("request from %s claims to be from %s", quote(sender), quote(r.From))}
		v.Answer = answer(r, KindDone)
		v.Answer.Outcome, v.Answer.Error = OutcomeRefused, fmt.Sprintf("from %s is not the sender %s", quote(r.From), quote(sender))
		if r.Heartbeat() {
			v.To, v.Answer = "", Answer{}
		}
		return v
	}
	v := q.receive(r, len(msg), now)
	if r.Heartbeat() {
		v.To, v.Answer = "", Answer{} // fire and forget: the pod listens for no answer
	}
	return v
}

// receive applies the rules to a request that decoded.
func (q *Queue) receive(r Request, size int, now time.Time) Verdict {
	v := Verdict{To: r.From, Request: r}
	refuse := func(reason, why string) Verdict {
		v.Reason = reason
		v.Answer = answer(r, KindDone)
		v.Answer.Outcome, v.Answer.Error = OutcomeRefused, why
		return v
	}
	if q.cfg.Authenticated != nil && !q.cfg.Authenticated() {
		return refuse(ReasonUnauthenticated, "the committer's gossip is not authenticated (no key, or a key migration)")
	}
	if r.Catalog != q.cfg.Catalog {
		return refuse(ReasonCatalog, fmt.Sprintf("catalog %s, this committer's is %s", quote(r.Catalog), q.cfg.Catalog))
	}
	if owns, owner := q.cfg.Owner(r.Table); !owns || q.Closed() {
		return notOwner(v, owner)
	}
	if r.Heartbeat() {
		return v
	}
	return q.enqueue(v, size, now)
}

// notOwner is v answered not_owner, naming owner (empty when this process knows no other).
func notOwner(v Verdict, owner string) Verdict {
	v.Reason = ReasonNotOwner
	v.Answer = answer(v.Request, KindNotOwner)
	v.Answer.Owner = owner
	return v
}

// invalid refuses a message that did not decode, answering sender when the message names the
// batch (an answer carries only names that are valid).
func (q *Queue) invalid(sender string, msg []byte, err error) Verdict {
	r := partial(msg)
	v := Verdict{Reason: ReasonInvalid, Err: err}
	if sender == "" || !idRe.MatchString(r.ID) {
		return v
	}
	v.To = sender
	v.Answer = Answer{V: Version, ID: r.ID, Kind: KindDone, Outcome: OutcomeRefused, Error: err.Error()}
	if localwal.ValidTable(r.Table) {
		v.Answer.Table = r.Table
	}
	if localwal.ValidStream(r.Stream) {
		v.Answer.Stream = r.Stream
	}
	return v
}

// partial reads what it can of a request that did not validate: who it says sent it, and which
// batch.
func partial(msg []byte) (r Request) {
	if len(msg) == 0 || msg[0] != KindRequest || len(msg) > MaxMessageBytes {
		return r
	}
	var names struct{ ID, From, Table, Stream any }
	if json.Unmarshal(msg[1:], &names) != nil {
		return r
	}
	str := func(v any) string { s, _ := v.(string); return s }
	return Request{ID: str(names.ID), From: str(names.From), Table: str(names.Table), Stream: str(names.Stream)}
}

// enqueue applies the duplicate, caps and enqueue rules.
func (q *Queue) enqueue(v Verdict, size int, now time.Time) Verdict {
	r := v.Request
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed { // closed since the owner check: Close has taken what it will answer
		return notOwner(v, "")
	}
	if table, ok := q.byID[r.ID]; ok {
		for i, e := range q.tables[table] {
			if e.Request.ID != r.ID {
				continue
			}
			if !sameBatch(e.Request, r) {
				v.Reason = ReasonInvalid
				v.Answer = answer(r, KindDone)
				v.Answer.Outcome, v.Answer.Error = OutcomeRefused, "id already queued for another batch"
				return v
			}
			q.tables[table][i].Request.From = r.From // a resend: answers go where the pod is now
			v.Answer = answer(r, KindAck)
			v.Answer.Queue, v.Answer.SlowMs = q.commitsAhead(q.tables[table][:i]), q.slowMs(table)
			v.Answer.WaitMs, v.Answer.IntervalMs = q.cfg.MaxWait.Milliseconds(), q.cfg.Interval.Milliseconds()
			return v
		}
	}
	var release func()
	ok := q.count+1 <= q.cfg.MaxRequests && q.bytes+size <= q.cfg.MaxBytes
	if ok && q.cfg.Reserve != nil {
		release, ok = q.cfg.Reserve(int64(size))
	}
	if !ok {
		v.Reason = ReasonBusy
		v.Answer = answer(r, KindBusy)
		// Never 0: a busy pod resends after SlowMs, and at once would only be refused again.
		v.Answer.SlowMs = max(q.slowMs(r.Table), q.cfg.Interval.Milliseconds())
		return v
	}
	ahead := q.commitsAhead(q.tables[r.Table])
	q.tables[r.Table] = append(q.tables[r.Table], Queued{Request: r, Received: now, Size: size, release: release})
	q.files[r.Table] += len(r.Files)
	q.byID[r.ID] = r.Table
	q.count++
	q.bytes += size
	v.Answer = answer(r, KindAck)
	v.Answer.Queue, v.Answer.SlowMs = ahead, q.slowMs(r.Table)
	v.Answer.WaitMs, v.Answer.IntervalMs = q.cfg.MaxWait.Milliseconds(), q.cfg.Interval.Milliseconds()
	return v
}

// commitsAhead is how many group commits the requests ahead of one take before it: their files
// over MaxFiles. Counting requests instead made a pod deep in a queue that one commit empties (a
// hundred pods' requests under --group-commit-max-wait) wait past its fallback bound after a
// committer died, and commit directly rather than move to the next owner.
func (q *Queue) commitsAhead(ahead []Queued) int {
	files := 0
	for _, e := range ahead {
		files += len(e.Request.Files)
	}
	return files / max(q.cfg.MaxFiles, 1)
}

// sameBatch reports whether two requests with one id describe the same batch (a resend).
func sameBatch(a, b Request) bool {
	return a.Table == b.Table && a.Stream == b.Stream && a.First == b.First && a.Last == b.Last && len(a.Files) == len(b.Files)
}

func answer(r Request, kind string) Answer {
	return Answer{V: Version, ID: r.ID, Table: r.Table, Stream: r.Stream, Kind: kind}
}

// slowMs is the table's batch-age floor; q.mu is held.
func (q *Queue) slowMs(table string) int64 {
	return SlowDown(q.files[table], q.cfg.MaxFiles, q.cfg.Interval).Milliseconds()
}

// SlowDown is the batch age pods are asked to keep at least for a table with files queued:
// behind = files / maxFiles is how many group commits the queue holds; up to 2 that is normal
// (one committing, one filling) and the answer is 0, beyond it behind x interval, at most
// MaxSlowDown. Pods batching that long send fewer, bigger requests, so segments wait on their WAL
// disks rather than in the committer's memory.
func SlowDown(files, maxFiles int, interval time.Duration) time.Duration {
	if maxFiles <= 0 || files <= 2*maxFiles {
		return 0
	}
	behind := float64(files) / float64(maxFiles)
	return min(time.Duration(behind*float64(interval)), MaxSlowDown)
}

// Pending returns a copy of table's queue in arrival order.
func (q *Queue) Pending(table string) []Queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]Queued(nil), q.tables[table]...)
}

// Remove takes the requests of ids out of table's queue (answered: committed, expired, dropped),
// keeping the others in arrival order.
func (q *Queue) Remove(table string, ids ...string) {
	drop := make(map[string]bool, len(ids))
	for _, id := range ids {
		drop[id] = true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	kept := q.tables[table][:0]
	for _, e := range q.tables[table] {
		if !drop[e.Request.ID] {
			kept = append(kept, e)
			continue
		}
		e.giveBack()
		delete(q.byID, e.Request.ID)
		q.files[table] -= e.Files()
		q.count--
		q.bytes -= e.Size
	}
	clear(q.tables[table][len(kept):])
	if len(kept) == 0 {
		delete(q.tables, table)
		delete(q.files, table)
		return
	}
	q.tables[table] = kept
}

// Close empties the queue and returns what it held, table by table in arrival order: the
// committer stopped and answers them not_owner, so their pods ask the next owner at once instead
// of waiting out an answer timeout. From then on every request is answered not_owner.
func (q *Queue) Close() []Queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	var out []Queued
	for _, table := range sortedKeys(q.tables) {
		for _, e := range q.tables[table] {
			e.giveBack()
			out = append(out, e)
		}
	}
	q.tables, q.files, q.byID = map[string][]Queued{}, map[string]int{}, map[string]string{}
	q.count, q.bytes = 0, 0
	return out
}

// Closed reports whether Close was called.
func (q *Queue) Closed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// Stats is a table's queue at one moment.
type Stats struct {
	Requests, Files, Bytes int
	Data                   int64     // the queued batches' data bytes (Request.Bytes)
	Oldest                 time.Time // the first queued request's Received; zero when none
	Behind                 bool      // a queued request's pod has another batch due behind it (More)
	SlowDown               time.Duration
}

// Table returns table's queue stats.
func (q *Queue) Table(table string) Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := Stats{Requests: len(q.tables[table]), Files: q.files[table]}
	for i, e := range q.tables[table] {
		s.Bytes += e.Size
		s.Data += e.Request.Bytes
		s.Behind = s.Behind || e.Request.More
		if i == 0 || e.Received.Before(s.Oldest) {
			s.Oldest = e.Received
		}
	}
	s.SlowDown = SlowDown(s.Files, q.cfg.MaxFiles, q.cfg.Interval)
	return s
}

// Tables returns the tables with queued requests.
func (q *Queue) Tables() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]string, 0, len(q.tables))
	for t := range q.tables {
		out = append(out, t)
	}
	return out
}

// Totals returns the requests and encoded bytes queued over all tables.
func (q *Queue) Totals() (requests, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.count, q.bytes
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
