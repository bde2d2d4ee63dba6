package commit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// queued makes a queue entry: stream, files, received ago, written ago (relative to now).
func queued(now time.Time, n int, stream string, files int, receivedAgo, writtenAgo time.Duration) Queued {
	r := request(n, "events", stream, files)
	r.WrittenMs = now.Add(-writtenAgo).UnixMilli()
	return Queued{Request: r, Received: now.Add(-receivedAgo), Size: 100}
}

func ids(qs []Queued) []string {
	out := []string{}
	for _, q := range qs {
		out = append(out, q.Request.ID[len(q.Request.ID)-2:])
	}
	return out
}

func TestSelect(t *testing.T) {
	now := time.Now()
	cfg := SelectConfig{MaxAge: 12 * time.Minute, MaxFiles: 10}
	fresh := func(n int, stream string, files int) Queued {
		return queued(now, n, stream, files, time.Second, 2*time.Second)
	}
	for _, c := range []struct {
		name                        string
		queue                       []Queued
		selected, deferred, expired []string
	}{
		{name: "empty", selected: []string{}, deferred: []string{}, expired: []string{}},
		{name: "all fit, arrival order", queue: []Queued{fresh(1, "a", 3), fresh(2, "b", 3), fresh(3, "c", 4)},
			selected: []string{"01", "02", "03"}, deferred: []string{}, expired: []string{}},
		{name: "expired by receive age", queue: []Queued{queued(now, 1, "a", 1, 13*time.Minute, time.Second), fresh(2, "b", 1)},
			selected: []string{"02"}, deferred: []string{}, expired: []string{"01"}},
		{name: "expired by written age (pod clock)", queue: []Queued{queued(now, 1, "a", 1, time.Second, 13*time.Minute), fresh(2, "b", 1)},
			selected: []string{"02"}, deferred: []string{}, expired: []string{"01"}},
		{name: "at the max age: not expired", queue: []Queued{queued(now, 1, "a", 1, 12*time.Minute, 12*time.Minute)},
			selected: []string{"01"}, deferred: []string{}, expired: []string{}},
		{name: "second request of a stream deferred", queue: []Queued{fresh(1, "a", 1), fresh(2, "b", 1), fresh(3, "a", 1)},
			selected: []string{"01", "02"}, deferred: []string{"03"}, expired: []string{}},
		{name: "files beyond max deferred, later small ones fill", queue: []Queued{fresh(1, "a", 6), fresh(2, "b", 6), fresh(3, "c", 4)},
			selected: []string{"01", "03"}, deferred: []string{"02"}, expired: []string{}},
		{name: "a request larger than max goes alone", queue: []Queued{fresh(1, "a", 25), fresh(2, "b", 1)},
			selected: []string{"01"}, deferred: []string{"02"}, expired: []string{}},
		{name: "a stream deferred for files keeps its order", queue: []Queued{fresh(1, "a", 8), fresh(2, "b", 8), fresh(3, "b", 1)},
			selected: []string{"01"}, deferred: []string{"02", "03"}, expired: []string{}},
		{name: "expired first does not take the file budget", queue: []Queued{queued(now, 1, "a", 10, time.Hour, time.Hour), fresh(2, "b", 10)},
			selected: []string{"02"}, deferred: []string{}, expired: []string{"01"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Select(c.queue, now, cfg)
			if !slices.Equal(ids(s.Selected), c.selected) || !slices.Equal(ids(s.Deferred), c.deferred) || !slices.Equal(ids(s.Expired), c.expired) {
				t.Fatalf("selected %v deferred %v expired %v, want %v %v %v",
					ids(s.Selected), ids(s.Deferred), ids(s.Expired), c.selected, c.deferred, c.expired)
			}
		})
	}
}

// TestSelectProperties: over random queues, Select never selects two requests of one stream, never
// drops or invents a request (each is selected, deferred or expired exactly once, lists in arrival
// order), keeps each stream's requests in order, stays inside the file budget unless one request
// alone exceeds it, expires exactly the requests past the age bound, and selects something from
// any queue holding a request that is not expired.
func TestSelectProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 1))
	now := time.Now()
	for round := range 2000 {
		cfg := SelectConfig{MaxAge: time.Duration(1+rng.IntN(20)) * time.Minute, MaxFiles: 1 + rng.IntN(20)}
		var queue []Queued
		for i := range rng.IntN(40) {
			q := queued(now, i+1, fmt.Sprint("s", rng.IntN(8)), 1+rng.IntN(12),
				time.Duration(rng.IntN(25))*time.Minute, time.Duration(rng.IntN(25))*time.Minute)
			queue = append(queue, q)
		}
		s := Select(queue, now, cfg)
		if err := checkSelection(queue, s, now, cfg); err != nil {
			t.Fatalf("round %d (%+v): %v\nqueue %v\nselected %v deferred %v expired %v",
				round, cfg, err, ids(queue), ids(s.Selected), ids(s.Deferred), ids(s.Expired))
		}
	}
}

func checkSelection(queue []Queued, s Selection, now time.Time, cfg SelectConfig) error {
	where := map[string]string{}
	for name, list := range map[string][]Queued{"selected": s.Selected, "deferred": s.Deferred, "expired": s.Expired} {
		last := -1
		for _, q := range list {
			if prev, dup := where[q.Request.ID]; dup {
				return fmt.Errorf("%s both %s and %s", q.Request.ID, prev, name)
			}
			where[q.Request.ID] = name
			i := slices.IndexFunc(queue, func(e Queued) bool { return e.Request.ID == q.Request.ID })
			if i < 0 {
				return fmt.Errorf("%s %s is not in the queue", name, q.Request.ID)
			}
			if i < last {
				return fmt.Errorf("%s out of arrival order", name)
			}
			last = i
		}
	}
	if len(where) != len(queue) {
		return fmt.Errorf("%d of %d requests accounted for", len(where), len(queue))
	}
	streams, files := map[string]bool{}, 0
	for _, q := range s.Selected {
		if streams[q.Request.Stream] {
			return fmt.Errorf("two requests of stream %s selected", q.Request.Stream)
		}
		streams[q.Request.Stream] = true
		files += q.Files()
	}
	if len(s.Selected) > 1 && files > cfg.MaxFiles {
		return fmt.Errorf("%d files selected, max %d", files, cfg.MaxFiles)
	}
	deferredStream := map[string]bool{}
	for _, q := range queue {
		old := now.Sub(q.Received) > cfg.MaxAge || now.UnixMilli()-q.Request.WrittenMs > cfg.MaxAge.Milliseconds()
		if old != (where[q.Request.ID] == "expired") {
			return fmt.Errorf("%s is %s, past the age bound: %v", q.Request.ID, where[q.Request.ID], old)
		}
		switch where[q.Request.ID] {
		case "deferred":
			deferredStream[q.Request.Stream] = true
		case "selected":
			if deferredStream[q.Request.Stream] {
				return fmt.Errorf("%s selected after an earlier request of its stream was deferred", q.Request.ID)
			}
		}
	}
	if len(s.Selected) == 0 && len(s.Deferred) > 0 {
		return fmt.Errorf("requests waiting and none selected")
	}
	return nil
}
