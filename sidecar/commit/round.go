package commit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/commit/filecheck"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// commit commits the selected requests of table in one lake.CommitGroup and answers each from
// its item's result; all of them leave the queue. The commit runs to its end even when ctx ends
// (a SIGTERM must not cut an attempt whose outcome would then be unknown).
func (c *Committer) commit(ctx context.Context, name string, sel []Queued, start time.Time) {
	items := make([]lake.GroupItem, len(sel))
	// One append takes a file path once (iceberg-go refuses the whole append otherwise): a file
	// in two requests is the later one's refusal, never the group's failure.
	claimed := map[string]string{}
	files, decode := 0, c.decoder(ctx, sel)
	for i, e := range sel {
		r := e.Request
		first, _ := marks.ParseMark(r.First) // valid: the queue validated the request
		last, _ := marks.ParseMark(r.Last)
		items[i] = lake.GroupItem{ID: r.ID, Stream: r.Stream, First: first, Last: last, Rows: r.Rows, Segments: r.Segments,
			Files:   func(t *table.Table) ([]iceberg.DataFile, error) { return claim(claimed, r.ID)(decode(t, r)) },
			Expired: func() bool { return e.TooOld(c.cfg.Now(), c.maxAge()) }}
		files += len(r.Files)
	}
	g := lake.GroupCommit{Table: name, Items: items,
		Summary: iceberg.Properties{tableprops.SumGroupRequests: strconv.Itoa(len(items))},
		Props:   c.props(name),
		// Ownership is re-checked before every attempt: a committer that lost its lease stops;
		// what it still commits is pinned and mark-checked anyway.
		Fence: func() error {
			if !c.m.Owns(name) {
				return errNotOwner
			}
			return nil
		}}
	res, err := c.cfg.Lake.CommitGroup(context.WithoutCancel(ctx), g, c.cfg.Retry)
	end := c.cfg.Now()
	last := &LastCommit{Time: end, Requests: len(sel), Files: files, Seconds: end.Sub(start).Seconds(), Outcome: commitOutcome(res, err)}
	var waits []time.Duration
	answered := sel[:0:0]
	for i, e := range sel {
		it := res.Items[i]
		if errors.Is(it.Err, lake.ErrNotNow) {
			continue // its files could not be checked: it stays queued, unanswered, for the next round
		}
		answered = append(answered, e)
		// A recovered item was in an attempt whose answer was lost and that landed: this group
		// commit's, counted and told Landed like one answered at once (its pod hears
		// already_committed, as from any lost answer).
		if it.Err == nil && (it.Outcome == lake.Committed || it.Outcome == lake.AlreadyCommitted && it.Recovered) {
			last.Streams++
			last.SnapshotID = it.SnapshotID
			waits = append(waits, end.Sub(e.Received))
		}
		c.answerItem(e.Request, it, end)
	}
	c.remove(name, answered)
	if last.Streams > 0 || err != nil { // else every item was resolved without a commit
		c.cfg.Observer.Commit(name, last.Outcome, res.Attempts)
	}
	if last.Streams > 0 {
		c.cfg.Observer.Committed(name, last.Streams, waits, end.Sub(start))
		if c.cfg.Landed != nil {
			c.cfg.Landed(name)
		}
	}
	c.mu.Lock()
	if o := c.owned[name]; o != nil {
		o.last = last
	}
	c.mu.Unlock()
}

// decoder returns one group commit's decoding of a request's files: DecodeFiles' checks, then
// each file's existence and size in the object store. The first request decoded stats the files
// of every selected request at once (bounded), so a commit of many requests waits for one round
// of stats, not one per request.
func (c *Committer) decoder(ctx context.Context, sel []Queued) func(*table.Table, Request) ([]iceberg.DataFile, error) {
	stats := filecheck.NewStats(context.WithoutCancel(ctx), c.cfg.FileIO)
	var once sync.Once
	// What the first decode decoded, for the items decoded against the same table: each
	// request's files are decoded once per group commit, not twice.
	var seenT *table.Table
	decoded := map[string][]iceberg.DataFile{}
	return func(t *table.Table, r Request) ([]iceberg.DataFile, error) {
		once.Do(func() {
			seenT = t
			var all []iceberg.DataFile
			for _, e := range sel {
				if files, err := DecodeFiles(t, e.Request); err == nil { // else its own decode refuses it
					all = append(all, files...)
					decoded[e.Request.ID] = files
				}
			}
			stats.Stat(t, all)
		})
		files, ok := decoded[r.ID]
		if !ok || t != seenT {
			var err error
			if files, err = DecodeFiles(t, r); err != nil {
				return nil, err
			}
		}
		if err := stats.Check(t, files); errors.Is(err, filecheck.ErrUnchecked) {
			return nil, fmt.Errorf("%w: %w", lake.ErrNotNow, err) // kept for a later group commit
		} else if err != nil {
			return nil, err
		}
		return files, nil
	}
}

// claim returns a check that claims the paths of request id's files in claimed, failing on a path
// another request (or this one, twice) claimed first. CommitGroup decodes items one at a time.
func claim(claimed map[string]string, id string) func([]iceberg.DataFile, error) ([]iceberg.DataFile, error) {
	return func(files []iceberg.DataFile, err error) ([]iceberg.DataFile, error) {
		if err != nil {
			return nil, err
		}
		mine := map[string]bool{}
		for _, f := range files {
			p := f.FilePath()
			if other, ok := claimed[p]; ok || mine[p] {
				return nil, fmt.Errorf("file %q is in request %s of this group commit too", p, cmp.Or(other, id))
			}
			mine[p] = true
		}
		for p := range mine {
			claimed[p] = id
		}
		return files, nil
	}
}

// commitOutcome is a group commit's outcome for the observer (Commit*).
func commitOutcome(res lake.GroupResult, err error) string {
	switch {
	case err == nil:
		return CommitCommitted
	case res.MaybeCommitted:
		return CommitUnknown
	case lake.IsConflict(err):
		return CommitConflict
	}
	return CommitFailed
}

// answerItem answers r from its item's result; a request found committed feeds the watermark.
func (c *Committer) answerItem(r Request, it lake.ItemResult, now time.Time) {
	a := answer(r, KindDone)
	switch {
	case it.Err == nil && it.Outcome == lake.Committed:
		a.Outcome, a.SnapshotID = OutcomeCommitted, it.SnapshotID
		if it.Prev != (marks.Mark{}) {
			a.Prev = it.Prev.String()
		}
		c.heard(r, now, true)
	case it.Err == nil && it.Outcome == lake.AlreadyCommitted:
		a.Outcome, a.SnapshotID = OutcomeAlreadyCommitted, it.SnapshotID
		c.heard(r, now, true)
	case errors.Is(it.Err, errNotOwner):
		c.cfg.Observer.Refused(ReasonNotOwner)
		a = answer(r, KindNotOwner)
		_, a.Owner = c.owner(r.Table)
	case errors.Is(it.Err, lake.ErrMarkAhead):
		a.Outcome, a.Error = OutcomeMarkAhead, it.Err.Error()
	case errors.Is(it.Err, lake.ErrExpired):
		c.cfg.Observer.Refused(OutcomeExpired)
		a.Outcome, a.Error = OutcomeExpired, "older than the hand-off age bound: commit directly"
	case errors.Is(it.Err, lake.ErrRefused):
		c.cfg.Observer.Refused(ReasonInvalid)
		a.Outcome, a.Error = OutcomeRefused, it.Err.Error()
	default:
		a.Outcome, a.MaybeCommitted = OutcomeFailed, it.MaybeCommitted
		if it.Err != nil {
			a.Error = it.Err.Error()
		}
	}
	c.answer(r.From, a)
}

// props composes what every attempt of a table's group commit sets and removes: the process's
// properties (cfg.Props), then the complete-through watermark when it advanced.
func (c *Committer) props(name string) func(t *table.Table, in []lake.GroupItem) (iceberg.Properties, []string) {
	return func(t *table.Table, in []lake.GroupItem) (iceberg.Properties, []string) {
		now := c.cfg.Now()
		set := iceberg.Properties{}
		var remove []string
		if c.cfg.Props != nil {
			s, rm := c.cfg.Props(t, in, now)
			maps.Copy(set, s)
			remove = rm
		}
		c.mu.Lock()
		var through time.Time
		var live int
		ok := false
		if o := c.owned[name]; o != nil {
			if !o.seeded {
				o.wm.Seed(t.Properties(), now)
				o.seeded = true
			}
			through, live, ok = o.wm.Through(now)
		}
		c.mu.Unlock()
		if ok {
			maps.Copy(set, CompleteThroughProps(t.Properties(), through, live, c.tr.Name()))
		}
		return set, remove
	}
}

// maxMembers caps the members a table's status lists.
const maxMembers = 64

// Status is the committer's part of /debug/status: every table it owns or holds requests of.
func (c *Committer) Status() CommitterStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := map[string]bool{}
	for t := range c.owned {
		names[t] = true
	}
	if c.q != nil {
		for _, t := range c.q.Tables() {
			names[t] = true
		}
	}
	out := CommitterStatus{Tables: []CommitterTable{}}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		ct := CommitterTable{Table: name}
		if c.q != nil {
			st := c.q.Table(name)
			ct.QueueRequests, ct.QueueBytes = st.Requests, st.Bytes
			ct.BehindIntervals = float64(st.Files) / float64(c.cfg.MaxFiles)
		}
		if o := c.owned[name]; o != nil {
			if o.last != nil {
				last := *o.last
				ct.LastCommit = &last
			}
			ct.CompleteThrough, ct.LiveStreams = o.through, o.live
			ct.Members = members(o.members)
		}
		out.Tables = append(out.Tables, ct)
	}
	return out
}

// members lists the members heard, stalest first, at most maxMembers.
func members(heard map[string]*memberHeard) []MemberHeard {
	out := make([]MemberHeard, 0, len(heard))
	for name, m := range heard {
		out = append(out, MemberHeard{Name: name, Streams: len(m.streams), LastHeard: m.last})
	}
	slices.SortFunc(out, func(a, b MemberHeard) int {
		if c := a.LastHeard.Compare(b.LastHeard); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out[:min(len(out), maxMembers)]
}
