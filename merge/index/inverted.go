package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// Postings accumulates one column's inverted index: the row ordinals of each
// distinct non-null value, in the order rows are added. The footer entry
// (base64 of Encode) and the Puffin blob (Encode as is) share this encoding,
// so both are read by the same Inverted.
type Postings struct {
	terms    map[string][]uint32
	rows     uint32
	minBytes int64 // lower bound of len(Encode())
	memBytes int64 // estimate of the Go memory the terms and postings hold
}

// Memory estimate per distinct term (string and slice headers, the map entry and its share of
// the map's buckets) and per posting (4 bytes, plus the slack of append's doubling).
const (
	termMemBytes    = 96
	postingMemBytes = 6
)

// NewPostings returns an empty index whose first added row is ordinal 0.
func NewPostings() *Postings { return &Postings{terms: map[string][]uint32{}, minBytes: 1} }

// Add appends the values of col as the next rows (strings as is, other types
// as Arrow prints them; nulls are not indexed but count as rows).
func (p *Postings) Add(col arrow.Array) {
	tc := newTextCol(col)
	n := col.Len()
	for i := 0; i < n; i++ {
		v, ok := tc.value(i)
		if !ok {
			continue
		}
		rows, seen := p.terms[string(v)]
		if !seen {
			p.minBytes += int64(len(v)) + 2 // length and count varints
			p.memBytes += int64(len(v)) + termMemBytes
		}
		p.terms[string(v)] = append(rows, p.rows+uint32(i))
		p.minBytes++ // at least one byte per posting
		p.memBytes += postingMemBytes
	}
	p.rows += uint32(n)
}

// Rows is the number of rows added so far.
func (p *Postings) Rows() uint32 { return p.rows }

// MemBytes estimates the memory the index holds while it is built: a builder
// with a memory cap stops once it is over it.
func (p *Postings) MemBytes() int64 { return p.memBytes }

// MinEncodedBytes is a lower bound of len(Encode()), cheap to keep up to date:
// a builder with a size cap stops once even this is over it.
func (p *Postings) MinEncodedBytes() int64 { return p.minBytes }

// Encode: uvarint term count, then per term in byte order: uvarint length,
// the term bytes, uvarint posting count, and the row ordinals as uvarint
// deltas (first one absolute).
func (p *Postings) Encode() []byte {
	terms := make([]string, 0, len(p.terms))
	for t := range p.terms {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	out := make([]byte, 0, p.minBytes)
	out = binary.AppendUvarint(out, uint64(len(terms)))
	for _, t := range terms {
		out = binary.AppendUvarint(out, uint64(len(t)))
		out = append(out, t...)
		rows := p.terms[t]
		out = binary.AppendUvarint(out, uint64(len(rows)))
		prev := uint32(0)
		for _, r := range rows {
			out = binary.AppendUvarint(out, uint64(r-prev))
			prev = r
		}
	}
	return out
}

// Inverted is one column's decoded inverted index, from a footer entry or a
// Puffin blob.
type Inverted struct{ enc []byte }

// DecodeInverted validates an encoded index (Postings.Encode) and returns it.
func DecodeInverted(enc []byte) (*Inverted, error) {
	if _, _, err := scanPostings(enc, "", false); err != nil {
		return nil, err
	}
	return &Inverted{enc: enc}, nil
}

// Lookup returns the ordinals (0-based, in file order) of the rows whose
// value equals term; none when no row does.
func (ix *Inverted) Lookup(term string) []uint32 {
	rows, _, _ := scanPostings(ix.enc, term, true)
	return rows
}

// Terms returns the number of distinct indexed values.
func (ix *Inverted) Terms() int {
	n, _ := binary.Uvarint(ix.enc)
	return int(n)
}

// Size is the encoded size in bytes.
func (ix *Inverted) Size() int { return len(ix.enc) }

// Encoded returns the encoding (Postings.Encode) the index was decoded from.
func (ix *Inverted) Encoded() []byte { return ix.enc }

var errShortPostings = errors.New("truncated inverted index")

// scanPostings walks an encoded index. With want it stops at term and returns
// its rows (found reports whether it was there); otherwise it validates all of
// it, including that nothing trails it.
func scanPostings(src []byte, term string, want bool) (rows []uint32, found bool, err error) {
	n, k := binary.Uvarint(src)
	if k <= 0 {
		return nil, false, errShortPostings
	}
	src = src[k:]
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(src)
		if k <= 0 || uint64(len(src)-k) < l {
			return nil, false, errShortPostings
		}
		t := string(src[k : k+int(l)])
		src = src[k+int(l):]
		cnt, k2 := binary.Uvarint(src)
		if k2 <= 0 || cnt > uint64(len(src)) {
			return nil, false, errShortPostings
		}
		src = src[k2:]
		hit := want && t == term
		if hit {
			rows = make([]uint32, 0, cnt)
		}
		prev := uint64(0)
		for j := uint64(0); j < cnt; j++ {
			d, k := binary.Uvarint(src)
			if k <= 0 {
				return nil, false, errShortPostings
			}
			src = src[k:]
			prev += d
			if hit {
				rows = append(rows, uint32(prev))
			}
		}
		if hit {
			return rows, true, nil
		}
	}
	if !want && len(src) != 0 {
		return nil, false, fmt.Errorf("%d trailing bytes after the inverted index", len(src))
	}
	return nil, false, nil
}
