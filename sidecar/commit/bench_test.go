package commit

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/peermsg"
)

// benchRequests are n encoded one-file requests of distinct streams for events (files: one real
// drain-named file of the table, encoded), each covering segment seq of its stream.
func benchRequests(b *testing.B, cl *cluster, from string, n int, seq func(i int) int) [][]byte {
	b.Helper()
	tbl := cl.table()
	file := writeFile(b, tbl, lake.DataDir(tbl, "2026-11-28")+"/"+merge.DataFileName(0))[0]
	msgs := make([][]byte, n)
	for i := range msgs {
		// Each request its own path (one append takes a path once); the file behind it is the same.
		df, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, lake.DataDir(tbl, "2026-11-28")+"/"+merge.DataFileName(0),
			iceberg.ParquetFile, file.Partition(), nil, nil, file.Count(), file.FileSizeBytes())
		if err != nil {
			b.Fatal(err)
		}
		enc, err := EncodeFiles(tbl, []iceberg.DataFile{df.Build()})
		if err != nil {
			b.Fatal(err)
		}
		m := fmt.Sprintf("1:%d", seq(i))
		r := Request{V: Version, ID: newID(), From: from, Catalog: testCatalog, Table: "events", Stream: fmt.Sprintf("s%d", i%64),
			First: m, Last: m, Format: tbl.Metadata().Version(), SchemaID: tbl.Schema().ID, SpecID: specID(tbl), Files: enc,
			Rows: 100, Segments: 1, WrittenMs: time.Now().UnixMilli()}
		if msgs[i], err = r.Encode(); err != nil {
			b.Fatal(err)
		}
	}
	return msgs
}

// answers counts answers of kind reaching member on ch.
func answers(hub *peermsg.LocalHub, member, kind string) chan Answer {
	ch := make(chan Answer, 1024)
	hub.Member(member).Handle(KindAnswer, func(_ string, msg []byte) {
		if a, err := DecodeAnswer(msg); err == nil && a.Kind == kind {
			ch <- a
		}
	})
	return ch
}

// BenchmarkCommitterRequest is the committer's cost of receiving one request: decode, queue
// rules, ack (no commit: the interval is an hour). The target is < 5% of a core at 100
// requests/s, so under 500 µs per request.
func BenchmarkCommitterRequest(b *testing.B) {
	cl := benchCluster(b)
	cl.committer("owner", func(c *CommitterConfig) { c.Interval, c.QueueMax = time.Hour, b.N+1 })
	acks := answers(cl.hub, "pod", KindAck)
	msgs := benchRequests(b, cl, "pod", b.N, func(i int) int { return i + 1 })
	pod := cl.hub.Member("pod")
	b.ResetTimer()
	for _, m := range msgs {
		if err := pod.Send("owner", m); err != nil {
			b.Fatal(err)
		}
		<-acks
	}
}

// benchCluster is a cluster whose events table exists (one pod's batch, committed directly).
func benchCluster(b *testing.B) *cluster {
	b.Helper()
	cl := newCluster(b)
	p := cl.pod("", nil)
	cl.seal(p, 1, 100, day)
	if err := cl.drain(p, 2); err != nil {
		b.Fatal(err)
	}
	return cl
}

// BenchmarkCommitGroup is one group commit of 16 one-file requests of 16 streams on the embedded
// catalog, from receive to the last answer.
func BenchmarkCommitGroup(b *testing.B) {
	const group = 16
	cl := benchCluster(b)
	cl.committer("owner", func(c *CommitterConfig) { c.Interval, c.MaxFiles = time.Hour, group })
	done := answers(cl.hub, "pod", KindDone)
	msgs := benchRequests(b, cl, "pod", b.N*group, func(i int) int { return i/group + 1 })
	pod := cl.hub.Member("pod")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, m := range msgs[i*group : (i+1)*group] {
			if err := pod.Send("owner", m); err != nil {
				b.Fatal(err)
			}
		}
		for j := 0; j < group; j++ {
			if a := <-done; a.Outcome != OutcomeCommitted {
				b.Fatalf("answer %+v", a)
			}
		}
	}
	b.ReportMetric(float64(b.N*group)/b.Elapsed().Seconds(), "requests/s")
}
