// Package marks is the stream mark: a stream's position in a table, kept in a table property and
// moved in the same commit as the rows it accounts for, which is what makes the drain exactly-once.
// It holds the mark's stored form, the rules every append applies against it, and reading marks
// from a loaded table. Pure: no catalog I/O.
package marks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// Mark is a stream's position: the (incarnation, seq) of the last WAL segment of that stream
// whose rows a table holds. It is kept in a table property, not in a snapshot summary, so snapshot
// expiry can never remove it, and it changes in the same commit as the rows it accounts for.
type Mark struct {
	Incarnation uint64
	Seq         uint64
}

// Less orders marks: a new incarnation of a stream comes after every seq of an older one.
func (m Mark) Less(o Mark) bool {
	if m.Incarnation != o.Incarnation {
		return m.Incarnation < o.Incarnation
	}
	return m.Seq < o.Seq
}

func (m Mark) String() string { return fmt.Sprintf("%d:%d", m.Incarnation, m.Seq) }

// PropertyPrefix prefixes the table property holding each stream's mark.
const PropertyPrefix = tableprops.MarkPrefix

// ReadMark returns stream's mark in t, or ok=false when the stream has never committed to t.
func ReadMark(t *table.Table, stream string) (m Mark, ok bool, err error) {
	return MarkIn(t.Properties(), stream)
}

// MarkIn is ReadMark on properties read once: Table.Properties copies the whole map (every
// stream's mark and seen), so a caller reading many streams' marks reads them once.
func MarkIn(props iceberg.Properties, stream string) (m Mark, ok bool, err error) {
	v, ok := props[PropertyPrefix+stream]
	if !ok {
		return Mark{}, false, nil
	}
	if m, err = ParseMark(v); err != nil {
		return Mark{}, false, fmt.Errorf("table property %s%s: %w", PropertyPrefix, stream, err)
	}
	return m, true, nil
}

// ParseMark reads a mark in its stored form (Mark.String, "incarnation:seq"), as table
// properties and group-commit requests carry it.
func ParseMark(v string) (m Mark, err error) {
	inc, seq, found := strings.Cut(v, ":")
	if !found {
		return Mark{}, fmt.Errorf("mark %q: want incarnation:seq", v)
	}
	if m.Incarnation, err = strconv.ParseUint(inc, 10, 64); err == nil {
		m.Seq, err = strconv.ParseUint(seq, 10, 64)
	}
	if err != nil {
		return Mark{}, fmt.Errorf("mark %q: %w", v, err)
	}
	return m, nil
}

// Marks returns the mark of every stream that has committed to t (its siglake.mark.* properties).
// The marks belong to the metadata t was loaded from: a reader of t's current snapshot holds
// exactly the segments at or below them.
func Marks(t *table.Table) (map[string]Mark, error) {
	out := map[string]Mark{}
	for k := range t.Properties() {
		stream, ok := strings.CutPrefix(k, PropertyPrefix)
		if !ok {
			continue
		}
		m, _, err := ReadMark(t, stream)
		if err != nil {
			return nil, err
		}
		out[stream] = m
	}
	return out, nil
}

// MarkCheck is where a batch of segments first..last of a stream stands against the stream's mark.
type MarkCheck int

const (
	MarkBelow  MarkCheck = iota // no mark, or one below first: the batch goes in
	MarkCovers                  // the mark reached last: a commit already holds the batch
	MarkInside                  // the mark is inside the batch: the append fails (lake.ErrMarkAhead)
)

// CheckMark applies the mark rules of every append to cur (has=false: the stream has no mark).
// Marks only grow, so Covers is final: whoever moved the mark committed these segments.
func CheckMark(cur Mark, has bool, first, last Mark) MarkCheck {
	switch {
	case !has:
		return MarkBelow
	case !cur.Less(last):
		return MarkCovers
	case !cur.Less(first):
		return MarkInside
	}
	return MarkBelow
}
