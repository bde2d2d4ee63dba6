package reader

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

// Marks are stream marks by stream id: the (incarnation, seq) of the last segment of each stream
// whose rows a table snapshot holds. A stream a Marks value does not name has no rows in it (its
// mark is the zero Mark, below every segment).
type Marks map[string]marks.Mark

// TableMarks are the marks of the snapshot t was loaded at (its siglake.mark.* properties):
// what a reader of t passes as after= to read exactly the rows t lacks.
func TableMarks(t *table.Table) (Marks, error) {
	m, err := marks.Marks(t)
	return Marks(m), err
}

// String renders m as the after= parameter and the answer's metadata write it:
// STREAM:INCARNATION:SEQ, comma-separated, sorted by stream; "" for no marks.
func (m Marks) String() string {
	streams := make([]string, 0, len(m))
	for s := range m {
		streams = append(streams, s)
	}
	sort.Strings(streams)
	parts := make([]string, len(streams))
	for i, s := range streams {
		parts[i] = s + ":" + m[s].String()
	}
	return strings.Join(parts, ",")
}

// Get is the mark of stream (the zero Mark when m does not name it).
func (m Marks) Get(stream string) marks.Mark { return m[stream] }

// Clone copies m.
func (m Marks) Clone() Marks {
	out := make(Marks, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Advance raises m's mark of every stream o names to o's where o's is higher: several buffers'
// answers (one per pod, each for its own streams) merge into the marks a next request passes.
func (m Marks) Advance(o Marks) {
	for s, v := range o {
		if cur, ok := m[s]; !ok || cur.Less(v) {
			m[s] = v
		}
	}
}

// ParseMarks parses the String form (also with spaces after the commas); "" is no marks.
func ParseMarks(s string) (Marks, error) {
	out := Marks{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f := strings.Split(part, ":")
		if len(f) != 3 || !localwal.ValidStream(f[0]) {
			return nil, fmt.Errorf("%q: accepted: STREAM:INCARNATION:SEQ, comma-separated (a table's siglake.mark.STREAM properties)", part)
		}
		inc, err1 := strconv.ParseUint(f[1], 10, 64)
		seq, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q: incarnation and seq are decimal uint64s", part)
		}
		if _, dup := out[f[0]]; dup {
			return nil, fmt.Errorf("stream %q named twice", f[0])
		}
		out[f[0]] = marks.Mark{Incarnation: inc, Seq: seq}
	}
	return out, nil
}
