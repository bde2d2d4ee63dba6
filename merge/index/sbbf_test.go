package index

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// fpRate is the share of n random keys not in keys that f answers maybe for.
func fpRate(r *rand.Rand, f keyFilter, keys map[uint64]bool, n int) float64 {
	pass, tried := 0, 0
	for tried < n {
		k := mix64(r.Uint64())
		if keys[k] {
			continue
		}
		tried++
		if f.mayContain(k) {
			pass++
		}
	}
	return float64(pass) / float64(n)
}

// TestSplitBlockFalsePositiveRate: the split-block bloom as the builder sizes
// it holds every key and answers maybe for about 1% of absent keys (below
// 1.5% at any count; the classic bloom it replaces for comparison).
func TestSplitBlockFalsePositiveRate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{30, 1000, 26_000, 52_000, 300_000} {
		keys := map[uint64]bool{}
		kb, classic := newKeyBloom(), newBloom(n)
		for len(keys) < n {
			k := mix64(r.Uint64())
			keys[k] = true
			kb.add(k)
			kb.add(k) // duplicates count once
			classic.add(k)
		}
		f := kb.bloom(0)
		for k := range keys {
			if !f.mayContain(k) {
				t.Fatalf("%d keys: key %x answered no", n, k)
			}
		}
		rate, old := fpRate(r, f, keys, 200_000), fpRate(r, classic, keys, 200_000)
		t.Logf("%d keys: split-block %d bytes, %.4f false positives; classic %d bytes, %.4f", n, len(f.blocks)*32, rate, len(classic.words)*8, old)
		if rate > 0.015 {
			t.Errorf("%d keys: split-block false-positive rate %.4f, want at most 0.015", n, rate)
		}
	}
}

// TestSpilledKeysGiveTheSameBloom: keys past the buffer go straight into the
// largest filter, folded at the end; the bits are those of the filter built
// at the final size from the buffered keys.
func TestSpilledKeysGiveTheSameBloom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{10, 5000, 120_000} {
		buffered, spilled := newKeyBloom(), newKeyBloom()
		spilled.limit = n / 3
		for range 2 { // the second round checks reset
			buffered.reset()
			spilled.reset()
			for i := 0; i < n; i++ {
				k := mix64(r.Uint64())
				buffered.add(k)
				spilled.add(k)
			}
			a, b := buffered.bloom(1000), spilled.bloom(1000)
			if !spilled.spilled || buffered.spilled {
				t.Fatalf("%d keys: spilled %v and %v, want true and false", n, spilled.spilled, buffered.spilled)
			}
			if len(a.blocks) != len(b.blocks) || !slices.Equal(a.blocks, b.blocks) {
				t.Fatalf("%d keys: the spilled filter (%d blocks) differs from the buffered one (%d blocks)", n, len(b.blocks), len(a.blocks))
			}
		}
	}
}

// oldRowGroups encodes rows' row-group entry as writers before the
// split-block bloom did: flag 1, then a classic bloom of the distinct
// trigram and token keys.
func oldRowGroups(rows []row, rgRows int) string {
	var e []byte
	n := 0
	for lo := 0; lo < len(rows); lo += rgRows {
		part := rows[lo:min(lo+rgRows, len(rows))]
		keys := map[uint64]bool{}
		for _, rw := range part {
			if rw.raw != nil {
				for _, k := range trigramsOf(*rw.raw) {
					keys[k] = true
				}
				forEachToken([]byte(*rw.raw), func(tok []byte) { keys[tokenKey(tok)] = true })
			}
		}
		bl := newBloom(len(keys))
		for k := range keys {
			bl.add(k)
		}
		e = binary.AppendVarint(e, part[0].ts)
		e = binary.AppendVarint(e, part[len(part)-1].ts)
		e = binary.AppendUvarint(e, uint64(len(part)))
		e = bl.appendTo(append(e, flagBloom))
		n++
	}
	return base64.StdEncoding.EncodeToString(append(binary.AppendUvarint(nil, uint64(n)), e...))
}

// TestBothBloomVersionsRead: a file whose row groups carry classic blooms
// (written before the split-block bloom, or copied from such a file by a
// splice beside row groups built now) never prunes a row group holding a
// token or substring, and still prunes absent ones.
func TestBothBloomVersionsRead(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	rows := randRows(r, 3000)
	const rgRows = 500
	old, err := Decode(map[string]string{KeyRowGroupsV1: oldRowGroups(rows[:1500], rgRows)})
	if err != nil {
		t.Fatal(err)
	}
	// A splice's output: the old file's row groups copied with their blooms, then new ones.
	b := NewBuilder(Config{}, sc)
	for rg := 0; rg < 3; rg++ {
		part := rows[rg*rgRows : (rg+1)*rgRows]
		rec, ts := record(part)
		b.AddCopiedRowGroup([]arrow.Array{rec.Column(1)}, ts, old.RowGroupBloom(rg))
		rec.Release()
	}
	for lo := 1500; lo < len(rows); lo += rgRows {
		rec, ts := record(rows[lo : lo+rgRows])
		b.AddRows(rec, ts)
		rec.Release()
		b.EndRowGroup()
	}
	kv, _ := finishKV(t, b)
	f, err := Decode(kv)
	if err != nil {
		t.Fatal(err)
	}
	for i, fo := range []*Footer{old, f} {
		n, _ := fo.NumRowGroups()
		if want := []int{3, 6}[i]; n != want {
			t.Fatalf("footer %d: %d row groups, want %d", i, n, want)
		}
		for rg := range n {
			if flag := fo.RowGroupBloom(rg)[0]; flag != []byte{flagBloom, flagSplitBlock}[rg/3] {
				t.Fatalf("footer %d row group %d: bloom flag %d", i, rg, flag)
			}
		}
	}
	var all strings.Builder
	for i, rw := range rows {
		if rw.raw == nil {
			continue
		}
		all.WriteString(*rw.raw + "\n")
		s, rg := *rw.raw, i/rgRows
		for lo := 0; lo+3 <= len(s); lo++ {
			if sub := s[lo:min(len(s), lo+6)]; !f.RowGroupMayContainSubstring(rg, sub) {
				t.Fatalf("row %d: substring %q answered no in row group %d", i, sub, rg)
			}
		}
		forEachToken([]byte(s), func(tok []byte) {
			if !f.RowGroupMayContainToken(rg, string(tok)) {
				t.Fatalf("row %d: token %q answered no in row group %d", i, tok, rg)
			}
		})
	}
	// Absent tokens: each version prunes about 99% of them.
	for v, rgs := range [][]int{{0, 1, 2}, {3, 4, 5}} {
		absent, pass := 0, 0
		for i := 0; absent < 3000; i++ {
			q := fmt.Sprintf("Q%dzz%d", r.IntN(1_000_000), i)
			if strings.Contains(all.String(), q) {
				continue
			}
			absent++
			for _, rg := range rgs {
				if f.RowGroupMayContainToken(rg, q) {
					pass++
				}
			}
		}
		if rate := float64(pass) / float64(3*absent); rate > 0.03 {
			t.Errorf("version %d: token false-positive rate %.4f, want about 0.01", v+1, rate)
		}
	}
}

// TestUnknownBloomFlag: an entry with a flag this reader does not know is
// an error naming it, and the footer answers maybe.
func TestUnknownBloomFlag(t *testing.T) {
	e := binary.AppendUvarint(nil, 1)
	e = binary.AppendVarint(e, 1)
	e = binary.AppendVarint(e, 2)
	e = binary.AppendUvarint(e, 3)
	e = append(e, 7, 0, 0)
	f, err := Decode(map[string]string{KeyRowGroups: base64.StdEncoding.EncodeToString(e)})
	if err == nil || !strings.Contains(err.Error(), "bloom flag 7") {
		t.Fatalf("error %v, want one naming bloom flag 7", err)
	}
	if !f.RowGroupMayContainToken(0, "x") {
		t.Fatal("unknown flag pruned a row group")
	}
}

// TestSplitBlockBloomsUnderANewKey: entries holding split-block blooms are written under
// siglake.rgbloom.v2, never v1. Readers before them took any flag but 1 under v1 for "nothing
// follows" and parsed the bloom's bytes as further row groups; a key they do not know they
// ignore. A reader of today takes v2 over v1 when a footer has both.
func TestSplitBlockBloomsUnderANewKey(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rows := randRows(r, 1000)
	b := NewBuilder(Config{}, sc)
	rec, ts := record(rows)
	b.AddRows(rec, ts)
	rec.Release()
	b.EndRowGroup()
	kv, _ := finishKV(t, b)
	if _, ok := kv[KeyRowGroupsV1]; ok {
		t.Fatalf("a new file's footer has %s: older readers would parse its split-block blooms as row groups", KeyRowGroupsV1)
	}
	if _, ok := kv[KeyRowGroups]; !ok || KeyRowGroups == KeyRowGroupsV1 {
		t.Fatalf("no %s entry in %v", KeyRowGroups, kv)
	}
	// Both keys: v2 is read (v1 here says one row group with no bloom; v2 has the real one).
	kv[KeyRowGroupsV1] = base64.StdEncoding.EncodeToString([]byte{1, 0, 0, 0, 0})
	f, err := Decode(kv)
	if err != nil {
		t.Fatal(err)
	}
	if f.RowGroupBloom(0) == nil || f.RowGroupMayContainToken(0, "nosuchtokenanywhere") {
		t.Fatal("with both keys the v1 entry was read, not v2")
	}
}

// TestTruncatedSplitBlockEntry: a row-group entry cut anywhere inside its split-block blooms, or
// whose bloom header claims more blocks than follow or more than any writer makes, is an error
// naming the key, never a panic, and prunes no row group: every row group may then hold every
// token, including those it does hold.
func TestTruncatedSplitBlockEntry(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 7))
	b := NewBuilder(Config{}, sc)
	for range 3 {
		rows := randRows(r, 300)
		rows[17].raw = strp("found needle here")
		rec, ts := record(rows)
		b.AddRows(rec, ts)
		rec.Release()
		b.EndRowGroup()
	}
	kv, _ := finishKV(t, b)
	whole, err := base64.StdEncoding.DecodeString(kv[KeyRowGroups])
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, entry []byte, wantErr string) {
		t.Helper()
		f, err := Decode(map[string]string{KeyRowGroups: base64.StdEncoding.EncodeToString(entry)})
		if err == nil || !strings.Contains(err.Error(), KeyRowGroups) || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("%s: error %v, want one naming %s and %q", what, err, KeyRowGroups, wantErr)
		}
		for rg := range 3 {
			if !f.RowGroupMayContainToken(rg, "needle") || !f.RowGroupMayContainToken(rg, "nosuchtokenanywhere") {
				t.Fatalf("%s: row group %d pruned", what, rg)
			}
		}
	}
	for n := range len(whole) {
		check(fmt.Sprintf("cut at byte %d of %d", n, len(whole)), whole[:n], "truncated entry")
	}
	// The first entry's bloom header: its log2 block count, after the count, bounds and rows.
	_, k0 := binary.Uvarint(whole)
	_, k1 := binary.Varint(whole[k0:])
	_, k2 := binary.Varint(whole[k0+k1:])
	_, k3 := binary.Uvarint(whole[k0+k1+k2:])
	flag := k0 + k1 + k2 + k3
	if whole[flag] != flagSplitBlock {
		t.Fatalf("first entry's flag %d, want %d", whole[flag], flagSplitBlock)
	}
	for _, log := range []byte{whole[flag+1] + 1, maxSBBFLog, maxSBBFLog + 1, 255} {
		bad := slices.Clone(whole)
		bad[flag+1] = log
		want := "" // twice the blocks: read into the next entries, which then do not parse
		switch {
		case log > maxSBBFLog:
			want = "log2 blocks"
		case log > whole[flag+1]+1:
			want = "truncated entry"
		}
		check(fmt.Sprintf("header of 2^%d blocks", log), bad, want)
	}
}

// TestKeyBloomResetClearsWhatItSet: reset clears only the blocks a row group's filter used (its
// final size, or every block once keys spilled), and that is every bit set: after row groups
// of many keys, few keys, spilled keys and few again, each filter is the one a fresh keyBloom
// builds from the same keys, and nothing is left set after a reset.
func TestKeyBloomResetClearsWhatItSet(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 8))
	kb := newKeyBloom()
	kb.limit = 20_000
	for _, n := range []int{50_000, 10, 15_000, 40_000, 3, 0} { // 50,000 and 40,000 spill
		keys := make([]uint64, n)
		for i := range keys {
			keys[i] = mix64(r.Uint64())
			kb.add(keys[i])
		}
		fresh := newKeyBloom()
		for _, k := range keys {
			fresh.add(k)
		}
		got, want := kb.bloom(7), fresh.bloom(7)
		if !slices.Equal(got.blocks, want.blocks) {
			t.Fatalf("%d keys (spilled %v): the filter differs from a fresh one's", n, kb.spilled)
		}
		kb.reset()
		for i, b := range kb.f.blocks[:kb.f.full] {
			if b != ([8]uint32{}) {
				t.Fatalf("after %d keys: block %d of %d still set after reset", n, i, kb.f.full)
			}
		}
	}
}

// TestRowGroupSetsComeBackClean: a builder gives its row-group sets back in Finish for the next
// builder, reset even when rows were added after its last row group ended: the next file's
// footer is the one it gets with sets of its own.
func TestRowGroupSetsComeBackClean(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 9))
	small, big := randRows(r, 50), randRows(r, 5000)
	footer := func() map[string]string {
		b := NewBuilder(Config{}, sc)
		rec, ts := record(small)
		b.AddRows(rec, ts)
		rec.Release()
		b.EndRowGroup()
		kv, _ := finishKV(t, b)
		return kv
	}
	want := footer()
	for range 3 {
		b := NewBuilder(Config{}, sc)
		rec, ts := record(big)
		b.AddRows(rec, ts)
		b.EndRowGroup()
		b.AddRows(rec, ts) // rows of a row group that never ends
		rec.Release()
		finishKV(t, b)
		if got := footer(); got[KeyRowGroups] != want[KeyRowGroups] {
			t.Fatal("a file's row-group blooms hold keys of the file written before it")
		}
	}
}
