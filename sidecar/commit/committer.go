package commit

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/peermsg"
)

// DefaultCommitterRetry is a group commit's retries unless CommitterConfig.Retry is set: fewer
// and shorter than a drain's, since conflicts are rare once maintenance shares the table lock
// and the queue keeps filling meanwhile.
var DefaultCommitterRetry = lake.Retry{Attempts: 4, MinWait: 50 * time.Millisecond, MaxWait: time.Second}

// DefaultMaxFiles is group-commit-max-files' default.
const DefaultMaxFiles = 512

// DefaultInterval is group-commit-interval's default.
const DefaultInterval = time.Second

// DefaultMaxWait is group-commit-max-wait's default: at 100 pods' 32 MiB batches every 10 s a
// commit then carries about 1.3 GB, under 3 metadata objects per GB, where one a second carried
// 320 MB (9 per GB); a batch waits at most 4 s more to be visible.
const DefaultMaxWait = 4 * time.Second

// DefaultTargetBytes is group-commit-target-mb's default: a table queuing a GB of data commits at
// the next interval rather than waiting for more.
const DefaultTargetBytes = 1 << 30

// loopIdle is how long a table's loop lives without queued requests.
const loopIdle = time.Minute

// answerBuffer bounds the answers waiting for the sender; beyond it answers are dropped (the pods
// time out and re-read their marks).
const answerBuffer = 1024

// errNotOwner stops a group commit whose committer lost the table between attempts.
var errNotOwner = errors.New("this process no longer owns the table's commits")

// Committer gathers the requests of every pod for the tables this process owns and commits each
// table's at most once per interval (docs/design/group-commit.md section 2): one loop per table
// with queued requests, one lake.CommitGroup per round, one answer per request. It deletes
// nothing, ever: files of a request it did not commit stay for the pod or orphan gc.
type Committer struct {
	cfg    CommitterConfig
	tr     peermsg.Transport
	m      Membership
	outbox *peermsg.Outbox // answers: a sender per member, so a slow one holds only its own
	// lateSends bounds the answers in flight after the sender stopped (not_owner to pods that
	// still send here until this member leaves gossip); beyond it they are dropped.
	lateSends chan struct{}

	mu      sync.Mutex
	ctx     context.Context // Run's: loops stop on it, a commit in flight finishes
	running bool
	late    bool                     // the sender stopped: answers leave on goroutines of their own
	q       *Queue                   // created once the catalog identity is known; closed when Run stops
	loops   map[string]chan struct{} // table -> wake-up of its loop
	owned   map[string]*ownedTable   // tables this process owned at their last request or round
	wg      sync.WaitGroup           // the loops
}

// ownedTable is what a committer keeps of a table it owns.
type ownedTable struct {
	wm *Watermark
	// seeded: wm holds the streams the table's properties name (Watermark.Seed), read by the
	// first group commit after this process took the table over; nothing is published before.
	seeded  bool
	last    *LastCommit
	through time.Time
	live    int
	members map[string]*memberHeard
}

type memberHeard struct {
	streams map[string]bool
	last    time.Time
}

// NewCommitter returns a committer receiving on tr for the tables m says this process owns.
// Zero options take their defaults.
func NewCommitter(cfg CommitterConfig, tr peermsg.Transport, m Membership) *Committer {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	if cfg.TargetBytes <= 0 {
		cfg.TargetBytes = DefaultTargetBytes
	}
	if cfg.QueueMax <= 0 {
		cfg.QueueMax = DefaultMaxRequests
	}
	if cfg.Retry.Attempts <= 0 {
		cfg.Retry = DefaultCommitterRetry
	}
	defaults(cfg.Lake, &cfg.CommitTimeout, &cfg.Observer, &cfg.Now)
	return &Committer{cfg: cfg, tr: tr, m: m, outbox: peermsg.NewOutbox(tr, answerBuffer, memberAnswers, cfg.Observer.AnswerDropped),
		lateSends: make(chan struct{}, lateAnswers),
		loops:     map[string]chan struct{}{}, owned: map[string]*ownedTable{}}
}

// memberAnswers bounds the answers waiting for one member; beyond it they are dropped (the pod
// times out and re-reads its mark).
const memberAnswers = 256

// lateAnswers bounds the answers sent after Run stopped that are in flight at once.
const lateAnswers = 64

// Run receives and commits until ctx is done; a commit in flight then finishes first, and its
// answers leave before Run returns. The requests still queued are answered not_owner, and so is
// every request received after Run returned, so their pods ask the membership for the next owner
// at once instead of waiting out an answer timeout. Pass the process's work context.
func (c *Committer) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return errors.New("group committer already running")
	}
	c.ctx, c.running, c.late, c.q = ctx, true, false, nil
	c.mu.Unlock()
	stop, sent := make(chan struct{}), make(chan struct{})
	go func() { defer close(sent); c.outbox.Run(stop) }()
	c.tr.Handle(KindRequest, c.receive)
	<-ctx.Done()
	c.mu.Lock()
	c.running = false // no loop starts after this, so Wait cannot race an Add
	c.mu.Unlock()
	c.wg.Wait()
	c.handBack()
	c.mu.Lock()
	c.late = true // answered from now on without the sender, whose last answers leave below
	c.mu.Unlock()
	close(stop)
	<-sent
	return nil
}

// handBack closes the queue and answers what it held not_owner, naming the owner in this
// process's view when it is another member.
func (c *Committer) handBack() {
	c.mu.Lock()
	if c.q == nil {
		c.q = NewQueue(c.queueConfig()) // nothing held; answers not_owner from now on
	}
	q := c.q
	c.mu.Unlock()
	held := q.Close()
	for _, e := range held {
		c.cfg.Observer.Refused(ReasonNotOwner)
		a := answer(e.Request, KindNotOwner)
		if owner, ok := c.m.Committer(e.Request.Table); ok && owner != c.tr.Name() {
			a.Owner = owner
		}
		c.answer(e.Request.From, a)
	}
	seen := map[string]bool{}
	for _, e := range held {
		if !seen[e.Request.Table] {
			seen[e.Request.Table] = true
			c.cfg.Observer.Queued(e.Request.Table, 0, 0)
		}
	}
}

// answer queues a for the sender without waiting: a full buffer drops it. Once the sender
// stopped, a goroutine of its own sends it (at most lateAnswers at once).
func (c *Committer) answer(to string, a Answer) {
	msg, err := a.Encode()
	if err != nil {
		c.cfg.Observer.AnswerDropped()
		return
	}
	if a.Kind == KindDone {
		c.cfg.Observer.Answered(a.Outcome)
	}
	c.mu.Lock()
	late := c.late
	c.mu.Unlock()
	if late {
		c.sendLate(to, msg)
		return
	}
	c.outbox.Post(to, msg)
}

// sendLate sends one answer after the sender stopped, without blocking the caller.
func (c *Committer) sendLate(to string, msg []byte) {
	select {
	case c.lateSends <- struct{}{}:
	default:
		c.cfg.Observer.AnswerDropped()
		return
	}
	go func() {
		defer func() { <-c.lateSends }()
		if err := c.tr.Send(to, msg); err != nil {
			c.cfg.Observer.AnswerDropped()
		}
	}()
}

// queue is the request queue: nil before Run, closed (answering not_owner) once Run stopped.
// Until the catalog identity is known a queue of no catalog refuses every request (the pods
// commit directly).
func (c *Committer) queue() *Queue {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.q != nil {
		return c.q
	}
	if !c.running {
		return nil
	}
	cfg := c.queueConfig()
	if cfg.Catalog == "" {
		return NewQueue(cfg)
	}
	c.q = NewQueue(cfg)
	return c.q
}

// queueConfig is the queue's configuration from the committer's options and membership.
func (c *Committer) queueConfig() QueueConfig {
	return QueueConfig{Catalog: c.m.Catalog(), MaxRequests: c.cfg.QueueMax, MaxFiles: c.cfg.MaxFiles,
		Interval: c.cfg.Interval, MaxWait: c.cfg.MaxWait, Authenticated: c.m.Authenticated, Owner: c.owner, Reserve: c.cfg.Reserve}
}

// owner is the queue's ownership rule: the membership's view.
func (c *Committer) owner(table string) (bool, string) {
	if c.m.Owns(table) {
		return true, ""
	}
	member, _ := c.m.Committer(table)
	return false, member
}

// receive is the transport's handler of requests: the queue's receive rules, the answer, and a
// wake-up of the table's loop. It never blocks.
func (c *Committer) receive(from string, msg []byte) {
	q := c.queue()
	if q == nil {
		return
	}
	now := c.cfg.Now()
	v := q.Receive(from, msg, now)
	if v.Reason != "" {
		c.cfg.Observer.Refused(v.Reason)
	}
	if v.To != "" {
		c.answer(v.To, v.Answer)
	}
	if v.Reason != "" || v.Err != nil {
		return
	}
	r := v.Request
	c.heard(r, now, r.Heartbeat())
	if r.Heartbeat() {
		return
	}
	st := q.Table(r.Table)
	c.cfg.Observer.Queued(r.Table, st.Requests, st.Bytes)
	c.kick(r.Table, st.Files >= c.cfg.MaxFiles)
}

// heard records r's sender for the table's status, and r in its watermark when wm is set (a
// heartbeat, or a request found committed).
func (c *Committer) heard(r Request, now time.Time, wm bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.ownedLocked(r.Table, now)
	m := o.members[r.From]
	if m == nil {
		m = &memberHeard{streams: map[string]bool{}}
		o.members[r.From] = m
	}
	m.streams[r.Stream], m.last = true, now
	if wm {
		o.wm.Heard(r, now)
	}
}

// ownedLocked returns table's state, starting it (and its watermark) at now; c.mu is held.
func (c *Committer) ownedLocked(table string, now time.Time) *ownedTable {
	o := c.owned[table]
	if o == nil {
		o = &ownedTable{wm: NewWatermark(now), members: map[string]*memberHeard{}}
		c.owned[table] = o
	}
	return o
}

// kick starts table's loop if it is not running, and wakes it at once when now is set.
func (c *Committer) kick(table string, now bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return
	}
	wake, ok := c.loops[table]
	if !ok {
		wake = make(chan struct{}, 1)
		c.loops[table] = wake
		c.wg.Add(1)
		go c.loop(c.ctx, table, wake)
	}
	if now {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// loop runs table's rounds every interval, or at once when woken, until ctx ends or the table
// had nothing queued for loopIdle.
func (c *Committer) loop(ctx context.Context, table string, wake <-chan struct{}) {
	defer c.wg.Done()
	tick := time.NewTicker(c.cfg.Interval)
	defer tick.Stop()
	busy := c.cfg.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-wake:
		}
		st := c.q.Table(table)
		if st.Requests == 0 {
			if c.cfg.Now().Sub(busy) > loopIdle && c.endLoop(table) {
				return
			}
			continue
		}
		if !c.due(table, st) {
			continue
		}
		c.round(ctx, table)
		busy = c.cfg.Now()
	}
}

// due says whether a table's queue commits at this tick: its oldest request would wait past
// MaxWait by the next tick, its batches hold TargetBytes of data or MaxFiles files, a pod has more
// batches waiting behind its request (a pod sends one batch at a time, so a backlog would drain
// at one batch per MaxWait), or the table is no longer owned (the round sends its requests away).
// A wake-up commits at once.
func (c *Committer) due(table string, st Stats) bool {
	if c.cfg.MaxWait <= c.cfg.Interval || st.Behind || st.Data >= c.cfg.TargetBytes || st.Files >= c.cfg.MaxFiles {
		return true
	}
	return c.cfg.Now().Sub(st.Oldest)+c.cfg.Interval > c.cfg.MaxWait || !c.m.Owns(table)
}

// endLoop removes table's loop if nothing is queued for it. receive queues before it kicks, so a
// request queued meanwhile either keeps this loop or starts the next.
func (c *Committer) endLoop(table string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.q.Table(table).Requests > 0 {
		return false
	}
	delete(c.loops, table)
	return true
}

// round is one turn of a table's loop: a table no longer owned sends its requests away; else
// expired requests are answered, and the selected ones committed together.
func (c *Committer) round(ctx context.Context, table string) {
	now := c.cfg.Now()
	if !c.m.Owns(table) {
		c.disown(table)
		return
	}
	sel := Select(c.q.Pending(table), now, SelectConfig{MaxAge: c.maxAge(), MaxFiles: c.cfg.MaxFiles})
	for _, e := range sel.Expired {
		c.cfg.Observer.Refused(OutcomeExpired)
		a := answer(e.Request, KindDone)
		a.Outcome, a.Error = OutcomeExpired, "older than the hand-off age bound: commit directly"
		c.answer(e.Request.From, a)
	}
	c.remove(table, sel.Expired)
	if len(sel.Selected) > 0 {
		c.commit(ctx, table, sel.Selected, now)
	}
	c.publish(table, c.cfg.Now())
}

// maxAge is the oldest request an attempt may start on (orphans.HandoffMaxAge): checked when a
// commit selects it and again before every attempt, so every landing stays inside gc's floor.
func (c *Committer) maxAge() time.Duration { return orphans.HandoffMaxAge(c.cfg.CommitTimeout) }

// Tidy forgets the tables this process no longer owns (their gauges and status go): once pods
// send elsewhere a former owner's queue stays empty, so no round runs to disown them.
func (c *Committer) Tidy() {
	c.mu.Lock()
	names := slices.Collect(maps.Keys(c.owned))
	running := c.running
	c.mu.Unlock()
	for _, name := range names {
		if running && !c.m.Owns(name) {
			c.disown(name)
		}
	}
}

// disown answers every queued request of a table this process no longer owns not_owner (the
// pods ask the owner they see next) and forgets the table.
func (c *Committer) disown(table string) {
	var pending []Queued
	if q := c.queue(); q != nil {
		pending = q.Pending(table)
	}
	_, owner := c.owner(table)
	for _, e := range pending {
		c.cfg.Observer.Refused(ReasonNotOwner)
		a := answer(e.Request, KindNotOwner)
		a.Owner = owner
		c.answer(e.Request.From, a)
	}
	c.remove(table, pending)
	c.mu.Lock()
	delete(c.owned, table)
	c.mu.Unlock()
	c.cfg.Observer.Forget(table)
}

// remove takes answered requests out of the table's queue.
func (c *Committer) remove(table string, qs []Queued) {
	if len(qs) == 0 {
		return
	}
	ids := make([]string, len(qs))
	for i, e := range qs {
		ids[i] = e.Request.ID
	}
	c.q.Remove(table, ids...)
	st := c.q.Table(table)
	c.cfg.Observer.Queued(table, st.Requests, st.Bytes)
}

// publish passes the table's watermark to the observer, and forgets members silent for long.
func (c *Committer) publish(table string, now time.Time) {
	c.mu.Lock()
	o := c.owned[table]
	if o == nil {
		c.mu.Unlock()
		return
	}
	for name, m := range o.members {
		if now.Sub(m.last) > memberForget {
			delete(o.members, name)
		}
	}
	t, live, ok := o.wm.Through(now)
	ok = ok && o.seeded
	if ok {
		o.through, o.live = t, live
	}
	c.mu.Unlock()
	if ok {
		c.cfg.Observer.CompleteThrough(table, t, live)
	}
}

// memberForget is how long a silent member stays in a table's status.
const memberForget = time.Hour
