package index

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Footer is the decoded search metadata of one file. Every query answers
// true ("maybe") when the entry it needs is absent or failed to decode.
type Footer struct {
	groups    *groupsJSON
	buckets   *bucketsJSON
	rowGroups []RowGroup // nil when the entry is absent
	fileTri   *bloom
	inverted  map[string]*Inverted
}

// RowGroup is one row group's entry: its time range, row count and bloom.
type RowGroup struct {
	MinMicros, MaxMicros int64
	Rows                 int64
	bloom                keyFilter // nil: no raw column, answer maybe
	encodedBloom         []byte    // the entry's bloom part as written (flag byte, then the bloom)
}

// Decode reads the siglake entries of a footer's key-value pairs, ignoring
// other keys. It always returns a usable Footer; the error lists entries that
// were malformed, which the Footer then treats as absent.
func Decode(kv map[string]string) (*Footer, error) {
	f := &Footer{inverted: map[string]*Inverted{}}
	var errs []error
	if v, ok := kv[KeyGroups]; ok {
		var g groupsJSON
		if err := json.Unmarshal([]byte(v), &g); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", KeyGroups, err))
		} else {
			f.groups = &g
		}
	}
	if v, ok := kv[KeyTimeBuckets]; ok {
		var b bucketsJSON
		if err := json.Unmarshal([]byte(v), &b); err != nil || b.BucketMicros <= 0 {
			errs = append(errs, fmt.Errorf("%s: bad entry: %v", KeyTimeBuckets, err))
		} else {
			f.buckets = &b
		}
	}
	key, v, ok := KeyRowGroups, kv[KeyRowGroups], true
	if _, v2 := kv[KeyRowGroups]; !v2 {
		key = KeyRowGroupsV1
		v, ok = kv[KeyRowGroupsV1]
	}
	if ok {
		rgs, err := decodeRowGroups(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		} else {
			f.rowGroups = rgs
		}
	}
	if v, ok := kv[KeyFileTrigrams]; ok {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err == nil {
			var rest []byte
			f.fileTri, rest, err = decodeBloom(raw)
			if err == nil && len(rest) != 0 {
				f.fileTri, err = nil, errors.New("trailing bytes")
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", KeyFileTrigrams, err))
		}
	}
	for k, v := range kv {
		if col, ok := strings.CutPrefix(k, KeyInvertedPrefix); ok {
			raw, err := base64.StdEncoding.DecodeString(v)
			var ix *Inverted
			if err == nil {
				ix, err = DecodeInverted(raw)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", k, err))
				continue
			}
			f.inverted[col] = ix
		}
	}
	return f, errors.Join(errs...)
}

func decodeRowGroups(v string) ([]RowGroup, error) {
	src, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, err
	}
	n, k := binary.Uvarint(src)
	if k <= 0 || n > uint64(len(src)) {
		return nil, errShort
	}
	src = src[k:]
	rgs := make([]RowGroup, 0, n)
	for i := uint64(0); i < n; i++ {
		var rg RowGroup
		var k1, k2, k3 int
		rg.MinMicros, k1 = binary.Varint(src)
		if k1 <= 0 {
			return nil, errShort
		}
		rg.MaxMicros, k2 = binary.Varint(src[k1:])
		if k2 <= 0 {
			return nil, errShort
		}
		rows, k3p := binary.Uvarint(src[k1+k2:])
		if k3 = k3p; k3 <= 0 || len(src) < k1+k2+k3+1 {
			return nil, errShort
		}
		rg.Rows = int64(rows)
		src = src[k1+k2+k3:]
		entry := src
		flag := src[0]
		src = src[1:]
		switch flag {
		case flagNoBloom:
		case flagBloom:
			rg.bloom, src, err = decodeBloom(src)
		case flagSplitBlock:
			rg.bloom, src, err = decodeSBBF(src)
		default:
			err = fmt.Errorf("bloom flag %d, want %d (none), %d (classic) or %d (split-block)", flag, flagNoBloom, flagBloom, flagSplitBlock)
		}
		if err != nil {
			return nil, fmt.Errorf("row group %d: %w", i, err)
		}
		rg.encodedBloom = entry[:len(entry)-len(src)]
		rgs = append(rgs, rg)
	}
	if len(src) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return rgs, nil
}

// NumRowGroups returns the row-group count the bloom entry describes.
func (f *Footer) NumRowGroups() (int, bool) {
	if f == nil || f.rowGroups == nil {
		return 0, false
	}
	return len(f.rowGroups), true
}

// RowGroupInfo returns row group rg's entry.
func (f *Footer) RowGroupInfo(rg int) (RowGroup, bool) {
	if f == nil || rg < 0 || rg >= len(f.rowGroups) {
		return RowGroup{}, false
	}
	return f.rowGroups[rg], true
}

// RowGroupBloom returns row group rg's bloom as encoded in the footer (its
// flag byte, then the bloom), for a writer that copies the row group into
// another file; nil when the footer has no entry for it.
func (f *Footer) RowGroupBloom(rg int) []byte {
	if f == nil || rg < 0 || rg >= len(f.rowGroups) {
		return nil
	}
	return f.rowGroups[rg].encodedBloom
}

func trigramsOf(s string) []uint64 {
	keys := make([]uint64, 0, max(len(s)-2, 0))
	for i := 0; i+2 < len(s); i++ {
		keys = append(keys, trigramKey(trigram(s[i], s[i+1], s[i+2])))
	}
	return keys
}

// keyFilter is a row group's bloom, either version.
type keyFilter interface{ mayContain(key uint64) bool }

// mayContainAll reports whether b may hold every key; a nil b (no bloom) may.
func mayContainAll(b keyFilter, keys []uint64) bool {
	if b == nil {
		return true
	}
	for _, k := range keys {
		if !b.mayContain(k) {
			return false
		}
	}
	return true
}

// MayContainSubstring reports whether some row's raw value may contain s
// (LIKE '%s%', case-sensitive bytes). Strings shorter than a trigram always
// answer maybe.
func (f *Footer) MayContainSubstring(s string) bool {
	if f == nil || len(s) < 3 {
		return true
	}
	keys := trigramsOf(s)
	if f.fileTri != nil && !mayContainAll(f.fileTri, keys) {
		return false
	}
	if f.rowGroups == nil {
		return true
	}
	for i := range f.rowGroups {
		if mayContainAll(f.rowGroups[i].bloom, keys) {
			return true
		}
	}
	return false
}

// RowGroupMayContainSubstring is MayContainSubstring for one row group.
func (f *Footer) RowGroupMayContainSubstring(rg int, s string) bool {
	if f == nil || len(s) < 3 || rg < 0 || rg >= len(f.rowGroups) {
		return true
	}
	return mayContainAll(f.rowGroups[rg].bloom, trigramsOf(s))
}

// MayContainToken reports whether some row's raw value may contain t as a
// whole token (see IsToken); a t that is not a single token answers maybe.
func (f *Footer) MayContainToken(t string) bool {
	if f == nil || f.rowGroups == nil || !IsToken(t) {
		return true
	}
	for rg := range f.rowGroups {
		if f.RowGroupMayContainToken(rg, t) {
			return true
		}
	}
	return false
}

// RowGroupMayContainToken is MayContainToken for one row group.
func (f *Footer) RowGroupMayContainToken(rg int, t string) bool {
	if f == nil || !IsToken(t) || rg < 0 || rg >= len(f.rowGroups) {
		return true
	}
	b := f.rowGroups[rg].bloom
	return b == nil || b.mayContain(tokenKey([]byte(t)))
}

// MayContainTime reports whether the file may hold rows with timestamps in
// [t0, t1) microseconds.
func (f *Footer) MayContainTime(t0, t1 int64) bool {
	if f == nil || t0 >= t1 {
		return f == nil
	}
	if b := f.buckets; b != nil {
		for i, n := range b.Counts {
			lo := b.StartMicros + int64(i)*b.BucketMicros
			if n > 0 && lo < t1 && lo+b.BucketMicros > t0 {
				return true
			}
		}
		return false
	}
	if f.rowGroups == nil {
		return true
	}
	for rg := range f.rowGroups {
		if f.RowGroupMayContainTime(rg, t0, t1) {
			return true
		}
	}
	return false
}

// RowGroupMayContainTime is MayContainTime for one row group.
func (f *Footer) RowGroupMayContainTime(rg int, t0, t1 int64) bool {
	if f == nil || rg < 0 || rg >= len(f.rowGroups) {
		return true
	}
	r := f.rowGroups[rg]
	return r.Rows > 0 && r.MinMicros < t1 && r.MaxMicros >= t0
}

// groupRows returns how many rows have the given group values (nil = null),
// in the order of GroupColumns; ok is false when the file has no group-count
// entry for exactly those columns.
func (f *Footer) groupRows(columns []string, values []*string) (rows int64, ok bool) {
	if f == nil || f.groups == nil || len(columns) != len(f.groups.Columns) {
		return 0, false
	}
	for i := range columns {
		if columns[i] != f.groups.Columns[i] {
			return 0, false
		}
	}
	for _, g := range f.groups.Groups {
		if len(g.Values) == len(values) && sameValues(g.Values, values) {
			return g.Rows, true
		}
	}
	return 0, true
}

func sameValues(a, b []*string) bool {
	for i := range a {
		if (a[i] == nil) != (b[i] == nil) || (a[i] != nil && *a[i] != *b[i]) {
			return false
		}
	}
	return true
}

// Groups returns the group columns and every group with its row count.
func (f *Footer) Groups() (columns []string, values [][]*string, rows []int64, ok bool) {
	if f == nil || f.groups == nil {
		return nil, nil, nil, false
	}
	for _, g := range f.groups.Groups {
		values = append(values, g.Values)
		rows = append(rows, g.Rows)
	}
	return f.groups.Columns, values, rows, true
}

// HasInvertedIndex reports whether the footer carries an index for column.
func (f *Footer) HasInvertedIndex(column string) bool {
	if f == nil {
		return false
	}
	_, ok := f.inverted[column]
	return ok
}

// Inverted returns the footer inverted index of column, or false when the
// footer carries none (the caller must scan, or look for a Puffin sidecar).
func (f *Footer) Inverted(column string) (*Inverted, bool) {
	if f == nil {
		return nil, false
	}
	ix, ok := f.inverted[column]
	return ix, ok
}

// Lookup returns the ordinals (0-based, in file order) of the rows whose
// column equals term, from the footer inverted index. ok is false when the
// file has no index for column: the caller must scan.
func (f *Footer) Lookup(column, term string) (rows []uint32, ok bool) {
	ix, ok := f.Inverted(column)
	if !ok {
		return nil, false
	}
	return ix.Lookup(term), true
}

// TimeBuckets returns the file's rows per time bucket: counts[i] rows lie in
// [start + i*width, start + (i+1)*width), microseconds. ok is false when the
// entry is absent.
func (f *Footer) TimeBuckets() (start, width int64, counts []int64, ok bool) {
	if f.buckets == nil {
		return 0, 0, nil, false
	}
	return f.buckets.StartMicros, f.buckets.BucketMicros, f.buckets.Counts, true
}
