package commit

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

const testCatalog = "9f2c4e0a1b7d3c5e8a6f0b2d"

// owns makes an Owner func: this process owns the tables listed; "other" owns the rest.
func owns(tables ...string) func(string) (bool, string) {
	return func(t string) (bool, string) {
		for _, o := range tables {
			if o == t {
				return true, ""
			}
		}
		return false, "other"
	}
}

func newTestQueue(maxRequests int) *Queue {
	return NewQueue(QueueConfig{Catalog: testCatalog, MaxRequests: maxRequests, MaxFiles: 4,
		Interval: time.Second, Owner: owns("events")})
}

func mustEncode(t *testing.T, r Request) []byte {
	t.Helper()
	msg, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func TestReceiveRules(t *testing.T) {
	now := time.Now()
	heartbeat := Request{V: 1, ID: testID(9), From: "pod-h", Catalog: testCatalog, Table: "events", Stream: "h", ScanMs: 1}
	for _, c := range []struct {
		name    string
		cfg     func(*QueueConfig)
		before  []Request // received first
		msg     func() []byte
		to      string
		kind    string
		outcome string
		reason  string
		queued  int // requests queued after
	}{
		{name: "undecodable: nobody to answer", msg: func() []byte { return []byte("G{") },
			reason: ReasonInvalid},
		{name: "invalid: refused to its sender", msg: func() []byte {
			r := request(1, "events", "s", 1)
			r.Last = "0:1"
			b, _ := encode(KindRequest, r)
			return b
		}, to: "pod-s", kind: KindDone, outcome: OutcomeRefused, reason: ReasonInvalid},
		{name: "unauthenticated", cfg: func(c *QueueConfig) { c.Authenticated = func() bool { return false } },
			msg: func() []byte { return mustEncode(t, request(1, "events", "s", 1)) },
			to:  "pod-s", kind: KindDone, outcome: OutcomeRefused, reason: ReasonUnauthenticated},
		{name: "another catalog", cfg: func(c *QueueConfig) { c.Catalog = "other" },
			msg: func() []byte { return mustEncode(t, request(1, "events", "s", 1)) },
			to:  "pod-s", kind: KindDone, outcome: OutcomeRefused, reason: ReasonCatalog},
		{name: "refused before not owner", cfg: func(c *QueueConfig) { c.Catalog = "other" },
			msg: func() []byte { return mustEncode(t, request(1, "logs", "s", 1)) },
			to:  "pod-s", kind: KindDone, outcome: OutcomeRefused, reason: ReasonCatalog},
		{name: "heartbeat of another catalog: not answered", cfg: func(c *QueueConfig) { c.Catalog = "other" },
			msg: func() []byte { return mustEncode(t, heartbeat) }, reason: ReasonCatalog},
		{name: "not owner", msg: func() []byte { return mustEncode(t, request(1, "logs", "s", 1)) },
			to: "pod-s", kind: KindNotOwner, reason: ReasonNotOwner},
		{name: "heartbeat: not queued, not answered", msg: func() []byte { return mustEncode(t, heartbeat) }},
		{name: "heartbeat to a non-owner: not answered", msg: func() []byte {
			h := heartbeat
			h.Table = "logs"
			return mustEncode(t, h)
		}, reason: ReasonNotOwner},
		{name: "enqueue", msg: func() []byte { return mustEncode(t, request(1, "events", "s", 1)) },
			to: "pod-s", kind: KindAck, queued: 1},
		{name: "duplicate id: ack, From updated, queued once", before: []Request{request(1, "events", "s", 1)},
			msg: func() []byte {
				r := request(1, "events", "s", 1)
				r.From = "pod-s-moved"
				return mustEncode(t, r)
			}, to: "pod-s-moved", kind: KindAck, queued: 1},
		{name: "id reused for another batch", before: []Request{request(1, "events", "s", 1)},
			msg: func() []byte {
				r := request(1, "events", "s", 1)
				r.First, r.Last = "2:0", "2:5"
				return mustEncode(t, r)
			}, to: "pod-s", kind: KindDone, outcome: OutcomeRefused, reason: ReasonInvalid, queued: 1},
		{name: "request cap: busy", before: []Request{request(1, "events", "a", 1), request(2, "events", "b", 1)},
			msg: func() []byte { return mustEncode(t, request(3, "events", "c", 1)) },
			to:  "pod-c", kind: KindBusy, reason: ReasonBusy, queued: 2},
		{name: "duplicate at the cap: ack", before: []Request{request(1, "events", "a", 1), request(2, "events", "b", 1)},
			msg: func() []byte { return mustEncode(t, request(2, "events", "b", 1)) },
			to:  "pod-b", kind: KindAck, queued: 2},
		{name: "byte cap: busy", cfg: func(c *QueueConfig) { c.MaxBytes = len(mustEncode(t, request(1, "events", "a", 1))) + 100 }, before: []Request{request(1, "events", "a", 1)},
			msg: func() []byte { return mustEncode(t, request(2, "events", "b", 1)) },
			to:  "pod-b", kind: KindBusy, reason: ReasonBusy, queued: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := QueueConfig{Catalog: testCatalog, MaxRequests: 2, MaxFiles: 4, Interval: time.Second, Owner: owns("events")}
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			q := NewQueue(cfg)
			for _, r := range c.before {
				if v := recvAs(q, mustEncode(t, r), now); v.Answer.Kind != KindAck {
					t.Fatalf("setup: %+v", v)
				}
			}
			msg := c.msg()
			v := recvAs(q, msg, now)
			if v.To != c.to || v.Answer.Kind != c.kind || v.Answer.Outcome != c.outcome || v.Reason != c.reason {
				t.Fatalf("verdict to=%q kind=%q outcome=%q reason=%q (%+v), want to=%q kind=%q outcome=%q reason=%q",
					v.To, v.Answer.Kind, v.Answer.Outcome, v.Reason, v, c.to, c.kind, c.outcome, c.reason)
			}
			if v.To != "" {
				if _, err := v.Answer.Encode(); err != nil {
					t.Fatalf("answer does not encode: %v", err)
				}
			}
			if n, _ := q.Totals(); n != c.queued {
				t.Fatalf("%d queued, want %d", n, c.queued)
			}
			if c.name == "duplicate id: ack, From updated, queued once" {
				if got := q.Pending("events")[0].Request.From; got != "pod-s-moved" {
					t.Fatalf("From %q after a resend from pod-s-moved", got)
				}
			}
			if c.kind == KindNotOwner && v.Answer.Owner != "other" {
				t.Fatalf("not_owner names %q, want the owner in this view", v.Answer.Owner)
			}
			if c.kind == KindBusy && v.Answer.SlowMs < 1000 {
				t.Fatalf("busy with slow_ms %d: a pod would resend at once", v.Answer.SlowMs)
			}
		})
	}
}

// TestAckSaysQueueAndKeepsReceiveTime: an ack says how many group commits of the table are
// ahead (files ahead over max files, 4 here), not how many requests; a resend keeps its place
// and its first receive time.
func TestAckSaysQueueAndKeepsReceiveTime(t *testing.T) {
	q := newTestQueue(10)
	t0 := time.Now()
	for i, want := range []int{0, 0, 1, 1, 2} {
		v := recvAs(q, mustEncode(t, request(i+1, "events", fmt.Sprint("s", i), 2)), t0.Add(time.Duration(i)*time.Second))
		if v.Answer.Kind != KindAck || v.Answer.Queue != want {
			t.Fatalf("request %d (%d files ahead): %+v, want ack with %d commits ahead", i, 2*i, v.Answer, want)
		}
	}
	v := recvAs(q, mustEncode(t, request(4, "events", "s3", 2)), t0.Add(time.Minute))
	if v.Answer.Queue != 1 {
		t.Fatalf("resend: %d commits ahead, want 1", v.Answer.Queue)
	}
	p := q.Pending("events")
	if len(p) != 5 || !p[3].Received.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("pending %+v", p)
	}
	if st := q.Table("events"); st.Requests != 5 || st.Files != 10 || st.Oldest != p[0].Received {
		t.Fatalf("stats %+v", st)
	}
}

func TestRemove(t *testing.T) {
	q := newTestQueue(10)
	now := time.Now()
	for i := range 4 {
		recvAs(q, mustEncode(t, request(i+1, "events", fmt.Sprint("s", i), 2)), now)
	}
	q.Remove("events", testID(1), testID(3), testID(99))
	p := q.Pending("events")
	if len(p) != 2 || p[0].Request.ID != testID(2) || p[1].Request.ID != testID(4) {
		t.Fatalf("after remove: %+v", p)
	}
	if n, b := q.Totals(); n != 2 || b != p[0].Size+p[1].Size || q.Table("events").Files != 4 {
		t.Fatalf("totals %d %d files %d", n, b, q.Table("events").Files)
	}
	// A removed id is new again: a resend after its answer was lost queues it once more, and the
	// commit's mark check finds it committed. Behind 4 files at 4 a commit: one commit ahead.
	if v := recvAs(q, mustEncode(t, request(1, "events", "s0", 2)), now); v.Answer.Kind != KindAck || v.Answer.Queue != 1 {
		t.Fatalf("resend after remove: %+v", v.Answer)
	}
	q.Remove("events", testID(1), testID(2), testID(4))
	if n, b := q.Totals(); n != 0 || b != 0 || len(q.Tables()) != 0 {
		t.Fatalf("empty queue holds %d requests, %d bytes, tables %v", n, b, q.Tables())
	}
}

func TestSlowDown(t *testing.T) {
	for _, c := range []struct {
		files, maxFiles int
		want            time.Duration
	}{
		{0, 512, 0},
		{1024, 512, 0}, // two commits waiting: normal
		{1025, 512, 2001953125 * time.Nanosecond}, // just past: behind x interval
		{512 * 10, 512, 10 * time.Second},
		{512 * 61, 512, MaxSlowDown},
		{5, 0, 0}, // no limit configured
	} {
		if got := SlowDown(c.files, c.maxFiles, time.Second); got != c.want {
			t.Errorf("SlowDown(%d, %d, 1s) = %v, want %v", c.files, c.maxFiles, got, c.want)
		}
	}
}

func TestAckCarriesSlowDown(t *testing.T) {
	q := newTestQueue(100) // MaxFiles 4, interval 1 s
	now := time.Now()
	var last Answer
	for i := range 3 {
		last = recvAs(q, mustEncode(t, request(i+1, "events", fmt.Sprint("s", i), 4)), now).Answer
	}
	if last.SlowMs != 3000 { // 12 files / 4 per commit = 3 commits behind
		t.Fatalf("ack slow_ms %d with 12 files queued, want 3000", last.SlowMs)
	}
}

// TestReceiveConcurrent: the transport receives while a committer takes (run with -race).
func TestReceiveConcurrent(t *testing.T) {
	q := newTestQueue(1 << 20)
	now := time.Now()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				recvAs(q, mustEncode(t, request(w*1000+i+1, "events", fmt.Sprint("s", w), 1)), now)
			}
		})
	}
	removed := 0
	wg.Go(func() {
		for removed < 800 {
			for _, e := range q.Pending("events") {
				q.Remove("events", e.Request.ID)
				removed++
			}
		}
	})
	wg.Wait()
	if n, b := q.Totals(); n != 0 || b != 0 {
		t.Fatalf("%d requests, %d bytes left after all were removed", n, b)
	}
}

func TestDefaultCaps(t *testing.T) {
	q := NewQueue(QueueConfig{Catalog: testCatalog, Owner: owns("events")})
	if v := recvAs(q, mustEncode(t, request(1, "events", "s", 1)), time.Now()); v.Answer.Kind != KindAck {
		t.Fatalf("a queue without caps set: %+v, want ack (the defaults)", v.Answer)
	}
	if q.cfg.MaxRequests != DefaultMaxRequests || q.cfg.MaxBytes != MaxQueueBytes {
		t.Fatalf("caps %d requests %d bytes", q.cfg.MaxRequests, q.cfg.MaxBytes)
	}
}
