package marks_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// pruneTable is a table's properties under a sequence of commits and prune ticks, with the true
// time of each stream's last commit beside it.
type pruneTable struct {
	props      iceberg.Properties
	lastCommit map[string]time.Time
	before     time.Time // the last siglake.marks-pruned read
}

// commit applies one commit of the streams committing at now, as lake.CommitGroup does: the
// StreamProps of the attempt, then the marks, removals that are also set dropped.
func (p *pruneTable) commit(t *testing.T, committing []string, now time.Time, pruneAfter time.Duration, prune bool) (removed []string, pruned int) {
	t.Helper()
	set, remove, pruned := marks.StreamProps(p.props, committing, now, pruneAfter, prune)
	for _, s := range committing {
		set[marks.PropertyPrefix+s] = marks.Mark{Incarnation: 1, Seq: uint64(now.Unix())}.String()
		p.lastCommit[s] = now
	}
	maps.Copy(p.props, set)
	for _, k := range remove {
		if _, ok := set[k]; ok {
			t.Fatalf("StreamProps sets and removes %s", k)
		}
		delete(p.props, k)
	}
	return remove, pruned
}

// TestStreamPropsProperties: over random sequences of commits and prune ticks on streams that
// come and go (some with marks from before seen existed), a stream that committed within the
// prune age is never pruned, a pruned stream loses both its keys, a mark without seen gets one
// before it can be pruned, siglake.marks-pruned never decreases and lies at or after the last
// commit of every stream pruned, and seen lags a stream's last commit by at most SeenRefresh.
func TestStreamPropsProperties(t *testing.T) {
	const pruneAfter = 24 * time.Hour
	for seed := uint64(1); seed <= 200; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 33))
			now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			p := &pruneTable{props: iceberg.Properties{"other": "kept"}, lastCommit: map[string]time.Time{}}
			streams := make([]string, 2+rng.IntN(8))
			for i := range streams {
				streams[i] = fmt.Sprintf("pod-%d", i)
				if rng.IntN(3) == 0 { // a mark written before seen existed
					p.props[marks.PropertyPrefix+streams[i]] = "1:1"
					p.lastCommit[streams[i]] = now.Add(-time.Duration(rng.IntN(100)) * time.Hour)
				}
			}
			for step := 0; step < 300; step++ {
				now = now.Add(time.Duration(rng.Int64N(int64(6 * time.Hour))))
				var committing []string
				for _, s := range streams {
					if rng.IntN(4) == 0 {
						committing = append(committing, s)
					}
				}
				prune := rng.IntN(3) == 0
				unseen := map[string]bool{}
				for _, s := range streams {
					_, marked := p.props[marks.PropertyPrefix+s]
					_, seen := p.props[marks.SeenPrefix+s]
					unseen[s] = marked && !seen
				}
				removed, pruned := p.commit(t, committing, now, pruneAfter, prune)
				p.check(t, streams, now, pruneAfter, removed, pruned, unseen)
				if t.Failed() {
					t.Fatalf("step %d at %s, committing %v, prune %v: props %v", step, now, committing, prune, p.props)
				}
			}
		})
	}
}

// check holds the invariants after one commit at now that removed removed and pruned pruned;
// unseen are the streams that had a mark and no seen before it.
func (p *pruneTable) check(t *testing.T, streams []string, now time.Time, pruneAfter time.Duration, removed []string, pruned int, unseen map[string]bool) {
	t.Helper()
	gone := 0
	for _, s := range streams {
		_, marked := p.props[marks.PropertyPrefix+s]
		seenV, seen := p.props[marks.SeenPrefix+s]
		wasRemoved := false
		for _, k := range removed {
			wasRemoved = wasRemoved || k == marks.PropertyPrefix+s
		}
		if !wasRemoved {
			if marked && seen {
				sec, _ := strconv.ParseInt(seenV, 10, 64)
				if lag := p.lastCommit[s].Sub(time.Unix(sec, 0)); !p.lastCommit[s].IsZero() && lag > marks.SeenRefresh && !unseen[s] {
					t.Errorf("stream %s: seen %s lags its last commit %s by %s", s, seenV, p.lastCommit[s], lag)
				}
			}
			continue
		}
		gone++
		if marked || seen {
			t.Errorf("stream %s pruned, yet mark %v seen %v remain", s, marked, seen)
		}
		if age := now.Sub(p.lastCommit[s]); age <= pruneAfter {
			t.Errorf("stream %s pruned %s after its last commit, within the prune age %s", s, age, pruneAfter)
		}
		if unseen[s] {
			t.Errorf("stream %s pruned in the pass that found its mark without seen", s)
		}
	}
	if gone != pruned {
		t.Errorf("%d marks removed, StreamProps says %d pruned", gone, pruned)
	}
	before, ok, err := marks.PrunedBefore(p.props)
	if err != nil {
		t.Fatal(err)
	}
	if before.Before(p.before) {
		t.Errorf("%s went down from %s to %s", tableprops.MarksPruned, p.before, before)
	}
	if pruned > 0 {
		for _, k := range removed {
			if s, ok := cutMark(k); ok && before.Before(p.lastCommit[s]) {
				t.Errorf("%s = %s, before the last commit %s of pruned stream %s", tableprops.MarksPruned, before, p.lastCommit[s], s)
			}
		}
	} else if ok != !p.before.IsZero() {
		t.Errorf("%s appeared without a pruning", tableprops.MarksPruned)
	}
	p.before = before
}

func cutMark(k string) (string, bool) {
	if len(k) > len(marks.PropertyPrefix) && k[:len(marks.PropertyPrefix)] == marks.PropertyPrefix {
		return k[len(marks.PropertyPrefix):], true
	}
	return "", false
}

// TestStreamProps: the rules at their edges.
func TestStreamProps(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	unix := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).Unix(), 10) }
	const age = 7 * 24 * time.Hour
	props := iceberg.Properties{
		marks.PropertyPrefix + "fresh": "1:1", marks.SeenPrefix + "fresh": unix(time.Minute),
		marks.PropertyPrefix + "stale": "1:1", marks.SeenPrefix + "stale": unix(2 * time.Hour),
		marks.PropertyPrefix + "old": "1:1", marks.SeenPrefix + "old": unix(age + marks.SeenRefresh + time.Second),
		marks.PropertyPrefix + "edge": "1:1", marks.SeenPrefix + "edge": unix(age + marks.SeenRefresh),
		marks.PropertyPrefix + "legacy": "1:1",
		marks.SeenPrefix + "orphan":     unix(age + 2*marks.SeenRefresh), // a seen whose mark is gone
		tableprops.MarksPruned:          `{"v":1,"before":1}`,
	}
	set, remove, pruned := marks.StreamProps(props, []string{"fresh", "stale", "new"}, now, 0, true)
	stamp := strconv.FormatInt(now.Unix(), 10)
	want := iceberg.Properties{marks.SeenPrefix + "stale": stamp, marks.SeenPrefix + "new": stamp}
	if !maps.Equal(set, want) || remove != nil || pruned != 0 {
		t.Errorf("prune age 0: set %v remove %v pruned %d, want set %v and nothing pruned", set, remove, pruned, want)
	}
	set, remove, pruned = marks.StreamProps(props, []string{"fresh"}, now, age, true)
	// old's seen plus PruneSlack is newer than orphan's; edge is exactly at the limit and stays.
	wantBefore := now.Add(-age - marks.SeenRefresh - time.Second).Add(marks.PruneSlack).Unix()
	want = iceberg.Properties{marks.SeenPrefix + "legacy": stamp, tableprops.MarksPruned: fmt.Sprintf(`{"v":1,"before":%d}`, wantBefore)}
	wantRemove := []string{marks.SeenPrefix + "old", marks.PropertyPrefix + "old", marks.SeenPrefix + "orphan"}
	if !maps.Equal(set, want) || fmt.Sprint(remove) != fmt.Sprint(wantRemove) || pruned != 1 {
		t.Errorf("set %v remove %v pruned %d, want %v, %v and 1", set, remove, pruned, want, wantRemove)
	}
	props[tableprops.MarksPruned] = fmt.Sprintf(`{"v":1,"before":%d}`, wantBefore+10)
	if set, _, _ = marks.StreamProps(props, nil, now, age, true); set[tableprops.MarksPruned] != props[tableprops.MarksPruned] {
		t.Errorf("a newer stored %s was lowered to %s", props[tableprops.MarksPruned], set[tableprops.MarksPruned])
	}
	if set, _, _ = marks.StreamProps(props, nil, now, age, false); len(set) != 0 {
		t.Errorf("no prune tick, no commit: set %v", set)
	}
	if _, ok, err := marks.PrunedBefore(iceberg.Properties{}); ok || err != nil {
		t.Errorf("PrunedBefore of a table never pruned: %v, %v", ok, err)
	}
	if _, _, err := marks.PrunedBefore(iceberg.Properties{tableprops.MarksPruned: `{"v":2,"before":1}`}); err == nil {
		t.Errorf("PrunedBefore reads a version it does not know")
	}
}
