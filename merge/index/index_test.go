package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var sc = arrow.NewSchema([]arrow.Field{
	{Name: "timestamp", Type: arrow.FixedWidthTypes.Timestamp_us},
	{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "raw", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "trace_id", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

type row struct {
	ts      int64
	service *string
	raw     *string
	trace   *string
}

func strp(s string) *string { return &s }

func randRows(r *rand.Rand, n int) []row {
	alphabet := "abcdefghijklmnopqrstuvwxyzABC0123456789 =/-_.:äé"
	rows := make([]row, n)
	ts := int64(1_700_000_000_000_000)
	for i := range rows {
		ts += r.Int64N(3_000_000)
		rows[i].ts = ts
		if r.IntN(8) != 0 {
			rows[i].service = strp([]string{"api", "db", "web"}[r.IntN(3)])
		}
		if r.IntN(10) != 0 {
			var sb strings.Builder
			for j := 0; j < r.IntN(60); j++ {
				sb.WriteString(string([]rune(alphabet)[r.IntN(len([]rune(alphabet)))]))
			}
			rows[i].raw = strp(sb.String())
		}
		if r.IntN(3) != 0 {
			rows[i].trace = strp(fmt.Sprintf("t%d", r.IntN(50)))
		}
	}
	return rows
}

func record(rows []row) (arrow.RecordBatch, []int64) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	ts := make([]int64, len(rows))
	for i, r := range rows {
		ts[i] = r.ts
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		for j, v := range []*string{r.service, r.raw, r.trace} {
			if v == nil {
				b.Field(j + 1).AppendNull()
			} else {
				b.Field(j + 1).(*array.StringBuilder).Append(*v)
			}
		}
	}
	return b.NewRecordBatch(), ts
}

// build writes rows in row groups of rgRows, feeding each in two pieces to
// exercise AddRows across calls, and decodes the result.
func build(t *testing.T, cfg Config, rows []row, rgRows int) (*Footer, []string, map[string]string) {
	t.Helper()
	b := NewBuilder(cfg, sc)
	for lo := 0; lo < len(rows); lo += rgRows {
		hi := min(lo+rgRows, len(rows))
		mid := lo + (hi-lo)/2
		for _, part := range [][]row{rows[lo:mid], rows[mid:hi]} {
			rec, ts := record(part)
			b.AddRows(rec, ts)
			rec.Release()
		}
		b.EndRowGroup()
	}
	kv, skipped := finishKV(t, b)
	kv["unrelated"] = "x"
	f, err := Decode(kv)
	if err != nil {
		t.Fatalf("footer does not decode: %v", err)
	}
	return f, skipped, kv
}

// finishKV finishes b and returns its footer entries as the footer's key-value map, and the
// index columns it skipped.
func finishKV(t *testing.T, b *Builder) (map[string]string, []string) {
	t.Helper()
	entries, skipped, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	kv := map[string]string{}
	for _, e := range entries {
		kv[e.Key] = e.Value
	}
	return kv, skipped
}

func TestNoFalseNegatives(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		rows := randRows(r, r.IntN(3000))
		rgRows := 1 + r.IntN(700)
		f, _, _ := build(t, Config{WholeFile: seed%2 == 0, IndexColumns: []string{"trace_id"}}, rows, rgRows)
		if n, ok := f.NumRowGroups(); !ok || n != (len(rows)+rgRows-1)/rgRows {
			t.Fatalf("seed %d: %d row groups in footer, want %d", seed, n, (len(rows)+rgRows-1)/rgRows)
		}
		for i, rw := range rows {
			rg := i / rgRows
			if !f.RowGroupMayContainTime(rg, rw.ts, rw.ts+1) || !f.MayContainTime(rw.ts, rw.ts+1) {
				t.Fatalf("seed %d row %d: time %d answered no", seed, i, rw.ts)
			}
			if rw.raw == nil {
				continue
			}
			s := *rw.raw
			for lo := 0; lo < len(s); lo++ {
				for hi := lo + 1; hi <= min(len(s), lo+8); hi++ {
					sub := s[lo:hi]
					if !f.RowGroupMayContainSubstring(rg, sub) || !f.MayContainSubstring(sub) {
						t.Fatalf("seed %d row %d: substring %q of %q answered no", seed, i, sub, s)
					}
				}
			}
			forEachToken([]byte(s), func(tok []byte) {
				if !f.RowGroupMayContainToken(rg, string(tok)) || !f.MayContainToken(string(tok)) {
					t.Fatalf("seed %d row %d: token %q answered no", seed, i, tok)
				}
			})
		}
	}
}

func TestBloomsPrune(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rows := randRows(r, 2000)
	f, _, _ := build(t, Config{WholeFile: true}, rows, 500)
	var all strings.Builder
	for _, rw := range rows {
		if rw.raw != nil {
			all.WriteString(*rw.raw + "\n")
		}
	}
	absent, pass := 0, 0
	for i := 0; i < 2000; i++ {
		q := fmt.Sprintf("Q%dzz%d", r.IntN(1_000_000), i)
		if strings.Contains(all.String(), q) {
			continue
		}
		absent++
		for rg := 0; rg < 4; rg++ {
			if f.RowGroupMayContainSubstring(rg, q) {
				pass++
			}
		}
	}
	if rate := float64(pass) / float64(4*absent); rate > 0.05 {
		t.Fatalf("row-group bloom false-positive rate %.3f, want below 0.05", rate)
	}
	if f.MayContainToken("definitelynotatoken") && f.MayContainSubstring("definitelynot") {
		t.Fatalf("absent token and substring both answered maybe")
	}
}

func TestAbsentMetadataAnswersMaybe(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	_, _, kv := build(t, Config{WholeFile: true, IndexColumns: []string{"trace_id"}}, randRows(r, 300), 100)
	// Strip everything, then corrupt everything: both must answer maybe.
	corrupt := map[string]string{}
	for k := range kv {
		corrupt[k] = "%%%not-base64-or-json"
	}
	for name, m := range map[string]map[string]string{"stripped": {}, "corrupt": corrupt} {
		f, err := Decode(m)
		if name == "corrupt" && err == nil {
			t.Fatal("corrupt entries decoded without error")
		}
		if !f.MayContainSubstring("zzzzzz") || !f.RowGroupMayContainSubstring(0, "zzzz") ||
			!f.MayContainToken("zzzz") || !f.RowGroupMayContainToken(2, "zz") ||
			!f.MayContainTime(0, 1) || !f.RowGroupMayContainTime(0, 0, 1) {
			t.Fatalf("%s footer answered no", name)
		}
		if _, ok := f.Lookup("trace_id", "t1"); ok {
			t.Fatalf("%s footer claims an inverted index", name)
		}
		if _, ok := f.groupRows([]string{"service"}, []*string{strp("api")}); ok {
			t.Fatalf("%s footer claims group counts", name)
		}
	}
	var nilFooter *Footer
	if !nilFooter.MayContainSubstring("abc") || !nilFooter.MayContainTime(1, 2) {
		t.Fatal("nil footer answered no")
	}
}

func TestGroupsBucketsAndInvertedIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	rows := randRows(r, 5000)
	f, skipped, _ := build(t, Config{WholeFile: true, IndexColumns: []string{"trace_id", "service", "nosuch"}}, rows, 1000)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v at the default limit", skipped)
	}
	counts := map[string]int64{}
	posts := map[string][]uint32{}
	for i, rw := range rows {
		k := "<null>"
		if rw.service != nil {
			k = *rw.service
		}
		counts[k]++
		if rw.trace != nil {
			posts[*rw.trace] = append(posts[*rw.trace], uint32(i))
		}
	}
	for k, want := range counts {
		v := strp(k)
		if k == "<null>" {
			v = nil
		}
		got, ok := f.groupRows([]string{"service"}, []*string{v})
		if !ok || got != want {
			t.Fatalf("group %s: %d rows (ok=%v), want %d", k, got, ok, want)
		}
	}
	for term, want := range posts {
		got, ok := f.Lookup("trace_id", term)
		if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("lookup %s: got %v (ok=%v), want %v", term, got, ok, want)
		}
	}
	if got, ok := f.Lookup("trace_id", "absent"); !ok || len(got) != 0 {
		t.Fatalf("absent term: %v %v", got, ok)
	}
	// Time buckets: counts sum to the row count; a gap before the first row is "no".
	if f.MayContainTime(0, rows[0].ts-DefaultBucketMicros) {
		t.Fatal("time before the first bucket answered maybe")
	}
	var sum int64
	for _, n := range f.buckets.Counts {
		sum += n
	}
	if sum != int64(len(rows)) {
		t.Fatalf("bucket counts sum to %d, want %d", sum, len(rows))
	}

	// A tiny limit skips the indexes and reports them.
	f2, skipped, _ := build(t, Config{WholeFile: true, IndexColumns: []string{"trace_id"}, FooterMaxBytes: 64}, rows, 1000)
	if len(skipped) != 1 || skipped[0] != "trace_id" || f2.HasInvertedIndex("trace_id") {
		t.Fatalf("oversized index: skipped %v, present %v", skipped, f2.HasInvertedIndex("trace_id"))
	}
	// Streamed mode (no WholeFile) writes neither the index nor the file bloom.
	f3, _, kv := build(t, Config{IndexColumns: []string{"trace_id"}}, rows, 1000)
	if f3.HasInvertedIndex("trace_id") || kv[KeyFileTrigrams] != "" {
		t.Fatal("streamed mode wrote whole-file structures")
	}
}

func TestWideTimeSpanCoarsensBuckets(t *testing.T) {
	rows := []row{{ts: 0}, {ts: 365 * 24 * 3600 * 1_000_000}, {ts: -5}}
	rows[2], rows[1] = rows[1], rows[2]
	rows[0], rows[1] = rows[1], rows[0] // -5, 0, 1y
	f, _, _ := build(t, Config{}, rows, 10)
	if len(f.buckets.Counts) > MaxBuckets {
		t.Fatalf("%d buckets", len(f.buckets.Counts))
	}
	for _, rw := range rows {
		if !f.MayContainTime(rw.ts, rw.ts+1) {
			t.Fatalf("ts %d answered no", rw.ts)
		}
	}
}

// TestPostingsStandalone: an index built column batch by column batch (as the Puffin rebuild
// does) encodes to exactly the footer entry's bytes for the same rows, and a truncated or
// padded encoding is refused rather than misread.
func TestPostingsStandalone(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	rows := randRows(r, 3000)
	f, _, _ := build(t, Config{WholeFile: true, IndexColumns: []string{"trace_id"}}, rows, 700)
	footer, ok := f.Inverted("trace_id")
	if !ok {
		t.Fatal("no footer index")
	}
	p := NewPostings()
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for i, rw := range rows {
		if rw.trace == nil {
			b.AppendNull()
		} else {
			b.Append(*rw.trace)
		}
		if i%512 == 511 || i == len(rows)-1 {
			col := b.NewArray()
			p.Add(col)
			col.Release()
		}
	}
	enc := p.Encode()
	if string(enc) != string(footer.enc) {
		t.Fatalf("standalone encoding (%d bytes) differs from the footer entry (%d bytes)", len(enc), len(footer.enc))
	}
	if int64(len(enc)) < p.MinEncodedBytes() || p.Rows() != uint32(len(rows)) {
		t.Fatalf("size bound %d over the size %d, or %d rows counted of %d", p.MinEncodedBytes(), len(enc), p.Rows(), len(rows))
	}
	ix, err := DecodeInverted(enc)
	if err != nil {
		t.Fatal(err)
	}
	for _, rw := range rows {
		if rw.trace != nil && fmt.Sprint(ix.Lookup(*rw.trace)) != fmt.Sprint(footer.Lookup(*rw.trace)) {
			t.Fatalf("lookup %q differs", *rw.trace)
		}
	}
	for _, bad := range [][]byte{enc[:len(enc)-1], append(append([]byte{}, enc...), 0), nil} {
		if _, err := DecodeInverted(bad); err == nil {
			t.Fatalf("malformed index of %d bytes accepted", len(bad))
		}
	}
}

// BenchmarkAddRows measures the row-group metadata of access-log lines (the
// bloom's token and trigram sets dominate):
// go test ./merge/index -run '^$' -bench AddRows
func BenchmarkAddRows(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("request completed started failed retry timeout connection refused upstream cache miss hit slow query token expired ok")
	rows := make([]row, 64*1024)
	ts := int64(1_700_000_000_000_000)
	var n int64
	for i := range rows {
		ts += r.Int64N(30_000)
		raw := fmt.Sprintf("GET /api/v1/users/%d status=%d latency_ms=%d user=u%05d msg=%s %s %s", r.IntN(100000),
			[]int{200, 404, 500}[r.IntN(3)], r.IntN(2000), r.IntN(50000), words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))])
		n += int64(len(raw))
		rows[i] = row{ts: ts, service: strp("api"), raw: strp(raw), trace: strp(fmt.Sprintf("%016x", r.Uint64()))}
	}
	rec, tss := record(rows)
	defer rec.Release()
	b.SetBytes(n)
	bl := NewBuilder(Config{}, sc) // one builder, a row group per op: as a file is written
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bl.AddRows(rec, tss)
		bl.EndRowGroup()
	}
}

// BenchmarkBuilderPerFile measures a builder per small file, as the drain makes one per
// partition and batch: 2,000 rows in one row group, then the footer entries:
// go test ./merge/index -run '^$' -bench BuilderPerFile -benchmem
func BenchmarkBuilderPerFile(b *testing.B) {
	rec, ts := record(randRows(rand.New(rand.NewPCG(5, 6)), 2000))
	defer rec.Release()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bl := NewBuilder(Config{}, sc)
		bl.AddRows(rec, ts)
		bl.EndRowGroup()
		if _, _, err := bl.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAddRawMatchesReferenceScan: the fused scan adds exactly the trigrams
// and token keys that the reader's definitions (forEachToken, tokenKey,
// trigramSet.addText) give, or probes would miss (false negatives).
func TestAddRawMatchesReferenceScan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "Z", "9", "_", " ", "=", "/", "ä", "é", "\xff", "-", "x"}
	b := NewBuilder(Config{}, sc)
	want := newTrigramSet()
	for n := 0; n < 2000; n++ {
		var sb strings.Builder
		for j := 0; j < r.IntN(40); j++ {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		v := []byte(sb.String())
		b.rgTri.reset()
		b.rgTok.reset()
		clear(b.tokCache[:])
		want.reset()
		b.addRaw(v)
		want.addText(v)
		if b.rgTri.count != want.count || !slices.Equal(b.rgTri.bits, want.bits) {
			t.Fatalf("%q: trigrams differ (%d vs %d)", v, b.rgTri.count, want.count)
		}
		// Same token keys, same bits: compare the filter with one built from the reference.
		got := b.rgTok.bloom(0)
		wantTok := newSBBF(len(got.blocks))
		forEachToken(v, func(tok []byte) { wantTok.add(tokenKey(tok)) })
		if !slices.Equal(got.blocks, wantTok.blocks) {
			t.Fatalf("%q: token keys differ from the reference scan's", v)
		}
	}
}

// TestCopiedGroupsFromDictionary: a copied row group's group column read as
// a dictionary (values repeated, null rows, an empty string) counts
// the same groups as the same column read as strings.
func TestCopiedGroupsFromDictionary(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "timestamp", Type: arrow.FixedWidthTypes.Timestamp_us}, {Name: "service", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	mem := memory.NewGoAllocator()
	dict := array.NewBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	defer dict.Release()
	plain := array.NewStringBuilder(mem)
	defer plain.Release()
	r := rand.New(rand.NewPCG(1, 2))
	vals := []string{"api", "db", "web", "", "äöü"}
	ts := make([]int64, 5000)
	for i := range ts {
		ts[i] = int64(i) * 1_000_000
		if r.IntN(7) == 0 {
			dict.AppendNull()
			plain.AppendNull()
			continue
		}
		v := vals[r.IntN(len(vals))]
		if err := dict.AppendString(v); err != nil {
			t.Fatal(err)
		}
		plain.Append(v)
	}
	d, p := dict.NewArray(), plain.NewArray()
	defer d.Release()
	defer p.Release()
	var got []string
	for _, col := range []arrow.Array{d, p} {
		b := NewBuilder(Config{}, sc)
		b.AddCopiedRowGroup([]arrow.Array{col}, ts, nil)
		entries, _, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Key == KeyGroups {
				got = append(got, e.Value)
			}
		}
	}
	if len(got) != 2 || got[0] != got[1] {
		t.Fatalf("group counts from a dictionary column differ from the string column's:\n%v", got)
	}
}
