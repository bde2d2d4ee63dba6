package commit

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestNotOwnerRedirect: a committer that does not own the table answers not_owner, and one that
// loses the table with a request queued sends it away at its next round; the pods ask the
// membership again and reach the owner without waiting for an answer timeout or falling back.
func TestNotOwnerRedirect(t *testing.T) {
	cl := newCluster(t)
	_, never, neverObs, _ := cl.committer("never", nil)
	never.set(func(v *view) { v.owns = false })
	_, lost, lostObs, _ := cl.committer("lost", nil)
	lostObs.onQueued = func(_ string, n int) {
		if n > 0 {
			lost.set(func(v *view) { v.owns = false })
		}
	}
	_, _, ownerObs, _ := cl.committer("owner", nil)
	for i, first := range []string{"never", "lost"} {
		p := cl.pod(first, nil)
		p.view.moves(first, "owner")
		cl.seal(p, 1, 500, day.Add(time.Duration(i)*time.Hour))
	}
	start := time.Now()
	cl.drainAll()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("redirects took %v: the pods waited for answer timeouts", took)
	}
	cl.checkOnce()
	if neverObs.count("refused:"+ReasonNotOwner) != 1 || lostObs.count("refused:"+ReasonNotOwner) != 1 || lostObs.count("forget") != 1 {
		t.Fatalf("never refused %d, lost refused %d and forgot %d; want 1 each", neverObs.count("refused:"+ReasonNotOwner),
			lostObs.count("refused:"+ReasonNotOwner), lostObs.count("forget"))
	}
	if n := ownerObs.count("committed"); n != 2 {
		t.Fatalf("the owner committed %d requests, want both", n)
	}
	for _, p := range cl.pods {
		if p.obs.fallbacks() != 0 {
			t.Fatalf("%s fell back", p.name)
		}
	}
}

// TestBusyAndSlowDown: a committer whose queue holds 2 requests and whose commit hangs answers
// the other pods busy; they slow down and resend, without falling back although they wait
// longer than their fallback bound, and the queue never holds more than its cap.
func TestBusyAndSlowDown(t *testing.T) {
	// The bound also limits how long a request acked after the release may wait for its commit,
	// so it is not much shorter than a commit on a loaded 2-core machine under -race.
	const bound = 3 * time.Second
	cl := newCluster(t)
	_, _, cobs, cl1 := cl.committer("owner", func(c *CommitterConfig) { c.QueueMax = 2 })
	stalled, release := stall(t, cl1)
	for i := 0; i < 5; i++ {
		p := cl.pod("owner", func(c *ClientConfig) { c.FallbackAfter = bound })
		cl.seal(p, 2, 300, day.Add(time.Duration(i)*time.Hour))
	}
	go releaseAfterBusy(cl, stalled, release, bound)
	cl.drainAll()
	cl.checkOnce()
	busy, slowed, fallbacks := 0, 0, 0
	for _, p := range cl.pods {
		busy, slowed, fallbacks = busy+p.obs.count("busy"), slowed+p.obs.count("slowdown"), fallbacks+p.obs.fallbacks()
	}
	// Only the requests inside the hung commit (the queue's 2) hear nothing past their ack and
	// fall back after their bound (TestPausedCommitterResumes); the ones answered busy keep waiting.
	if fallbacks > 2 {
		t.Fatalf("%d fallbacks: more than the 2 requests in the hung commit, so pods answered busy fell back", fallbacks)
	}
	if busy == 0 || slowed == 0 || cobs.count("refused:"+ReasonBusy) == 0 {
		t.Fatalf("%d busy answers, %d slow-downs seen by pods, %d refused busy: want some of each", busy, slowed, cobs.count("refused:"+ReasonBusy))
	}
	if cobs.maxQueued > 2 {
		t.Fatalf("the queue held %d requests, cap 2", cobs.maxQueued)
	}
}

// releaseAfterBusy releases the hung commit on events, not on a clock: once the requests it holds
// fell back (they heard nothing for the bound) and three pods were first answered busy more than
// the bound ago, so those waited past their fallback bound on busy answers alone.
func releaseAfterBusy(cl *cluster, stalled func() bool, release func(), bound time.Duration) {
	defer release()
	firstBusy := map[string]time.Time{}
	for give := time.Now().Add(time.Minute); time.Now().Before(give); time.Sleep(5 * time.Millisecond) {
		fallbacks, waited := 0, 0
		for _, p := range cl.pods {
			fallbacks += p.obs.fallbacks()
			if _, ok := firstBusy[p.name]; !ok && p.obs.count("busy") > 0 {
				firstBusy[p.name] = time.Now()
			}
			if at, ok := firstBusy[p.name]; ok && time.Since(at) > bound {
				waited++
			}
		}
		if stalled() && fallbacks >= 2 && waited >= 3 {
			return
		}
	}
}

// TestRefusedFiles: a request whose files are not generation-0 drain outputs under the table's own
// data directory is refused, and nothing of it is committed.
func TestRefusedFiles(t *testing.T) {
	cl := newCluster(t)
	cl.committer("owner", nil)
	p := cl.pod("owner", nil)
	cl.seal(p, 1, 300, day)
	cl.drainAll()
	tbl := cl.table()
	dir := lake.DataDir(tbl, "2026-11-28")
	other := strings.Replace(dir, "/events/", "/other/", 1)
	if other == dir {
		t.Fatalf("table dir %s: no /events/ to replace", dir)
	}
	cases := map[string]string{
		"other":   other + "/" + merge.DataFileName(0),
		"rewrite": dir + "/" + merge.DataFileName(1),
		"escape":  dir + "/../../../other/data/" + merge.DataFileName(0),
	}
	var mu sync.Mutex
	answers := map[string]Answer{}
	evil := cl.hub.Member("evil")
	evil.Handle(KindAnswer, func(_ string, msg []byte) {
		if a, err := DecodeAnswer(msg); err == nil && a.Kind == KindDone {
			mu.Lock()
			answers[a.Stream] = a
			mu.Unlock()
		}
	})
	for stream, path := range cases {
		files := writeFile(t, tbl, path)
		enc, err := EncodeFiles(tbl, files)
		if err != nil {
			t.Fatal(err)
		}
		r := Request{V: Version, ID: newID(), From: "evil", Catalog: testCatalog, Table: "events", Stream: stream, First: "1:1", Last: "1:1",
			Format: tbl.Metadata().Version(), SchemaID: tbl.Schema().ID, SpecID: specID(tbl), Files: enc, Segments: 1, WrittenMs: time.Now().UnixMilli()}
		msg, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := evil.Send("owner", msg); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the answers", func() bool { mu.Lock(); defer mu.Unlock(); return len(answers) == len(cases) })
	why := map[string]string{"other": "not in a partition directory", "rewrite": "not a generation-0", "escape": "not in a partition directory"}
	for stream := range cases {
		if a := answers[stream]; a.Outcome != OutcomeRefused || !strings.Contains(a.Error, why[stream]) {
			t.Errorf("%s: answer %+v, want refused: %s", stream, a, why[stream])
		}
	}
	after := cl.table()
	if len(after.Metadata().Snapshots()) != 1 {
		t.Fatalf("%d snapshots: a refused request was committed", len(after.Metadata().Snapshots()))
	}
	for stream := range cases {
		if _, ok, _ := marks.ReadMark(after, stream); ok {
			t.Fatalf("stream %s has a mark", stream)
		}
	}
	cl.checkOnce()
}

// TestRefusedSharedFile: two requests of one group commit that carry the same file: the first
// commits, the second is refused (one append takes a path once), instead of the whole group
// failing.
func TestRefusedSharedFile(t *testing.T) {
	cl := newCluster(t)
	cl.committer("owner", func(c *CommitterConfig) { c.Interval, c.MaxFiles = time.Hour, 2 })
	p := cl.pod("", nil) // creates the table, committing directly
	cl.seal(p, 1, 300, day)
	cl.drainAll()
	tbl := cl.table()
	enc, err := EncodeFiles(tbl, writeFile(t, tbl, lake.DataDir(tbl, "2026-11-28")+"/"+merge.DataFileName(0)))
	if err != nil {
		t.Fatal(err)
	}
	done := answers(cl.hub, "twin", KindDone)
	twin := cl.hub.Member("twin")
	for _, stream := range []string{"a", "b"} {
		r := Request{V: Version, ID: newID(), From: "twin", Catalog: testCatalog, Table: "events", Stream: stream, First: "1:1", Last: "1:1",
			Format: tbl.Metadata().Version(), SchemaID: tbl.Schema().ID, SpecID: specID(tbl), Files: enc, Segments: 1, WrittenMs: time.Now().UnixMilli()}
		msg, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := twin.Send("owner", msg); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int{}
	for i := 0; i < 2; i++ {
		select {
		case a := <-done:
			got[a.Outcome]++
		case <-time.After(20 * time.Second):
			t.Fatalf("answers %v, want two", got)
		}
	}
	if got[OutcomeCommitted] != 1 || got[OutcomeRefused] != 1 {
		t.Fatalf("answers %v, want one committed and one refused", got)
	}
}

// writeFile writes a real Parquet file of walgen rows at path and describes it as a data file of t.
func writeFile(t testing.TB, tbl *table.Table, path string) []iceberg.DataFile {
	t.Helper()
	ctx := context.Background()
	rec := walgen.New(walgen.Options{Seed: 3}).Batch(memory.DefaultAllocator, day, 100, time.Millisecond)
	defer rec.Release()
	fields := append([]arrow.Field(nil), rec.Schema().Fields()...)
	for i := range fields {
		fields[i].Metadata = arrow.Metadata{}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := writer.WriteSorted(ctx, fsys.(icebergio.WriteFileIO), func(int) string { return path }, arrow.NewSchema(fields, nil),
		[]arrow.RecordBatch{rec}, merge.WriterOptions{TimestampColumn: lake.TimestampColumn})
	if err != nil {
		t.Fatal(err)
	}
	files, err := lake.DataFiles(tbl, outs)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestUnauthenticated: without authenticated gossip a pod hands nothing off and commits
// directly; a committer without it refuses what reaches it, and the pod commits directly.
func TestUnauthenticated(t *testing.T) {
	cl := newCluster(t)
	_, cview, cobs, _ := cl.committer("owner", nil)
	keyless := cl.pod("owner", nil)
	keyless.view.set(func(v *view) { v.auth = false })
	cl.seal(keyless, 1, 300, day)
	cl.drainAll()
	if n := cl.hub.Sent(KindRequest); n != 0 || keyless.obs.count("fallback:"+FallbackUnauthenticated) != 1 {
		t.Fatalf("%d requests sent, %d unauthenticated fallbacks; want 0 and 1", n, keyless.obs.count("fallback:"+FallbackUnauthenticated))
	}
	if st := keyless.client.Status(); st.Fallbacks[FallbackUnauthenticated] != 1 || len(st.Outstanding) != 0 {
		t.Fatalf("pod status %+v: want one unauthenticated fallback and nothing outstanding", st)
	}
	cview.set(func(v *view) { v.auth = false })
	p := cl.pod("owner", nil)
	cl.seal(p, 1, 300, day.Add(time.Hour))
	if err := cl.drain(p, 3); err != nil {
		t.Fatal(err)
	}
	if p.obs.count("fallback:"+FallbackRefused) != 1 || cobs.count("refused:"+ReasonUnauthenticated) != 1 || cobs.count("committed") != 0 {
		t.Fatalf("pod fell back refused %d times, committer refused %d and committed %d; want 1, 1, 0",
			p.obs.count("fallback:"+FallbackRefused), cobs.count("refused:"+ReasonUnauthenticated), cobs.count("committed"))
	}
	cl.checkOnce()
}
