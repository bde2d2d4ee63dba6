package work

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchJob is a job of n inputs with paths the length of a real table's on S3.
func benchJob(table string, bin, n int) Job {
	j := job("x", 1, 1)
	j.Dir = "s3://warehouse/siglake/" + table + "/data/day=2026-12-04"
	j.Inputs = nil
	for i := range n {
		j.Inputs = append(j.Inputs, Input{Path: fmt.Sprintf("%s/g0001-%08d-5f0c-4d3a-9b8e-4f21a7c6d5e4.parquet", j.Dir, bin*1000+i),
			Size: 8 << 20, Rows: 50_000, Generation: 1})
	}
	j.Generation = 2
	return j
}

// BenchmarkBookCycle: one owner of 10 tables offers a pass of 4 bins of 32 inputs per table (the
// planner's default bin budget at the fan-in limit); 4 workers take 2 bins each, then every lease
// is completed. One op is the whole cycle.
func BenchmarkBookCycle(b *testing.B) {
	var passes [10][]Job
	for t := range passes {
		for bin := range 4 {
			passes[t] = append(passes[t], benchJob(fmt.Sprint("t", t), bin, 32))
		}
	}
	book := NewBook(Config{}, rand.NewChaCha8([32]byte{1}))
	now := t0
	for b.Loop() {
		now = now.Add(time.Second)
		for t, jobs := range passes {
			book.Offer(fmt.Sprint("t", t), jobs, now)
		}
		for w := range 5 { // the 5th: the owner's own, after the others
			ls, _ := book.Take(fmt.Sprint("w", w), Want{FreeBytes: 2, MergeBytes: 1}, w == 4, now)
			for _, l := range ls {
				book.Complete(l.ID, l.Worker, now)
			}
		}
	}
}

// BenchmarkLeasesMessage: encode and decode a leases message of 2 bins of 32 inputs.
func BenchmarkLeasesMessage(b *testing.B) {
	m := OwnerMessage{V: 1, Type: TypeLeases, Catalog: testCatalog, RetryMs: 10_000}
	for i := range 2 {
		m.Leases = append(m.Leases, Grant{ID: testLeaseID(i), Table: "events", Job: benchJob("events", i, 32), DurationMs: 120_000})
	}
	size := 0
	for b.Loop() {
		msg, err := m.Encode()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeOwner(msg); err != nil {
			b.Fatal(err)
		}
		size = len(msg)
	}
	b.ReportMetric(float64(size), "bytes/msg")
}

// TestLargestPassFitsAMessage: a bin of a whole pass's file budget (256 inputs, the default
// max-files-per-pass) with S3-length paths is far below the message bound.
func TestLargestPassFitsAMessage(t *testing.T) {
	b := newBook(Config{})
	j := benchJob("events", 0, 256)
	if r := b.Offer("events", []Job{j}, t0); len(r) != 0 {
		t.Fatal(r[0].Err)
	}
	ls := mustTake(t, b, "w1", oneSlot, false, t0)
	msg, err := OwnerMessage{V: 1, Type: TypeLeases, Catalog: testCatalog, Leases: []Grant{ls[0].Grant()}}.Encode()
	if err != nil || len(msg) > MaxMessageBytes/10 {
		t.Fatalf("a 256-input lease encodes to %d bytes (%v)", len(msg), err)
	}
	t.Logf("a 256-input lease: %d bytes", len(msg))
}
