package commit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/drain/handoff"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/peermsg"
)

// DefaultFallbackAfter is group-commit-fallback-after's default.
const DefaultFallbackAfter = 30 * time.Second

// answersBuffered bounds the answers waiting for one request's Commit; more are dropped (the
// wait then times out and re-reads the mark).
const answersBuffered = 8

// Client hands a pod's batches to their tables' committers (drain/handoff.GroupCommitter) and
// commits directly when none answers in time (docs/design/group-commit.md section 3). A batch's
// request keeps its id and files on every resend, to whichever committer; the marks decide.
type Client struct {
	cfg ClientConfig
	tr  peermsg.Transport
	m   Membership

	// jitter draws a silent wait's random part (rand.Int64N's contract); tests replace it.
	jitter func(int64) int64

	mu        sync.Mutex
	waiting   map[string]*waiter // by request id
	slow      map[string]slowDown
	fallbacks map[string]int64
}

// waiter is one Commit waiting for its request's answers.
type waiter struct {
	answers chan received
	out     Outstanding // guarded by Client.mu
	ackedBy string      // the committer that last acked the request, and its place then (await's only)
	ackedAt int
	silent  int // sends that heard nothing in their wait (await's only)
}

type received struct {
	from string
	a    Answer
}

// slowDown is a table's batch-age floor as a committer last asked for it, until it lapses.
type slowDown struct {
	d     time.Duration
	until time.Time
}

// NewClient returns a client sending on tr to the committers m names, and receiving their
// answers on it. Zero options take their defaults.
func NewClient(cfg ClientConfig, tr peermsg.Transport, m Membership) *Client {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.FallbackAfter <= 0 {
		cfg.FallbackAfter = DefaultFallbackAfter
	}
	if cfg.Retry.Attempts <= 0 {
		cfg.Retry = lake.DefaultRetry
	}
	defaults(cfg.Lake, &cfg.CommitTimeout, &cfg.Observer, &cfg.Now)
	c := &Client{cfg: cfg, tr: tr, m: m, jitter: mrand.Int64N, waiting: map[string]*waiter{}, slow: map[string]slowDown{}, fallbacks: map[string]int64{}}
	tr.Handle(KindAnswer, c.receive)
	return c
}

// receive is the transport's handler of answers: a slow-down is noted, and the answer goes to
// the Commit waiting for its id. Answers of no waiting request (late, duplicated) are ignored.
func (c *Client) receive(from string, msg []byte) {
	a, err := DecodeAnswer(msg)
	if err != nil {
		return
	}
	if a.Kind == KindAck || a.Kind == KindBusy {
		c.noteSlow(a.Table, time.Duration(a.SlowMs)*time.Millisecond)
	}
	c.mu.Lock()
	w := c.waiting[a.ID]
	c.mu.Unlock()
	if w == nil || a.Table != w.out.Table || a.Stream != w.out.Stream {
		return
	}
	select {
	case w.answers <- received{from: from, a: a}:
	default:
	}
}

// Commit hands req to its table's committer and waits (handoff.GroupCommitter): the answer, or
// on silence the stream's mark re-read, says the outcome. It commits directly when no committer
// can take the request, and when none answered for FallbackAfter or the hand-off is older than
// orphans.HandoffMaxAge(CommitTimeout). handedOff: some Send was attempted, so a committer may
// still hold the files.
func (c *Client) Commit(ctx context.Context, t *table.Table, req lake.AppendRequest, epoch uint64, at handoff.Progress) (lake.CommitResult, bool, error) {
	start := c.cfg.Now()
	r, msg, owner, reason := c.request(t, req, epoch, at, start)
	if reason != "" {
		return c.direct(ctx, req, reason, false, start, start)
	}
	w := c.wait(r, owner, start)
	defer c.forget(r.ID)
	return c.handOff(ctx, req, msg, w, start)
}

// request is req as a message to the table's committer, or the fallback reason why it cannot be
// handed off.
func (c *Client) request(t *table.Table, req lake.AppendRequest, epoch uint64, at handoff.Progress, now time.Time) (Request, []byte, string, string) {
	owner, ok := c.m.Committer(req.Table)
	cat := c.m.Catalog()
	switch {
	case !ok || cat == "":
		return Request{}, nil, "", FallbackNoCommitter
	case !c.m.Authenticated():
		return Request{}, nil, "", FallbackUnauthenticated
	case len(req.Files) == 0:
		// Every row was past retention: the batch only moves its mark, and a request carries
		// files (a committer would refuse it).
		return Request{}, nil, "", FallbackRefused
	}
	files, err := EncodeFiles(t, req.Files)
	if err != nil {
		return Request{}, nil, "", FallbackRefused
	}
	r := Request{V: Version, ID: newID(), From: c.tr.Name(), Catalog: cat, Table: req.Table, Stream: req.Stream,
		First: req.First.String(), Last: req.Last.String(), Epoch: epoch,
		Format: t.Metadata().Version(), SchemaID: t.Schema().ID, SpecID: specID(t), Files: files,
		Segments: 1, WrittenMs: now.UnixMilli(), ScanMs: at.Scan.UnixMilli()}
	if !at.PendingSince.IsZero() {
		r.PendingMs = at.PendingSince.UnixMilli()
	}
	r.More = at.More
	if n, err := strconv.Atoi(req.Summary[tableprops.SumSegments]); err == nil && n > 0 {
		r.Segments = n
	}
	if n, err := strconv.ParseInt(req.Summary[tableprops.SumRows], 10, 64); err == nil && n > 0 {
		r.Rows = n
	}
	for _, f := range req.Files {
		r.Bytes += f.FileSizeBytes()
	}
	if c.cfg.Every != nil {
		r.EveryMs = c.cfg.Every(req.Table).Milliseconds()
	}
	msg, err := r.Encode()
	switch {
	case errors.Is(err, ErrTooLarge):
		return r, nil, "", FallbackTooLarge
	case err != nil:
		return r, nil, "", FallbackRefused
	}
	return r, msg, owner, ""
}

// newID is a request id: 128 random bits, hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return hex.EncodeToString(b[:])
}

// wait registers r's waiter, routing its answers to it.
func (c *Client) wait(r Request, owner string, now time.Time) *waiter {
	w := &waiter{answers: make(chan received, answersBuffered), out: Outstanding{ID: r.ID, Table: r.Table, Stream: r.Stream,
		First: r.First, Last: r.Last, To: owner, Since: now}}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting[r.ID] = w
	return w
}

func (c *Client) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, id)
}

// step is what one wait for answers decided.
type step int

const (
	stepResend step = iota // send the request again, same id
	stepDone               // the outcome is known: res, err
	stepDirect             // commit directly, for reason
)

// outcome is a step with its result.
type outcome struct {
	step   step
	reason string // stepDirect
	res    lake.CommitResult
	err    error
}

// handOff sends the request and waits, resending on silence, until the outcome is known or a
// bound sends the batch to a direct commit.
func (c *Client) handOff(ctx context.Context, req lake.AppendRequest, msg []byte, w *waiter, start time.Time) (lake.CommitResult, bool, error) {
	heard, first := start, time.Time{}
	maxAge := orphans.HandoffMaxAge(c.cfg.CommitTimeout)
	for sends := 1; ; sends++ {
		if req.Fence != nil {
			if err := req.Fence(); err != nil {
				c.done(req.Table, "failed", first, start)
				return lake.CommitResult{MaybeCommitted: !first.IsZero()}, !first.IsZero(), err
			}
		}
		now := c.cfg.Now()
		switch {
		case now.Sub(start) > maxAge:
			return c.direct(ctx, req, FallbackExpired, true, first, start)
		case now.Sub(heard) > c.cfg.FallbackAfter:
			return c.direct(ctx, req, FallbackTimeout, true, first, start)
		}
		to := c.sending(w, sends)
		if first.IsZero() {
			first = now
		}
		o := c.await(ctx, req, w, c.tr.Send(to, msg), &heard, start.Add(maxAge))
		switch o.step {
		case stepDirect:
			return c.direct(ctx, req, o.reason, true, first, start)
		case stepDone:
			o.res.Attempts = sends
			name := string(o.res.Outcome)
			switch {
			case errors.Is(o.err, lake.ErrMarkAhead):
				name = OutcomeMarkAhead
			case o.err != nil:
				name = OutcomeFailed
			}
			c.done(req.Table, name, first, start)
			o.res.MaybeCommitted = o.err != nil
			return o.res, true, o.err
		}
	}
}

// sending records a send of w's request and returns the member it goes to.
func (c *Client) sending(w *waiter, sends int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	w.out.Sends = sends
	return w.out.To
}

// await waits for the answers to one send (sendErr: the transport's error) until one decides,
// or the answer timeout passes: then the stream's mark says whether the batch is in. heard is
// when a committer was last heard from; no wait outlasts notAfter, the hand-off's age bound.
func (c *Client) await(ctx context.Context, req lake.AppendRequest, w *waiter, sendErr error, heard *time.Time, notAfter time.Time) outcome {
	if errors.Is(sendErr, peermsg.ErrRefused) {
		// Refused before any committer saw it (another key, a wrong address): a resend meets
		// the same refusal, so commit now rather than after the fallback bound.
		return outcome{step: stepDirect, reason: FallbackRefused}
	}
	wait := c.silentWait()
	if sendErr != nil {
		wait = c.cfg.Interval // the member is gone or unreachable: ask the membership again soon
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return outcome{step: stepDone, err: ctx.Err()}
		case <-timer.C:
			if sendErr != nil {
				return c.reroute(ctx, req, w, 0)
			}
			w.silent++
			if rereadDue(w.silent) {
				if o := c.reread(ctx, req); o.step != stepResend {
					return o
				}
			}
			return c.reroute(ctx, req, w, 0) // the owner may have changed meanwhile
		case rcv := <-w.answers:
			c.mu.Lock()
			to := w.out.To
			w.out.LastAnswer = rcv.a.Kind
			c.mu.Unlock()
			if rcv.a.Kind != KindDone && rcv.from != to {
				continue // an earlier committer's: only the one asked now says ack, busy or not_owner
			}
			now := c.cfg.Now()
			switch rcv.a.Kind {
			case KindAck:
				// An ack counts as hearing from the committer when it is its first, or shows the
				// request moved up its queue: one that acks every resend but commits nothing (hung
				// in a commit) must not hold the pod past the fallback bound. Nor does the wait
				// for the requests ahead in its queue.
				if w.ackedBy != rcv.from || rcv.a.Queue < w.ackedAt {
					*heard = now
				}
				w.ackedBy, w.ackedAt = rcv.from, rcv.a.Queue
				extra := time.Duration(rcv.a.Queue)*c.theirInterval(rcv.a.IntervalMs) + c.longerWait(rcv.a.WaitMs) +
					3*(c.theirInterval(rcv.a.IntervalMs)-c.cfg.Interval)
				// The fallback bound counts from when the committer was last heard, not from this
				// ack: one that re-acks the resends of a request it hangs on must not hold the pod
				// for a second full wait past it.
				timer.Reset(max(min(c.silentWait()+extra, heard.Add(c.cfg.FallbackAfter).Sub(now), notAfter.Sub(now)), 0))
			case KindBusy:
				// Busy is no progress: a committer hung in a commit keeps its queue full and
				// answers busy to everyone, and its pods must still fall back after the fallback
				// bound, not wait out the hand-off age bound. The slow-down it carries holds.
				c.cfg.Observer.Busy(req.Table)
				return c.pause(ctx, time.Duration(rcv.a.SlowMs)*time.Millisecond)
			case KindNotOwner:
				// Not hearing from a committer: a lasting disagreement over the owner ends in a
				// direct commit after the fallback bound, not in bouncing for the age bound.
				return c.reroute(ctx, req, w, min(c.cfg.Interval, time.Second))
			case KindDone:
				return c.settle(ctx, req, rcv.a)
			}
		}
	}
}

// answerTimeout is the least a send waits for an answer before the mark is re-read: three
// intervals, the committer's wait for a fuller commit, and 2 s for the commit itself.
func (c *Client) answerTimeout() time.Duration {
	return 3*c.cfg.Interval + max(c.cfg.MaxWait-c.cfg.Interval, 0) + 2*time.Second
}

// longerWait is how much longer than this pod's own --group-commit-max-wait the committer that
// acked says its requests may wait for a fuller commit (its wait_ms): a fleet whose pods and
// committer disagree on the option still waits for the committer's answers, rather than
// re-reading its marks and resending while a request waits as designed.
func (c *Client) longerWait(waitMs int64) time.Duration {
	// A longer wait_ms (a later version's wider option) is honoured up to today's longest: the
	// answer is still taken, with its slow-down, rather than refused.
	return max(time.Duration(min(waitMs, maxWaitMs))*time.Millisecond-max(c.cfg.MaxWait, c.cfg.Interval), 0)
}

// theirInterval is the longer of this pod's --group-commit-interval and the acking committer's
// (its interval_ms, honoured up to the option's longest): a pod whose own interval is shorter
// (a rollout changing the option) waits for the committer's rounds, not its own.
func (c *Client) theirInterval(intervalMs int64) time.Duration {
	return max(time.Duration(min(intervalMs, maxIntervalMs))*time.Millisecond, c.cfg.Interval)
}

// silentWait is how long a send waits for an answer: the answer timeout plus a random part of up
// to half of it. When a committer goes quiet, a thousand pods' waits end spread over that window
// instead of together (their re-reads, resends and fallbacks with them).
func (c *Client) silentWait() time.Duration {
	t := c.answerTimeout()
	return t + time.Duration(c.jitter(int64(t/2)+1))
}

// rereadDue says whether the n-th silent wait of a request re-reads its mark: the 1st, 2nd, 4th,
// 8th, ... A resend alone finds a committed batch too (the committer answers it already
// committed), so a pod whose committer stays quiet loads the table from the catalog a few times,
// not once per wait: a thousand such pods would take every connection the catalog has.
func rereadDue(n int) bool { return n > 0 && n&(n-1) == 0 }

// pause waits d before the next send.
func (c *Client) pause(ctx context.Context, d time.Duration) outcome {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return outcome{step: stepDone, err: ctx.Err()}
	case <-t.C:
		return outcome{step: stepResend}
	}
}

// reroute waits d, then asks the membership for the table's committer again: the next send goes
// there, or the batch is committed directly when there is none.
func (c *Client) reroute(ctx context.Context, req lake.AppendRequest, w *waiter, d time.Duration) outcome {
	if o := c.pause(ctx, d); o.step != stepResend {
		return o
	}
	owner, ok := c.m.Committer(req.Table)
	if !ok {
		return outcome{step: stepDirect, reason: FallbackNoCommitter}
	}
	c.mu.Lock()
	w.out.To = owner
	c.mu.Unlock()
	return outcome{step: stepResend}
}

// settle turns a done answer into the outcome; a failed one re-reads the mark.
func (c *Client) settle(ctx context.Context, req lake.AppendRequest, a Answer) outcome {
	switch a.Outcome {
	case OutcomeCommitted:
		prev := marks.Mark{}
		if a.Prev != "" {
			prev, _ = marks.ParseMark(a.Prev) // valid: DecodeAnswer checked it
		}
		return outcome{step: stepDone, res: lake.CommitResult{Outcome: lake.Committed, SnapshotID: a.SnapshotID, Prev: prev}}
	case OutcomeAlreadyCommitted:
		return outcome{step: stepDone, res: lake.CommitResult{Outcome: lake.AlreadyCommitted, SnapshotID: a.SnapshotID}}
	case OutcomeMarkAhead:
		return outcome{step: stepDone, err: fmt.Errorf("table %s stream %s: the group committer found the mark inside %s..%s: %w",
			req.Table, req.Stream, req.First, req.Last, lake.ErrMarkAhead)}
	case OutcomeExpired:
		return outcome{step: stepDirect, reason: FallbackExpired}
	case OutcomeRefused:
		return outcome{step: stepDirect, reason: FallbackRefused}
	}
	return c.reread(ctx, req) // failed, maybe committed: the mark knows
}

// reread reads the stream's mark: the batch is in (already committed), another writer has the
// stream (mark ahead), or it is not in yet and goes again.
func (c *Client) reread(ctx context.Context, req lake.AppendRequest) outcome {
	t, err := c.cfg.Lake.LoadTable(ctx, req.Table)
	if err != nil {
		return outcome{step: stepResend}
	}
	cur, has, err := marks.ReadMark(t, req.Stream)
	if err != nil {
		return outcome{step: stepDone, err: err}
	}
	switch marks.CheckMark(cur, has, req.First, req.Last) {
	case marks.MarkCovers:
		var snap int64
		if s := t.CurrentSnapshot(); s != nil {
			snap = s.SnapshotID
		}
		return outcome{step: stepDone, res: lake.CommitResult{Outcome: lake.AlreadyCommitted, SnapshotID: snap}}
	case marks.MarkInside:
		return outcome{step: stepDone, err: fmt.Errorf("table %s stream %s: mark %s, batch %s..%s: %w",
			req.Table, req.Stream, cur, req.First, req.Last, lake.ErrMarkAhead)}
	}
	return outcome{step: stepResend}
}

// direct commits req itself after a fallback. handedOff: a committer may hold the same files, so
// they stay even when this commit's outcome is known (both commits are pinned and mark-checked:
// at most one lands). since is the first send, or the start when nothing was sent.
func (c *Client) direct(ctx context.Context, req lake.AppendRequest, reason string, handedOff bool, since, written time.Time) (lake.CommitResult, bool, error) {
	c.mu.Lock()
	c.fallbacks[reason]++
	c.mu.Unlock()
	c.cfg.Observer.Fallback(req.Table, reason)
	retry := c.cfg.Retry
	if handedOff {
		// The hand-off took part of the time orphan gc leaves the files: only as many attempts
		// as still land inside its floor. None left: the batch fails with its files kept, and the
		// drain writes it again (new files) on its next try.
		retry.Attempts = min(retry.Attempts, directAttemptsLeft(c.cfg.CommitTimeout, retry.MaxWait, c.cfg.Now().Sub(written)))
		if retry.Attempts < 1 {
			c.cfg.Observer.RequestDone(req.Table, OutcomeFailed, c.cfg.Now().Sub(since))
			return lake.CommitResult{MaybeCommitted: true}, true, fmt.Errorf("table %s stream %s: %w", req.Table, req.Stream, ErrHandOffTooOld)
		}
	}
	res, err := c.cfg.Lake.CommitAppend(ctx, req, retry)
	res.MaybeCommitted = res.MaybeCommitted || handedOff
	c.cfg.Observer.RequestDone(req.Table, OutcomeDirect, c.cfg.Now().Sub(since))
	return res, handedOff, err
}

// ErrHandOffTooOld: a batch handed off too long ago to commit its files directly inside orphan
// gc's floor; the drain keeps the files and writes the batch again.
var ErrHandOffTooOld = errors.New("hand-off too old to commit its files directly")

// directAttemptsLeft is how many commit attempts of at most d each (plus up to wait between them)
// still end inside orphans.FloorMin(d) for files written age ago, keeping one d for the write
// itself and clock skew.
func directAttemptsLeft(d, wait, age time.Duration) int {
	left := orphans.FloorMin(d) - age - d
	if left <= 0 || d <= 0 {
		return 0
	}
	return int(left / (d + wait))
}

// done tells the observer how a handed-off request ended.
func (c *Client) done(table, outcome string, first, start time.Time) {
	if first.IsZero() {
		first = start
	}
	c.cfg.Observer.RequestDone(table, outcome, c.cfg.Now().Sub(first))
}

// noteSlow records the batch-age floor a committer asked for table. It lapses unless renewed
// within twice itself plus an answer timeout: pods send at least once per batch age, so a
// committer still behind renews it with every ack.
func (c *Client) noteSlow(table string, d time.Duration) {
	c.mu.Lock()
	prev := c.slow[table].d
	c.slow[table] = slowDown{d: d, until: c.cfg.Now().Add(2*d + c.answerTimeout())}
	c.mu.Unlock()
	if d != prev {
		c.cfg.Observer.SlowDown(table, d)
	}
}

// Heartbeat tells the table's committer that stream has nothing in flight: fire and forget, no
// catalog I/O, nothing sent without a committer that could take it.
func (c *Client) Heartbeat(table, stream string, scan, pendingSince time.Time) {
	owner, ok := c.m.Committer(table)
	cat := c.m.Catalog()
	if !ok || cat == "" || !c.m.Authenticated() {
		return
	}
	r := Request{V: Version, ID: newID(), From: c.tr.Name(), Catalog: cat, Table: table, Stream: stream, ScanMs: scan.UnixMilli()}
	if !pendingSince.IsZero() {
		r.PendingMs = pendingSince.UnixMilli()
	}
	if c.cfg.Every != nil {
		r.EveryMs = c.cfg.Every(table).Milliseconds()
	}
	if msg, err := r.Encode(); err == nil {
		_ = c.tr.Send(owner, msg) // lost: the next heartbeat or request says the same
	}
}

// SlowDown is the batch age the table's committer asked for, 0 once it lapsed.
func (c *Client) SlowDown(table string) time.Duration {
	c.mu.Lock()
	s, ok := c.slow[table]
	lapsed := ok && c.cfg.Now().After(s.until)
	if lapsed {
		delete(c.slow, table)
	}
	c.mu.Unlock()
	switch {
	case lapsed && s.d > 0:
		c.cfg.Observer.SlowDown(table, 0)
		return 0
	case lapsed:
		return 0
	}
	return s.d
}

// Status is the pod's part of /debug/status.
func (c *Client) Status() ClientStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := ClientStatus{Outstanding: []Outstanding{}, Fallbacks: map[string]int64{}}
	for _, w := range c.waiting {
		st.Outstanding = append(st.Outstanding, w.out)
	}
	slices.SortFunc(st.Outstanding, func(a, b Outstanding) int { return a.Since.Compare(b.Since) })
	for k, v := range c.fallbacks {
		st.Fallbacks[k] = v
	}
	return st
}
