// Package rowsum is siglake's one row fingerprint: an order-independent checksum of a multiset of
// rows that DuckDB computes natively too (test/testenv, scripts/duckdb/check.mjs), so walgen, the
// demo and every test can show that rows were kept exactly once, and an independent reader can
// check it.
package rowsum

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
)

// The row checksum is an order-independent fingerprint of a multiset of rows that
// DuckDB computes natively (scripts/duckdb/check.mjs) and Go computes here, so a test
// can compare the rows we wrote with what an independent reader sees.
//
// Each value is encoded canonically: NULL is "-", anything else is "<n>:<text>" where n
// is the byte length of text in decimal. text is, by type:
//
//	boolean               "true" / "false"
//	integers              decimal
//	float, double         C printf "%.17g" of the value as a double; "nan", "-nan", "inf", "-inf"
//	string                its UTF-8 bytes
//	binary                upper-case hex
//	date                  days since 1970-01-01, decimal
//	timestamp (any unit)  microseconds since the epoch, decimal, truncated toward zero
//	list                  "[" + the encodings of the elements + "]"
//	map                   "{" + encoding of key + encoding of value, per entry in order + "}"
//	struct                "(" + the encodings of the fields in order + ")"
//
// A row's text is the concatenation of its columns' encodings (the length prefixes make
// it unambiguous). The row hash is the little-endian uint64 of the first 8 bytes of the
// MD5 of the row text (DuckDB: md5_number(text) & (2^64-1)); the checksum is the sum of
// the row hashes modulo 2^64. Other types (decimal, time, interval, uuid) are rejected.

// Sum accumulates the row checksum over record batches. The zero value is ready, and two Sums
// compare with ==: the same rows the same number of times give the same Sum, whatever the order
// (and different rows a different one, with overwhelming probability).
type Sum struct {
	Rows int64  `json:"rows"` // rows added so far
	Sum  uint64 `json:"sum"`  // checksum so far
}

// Add folds every row of rec into the sum, over the named columns in that order, or
// over all columns of rec in schema order when none are named.
func (s *Sum) Add(rec arrow.RecordBatch, columns ...string) error {
	cols, err := pickColumns(rec, columns)
	if err != nil {
		return err
	}
	var buf []byte
	for i := 0; i < int(rec.NumRows()); i++ {
		buf = buf[:0]
		for _, c := range cols {
			if buf, err = appendValue(buf, c, i); err != nil {
				return err
			}
		}
		s.Sum += rowHash(buf)
		s.Rows++
	}
	return nil
}

// Merge adds o to s: the sum of two multisets of rows.
func (s *Sum) Merge(o Sum) { s.Rows += o.Rows; s.Sum += o.Sum }

// Checksum is the row checksum over all rows of recs (see Sum.Add for columns).
func Checksum(recs []arrow.RecordBatch, columns ...string) (uint64, error) {
	var s Sum
	for _, r := range recs {
		if err := s.Add(r, columns...); err != nil {
			return 0, err
		}
	}
	return s.Sum, nil
}

// Table reads every row of t's current snapshot through iceberg-go's scanner (a reader we did
// not write) and fingerprints it.
func Table(ctx context.Context, t *table.Table, columns ...string) (Sum, error) {
	var sum Sum
	if t.CurrentSnapshot() == nil {
		return sum, nil
	}
	_, recs, err := t.Scan().ToArrowRecords(ctx)
	if err != nil {
		return sum, fmt.Errorf("scan %v: %w", t.Identifier(), err)
	}
	for rec, err := range recs {
		if err != nil {
			return sum, fmt.Errorf("scan %v: %w", t.Identifier(), err)
		}
		err = sum.Add(rec, columns...)
		rec.Release()
		if err != nil {
			return sum, fmt.Errorf("fingerprint rows of %v: %w", t.Identifier(), err)
		}
	}
	return sum, nil
}

// Text returns the canonical text of row i of rec, for debugging a mismatch.
func Text(rec arrow.RecordBatch, i int, columns ...string) (string, error) {
	cols, err := pickColumns(rec, columns)
	if err != nil {
		return "", err
	}
	var b []byte
	for _, c := range cols {
		if b, err = appendValue(b, c, i); err != nil {
			return "", err
		}
	}
	return string(b), nil
}

func rowHash(text []byte) uint64 {
	d := md5.Sum(text)
	return binary.LittleEndian.Uint64(d[:8])
}

func pickColumns(rec arrow.RecordBatch, names []string) ([]arrow.Array, error) {
	if len(names) == 0 {
		return rec.Columns(), nil
	}
	out := make([]arrow.Array, 0, len(names))
	for _, n := range names {
		idx := rec.Schema().FieldIndices(n)
		if len(idx) != 1 {
			return nil, fmt.Errorf("row checksum: record has %d columns named %q", len(idx), n)
		}
		out = append(out, rec.Column(idx[0]))
	}
	return out, nil
}

// appendValue appends the canonical encoding of arr[i].
func appendValue(b []byte, arr arrow.Array, i int) ([]byte, error) {
	if arr.IsNull(i) {
		return append(b, '-'), nil
	}
	// A valid index can point at a null dictionary entry; readers see a NULL.
	if d, ok := arr.(*array.Dictionary); ok && d.Dictionary().IsNull(d.GetValueIndex(i)) {
		return append(b, '-'), nil
	}
	text, err := valueText(arr, i)
	if err != nil {
		return nil, err
	}
	b = strconv.AppendInt(b, int64(len(text)), 10)
	b = append(b, ':')
	return append(b, text...), nil
}

// valueText is the text of a non-null value: numbers and bytes as numberText and bytesText say,
// dates as days, timestamps as microseconds, nested values by their parts.
func valueText(arr arrow.Array, i int) (string, error) {
	if t, ok := numberText(arr, i); ok {
		return t, nil
	}
	if t, ok := bytesText(arr, i); ok {
		return t, nil
	}
	switch a := arr.(type) {
	case *array.Date32:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Date64:
		return strconv.FormatInt(floorDiv(int64(a.Value(i)), 86_400_000), 10), nil
	case *array.Timestamp:
		return strconv.FormatInt(toMicros(int64(a.Value(i)), a.DataType().(*arrow.TimestampType).Unit), 10), nil
	case *array.Dictionary:
		return valueText(a.Dictionary(), a.GetValueIndex(i))
	case *array.Map:
		return mapText(a, i)
	case array.ListLike:
		return listText(a, i)
	case *array.Struct:
		return structText(a, i)
	default:
		return "", fmt.Errorf("row checksum: unsupported column type %s", arr.DataType())
	}
}

// numberText is the text of a boolean, integer or float value; ok is false for other types.
func numberText(arr arrow.Array, i int) (text string, ok bool) {
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i)), true
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10), true
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10), true
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10), true
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10), true
	case *array.Uint8:
		return strconv.FormatUint(uint64(a.Value(i)), 10), true
	case *array.Uint16:
		return strconv.FormatUint(uint64(a.Value(i)), 10), true
	case *array.Uint32:
		return strconv.FormatUint(uint64(a.Value(i)), 10), true
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10), true
	case *array.Float32:
		return floatText(float64(a.Value(i))), true
	case *array.Float64:
		return floatText(a.Value(i)), true
	}
	return "", false
}

// bytesText is a string value as it is and a binary one in upper-case hex; ok is false for other
// types.
func bytesText(arr arrow.Array, i int) (text string, ok bool) {
	switch a := arr.(type) {
	case *array.String:
		return a.Value(i), true
	case *array.LargeString:
		return a.Value(i), true
	case *array.StringView:
		return a.Value(i), true
	case *array.Binary:
		return strings.ToUpper(hex.EncodeToString(a.Value(i))), true
	case *array.LargeBinary:
		return strings.ToUpper(hex.EncodeToString(a.Value(i))), true
	case *array.BinaryView:
		return strings.ToUpper(hex.EncodeToString(a.Value(i))), true
	case *array.FixedSizeBinary:
		return strings.ToUpper(hex.EncodeToString(a.Value(i))), true
	}
	return "", false
}

// floatText matches DuckDB's printf('%.17g', x), which follows C: Go's %g with an
// explicit precision picks the same notation and trims zeros the same way.
func floatText(f float64) string {
	switch {
	case math.IsNaN(f) && math.Signbit(f):
		return "-nan"
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// toMicros converts to microseconds truncating toward zero, as DuckDB's epoch_us does.
func toMicros(v int64, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return v * 1_000_000
	case arrow.Millisecond:
		return v * 1_000
	case arrow.Nanosecond:
		return v / 1_000
	default:
		return v
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func listText(a array.ListLike, i int) (string, error) {
	start, end := a.ValueOffsets(i)
	vals := a.ListValues()
	b := []byte{'['}
	var err error
	for j := start; j < end; j++ {
		if b, err = appendValue(b, vals, int(j)); err != nil {
			return "", err
		}
	}
	return string(append(b, ']')), nil
}

func mapText(a *array.Map, i int) (string, error) {
	start, end := a.ValueOffsets(i)
	keys, items := a.Keys(), a.Items()
	b := []byte{'{'}
	var err error
	for j := start; j < end; j++ {
		if b, err = appendValue(b, keys, int(j)); err != nil {
			return "", err
		}
		if b, err = appendValue(b, items, int(j)); err != nil {
			return "", err
		}
	}
	return string(append(b, '}')), nil
}

func structText(a *array.Struct, i int) (string, error) {
	b := []byte{'('}
	var err error
	for f := 0; f < a.NumField(); f++ {
		if b, err = appendValue(b, a.Field(f), i); err != nil {
			return "", err
		}
	}
	return string(append(b, ')')), nil
}
