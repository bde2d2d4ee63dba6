package localwal

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestReadHead: the schema message alone gives the header and the schema ReadAll gives; a head
// that is cut, corrupt or inconsistent with the name fails with ReadAll's reason, never a panic.
func TestReadHead(t *testing.T) {
	for _, comp := range []compression{compressionZstd, compressionNone} {
		name, data := validSegment(t, comp, 3, 50)
		hdr, sc, err := ReadHead(name, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		seg, err := Decode(name, data, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if hdr != seg.Header || !sc.Equal(seg.Schema) {
			t.Fatalf("%s: head %+v %v, ReadAll %+v %v", comp, hdr, sc, seg.Header, seg.Schema)
		}
		seg.Release()
		// Cut inside the schema message: truncated; a zero-byte file: empty.
		for n := 1; n < 40; n++ {
			if _, _, err := ReadHead(name, bytes.NewReader(data[:n])); !isReason(err, ReasonTruncated) {
				t.Fatalf("cut at %d: %v", n, err)
			}
		}
		if _, _, err := ReadHead(name, bytes.NewReader(nil)); !isReason(err, ReasonEmpty) {
			t.Fatalf("empty: %v", err)
		}
		if _, _, err := ReadHead(SegmentName("logs", 1, 2), bytes.NewReader(data)); !isReason(err, ReasonCorrupt) {
			t.Fatalf("name with another seq: %v", err)
		}
		if _, _, err := ReadHead("Logs.1.2.wal", bytes.NewReader(data)); err == nil {
			t.Fatal("a bad name passes")
		}
	}
	// Random bytes and flipped bytes: an error with a known reason.
	rng := rand.New(rand.NewPCG(3, 4))
	name, data := validSegment(t, compressionNone, 1, 10)
	known := map[string]bool{}
	for _, r := range Reasons {
		known[r] = true
	}
	for i := 0; i < 2000; i++ {
		b := append([]byte(nil), data...)
		for j := 0; j < 1+rng.IntN(4); j++ {
			b[rng.IntN(min(len(b), 400))] = byte(rng.IntN(256))
		}
		if i%10 == 0 {
			rng.Shuffle(len(b), func(x, y int) { b[x], b[y] = b[y], b[x] })
		}
		_, _, err := ReadHead(name, bytes.NewReader(b))
		var se *SegmentError
		if err != nil && (!errors.As(err, &se) || !known[se.Reason]) {
			t.Fatalf("flip %d: %v", i, err)
		}
	}
}

// TestDecodeBudgetIsToldApart: a decode that hits ReadOptions.MaxDecodedBytes says so (the WAL
// buffer answers 413 for it), while its reason stays corrupt for the drain.
func TestDecodeBudgetIsToldApart(t *testing.T) {
	name, data := validSegment(t, compressionZstd, 2, 2000)
	_, err := Decode(name, data, ReadOptions{MaxDecodedBytes: 64 << 10})
	if !isReason(err, ReasonCorrupt) || !errors.Is(err, ErrDecodeBudget) {
		t.Fatalf("got %v", err)
	}
	cut := data[:len(data)-3]
	if _, err := Decode(name, cut, ReadOptions{}); errors.Is(err, ErrDecodeBudget) {
		t.Fatalf("a truncated file is reported as over budget: %v", err)
	}
}
