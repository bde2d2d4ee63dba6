package index

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Defaults for Config's zero values.
const (
	DefaultRawColumn      = "raw"
	DefaultFooterMaxBytes = 1 << 20
	DefaultBucketMicros   = 60_000_000
	// MaxGroups caps the group-count entry; a file with more distinct groups
	// gets no entry (absent = unknown), so the footer stays small.
	MaxGroups = 10_000
	// MaxBuckets caps the time-bucket entry; wider spans get wider buckets.
	MaxBuckets = 4096
)

// DefaultGroupColumns are counted when Config.GroupColumns is nil.
var DefaultGroupColumns = []string{"service"}

// Config selects what a Builder produces.
type Config struct {
	GroupColumns   []string // nil = DefaultGroupColumns; columns the schema lacks are skipped
	RawColumn      string   // "" = DefaultRawColumn; no blooms if the schema lacks it
	IndexColumns   []string // inverted indexes (only when WholeFile)
	FooterMaxBytes int64    // 0 = DefaultFooterMaxBytes; larger indexes are skipped
	BucketMicros   int64    // 0 = DefaultBucketMicros
	// WholeFile adds the structures that need the whole output at hand: the
	// whole-file raw trigram bloom and the inverted indexes.
	WholeFile bool
}

// Entry is one footer key-value pair.
type Entry struct{ Key, Value string }

// Builder accumulates one file's search metadata as its rows are written in
// order. It holds per-row-group state (a 2 MiB trigram bitmap, a 1 MiB
// bloom and the token keys) plus, with WholeFile, the whole-file trigram bitmap and the postings.
type Builder struct {
	cfg        Config
	groupCols  []int
	groupNames []string
	rawCol     int
	idxCols    []int
	idxNames   []string

	groups  map[string]*groupCount
	tooMany bool
	buckets map[int64]int64

	rgTri    *trigramSet
	rgTok    *keyBloom
	tokCache [4096]uint64 // recently added token keys: most tokens repeat
	rgRows   int64
	rgMin    int64
	rgMax    int64
	rowGroup []byte // encoded row-group entries so far
	nRG      int

	fileTri  *trigramSet
	postings []*Postings // nil entry: over the limit, skipped
}

type groupCount struct {
	values []*string
	rows   int64
}

// NewBuilder returns a builder for files with schema sc.
func NewBuilder(cfg Config, sc *arrow.Schema) *Builder {
	if cfg.GroupColumns == nil {
		cfg.GroupColumns = DefaultGroupColumns
	}
	if cfg.RawColumn == "" {
		cfg.RawColumn = DefaultRawColumn
	}
	if cfg.FooterMaxBytes <= 0 {
		cfg.FooterMaxBytes = DefaultFooterMaxBytes
	}
	if cfg.BucketMicros <= 0 {
		cfg.BucketMicros = DefaultBucketMicros
	}
	b := &Builder{cfg: cfg, rawCol: -1, groups: map[string]*groupCount{}, buckets: map[int64]int64{}}
	for _, name := range cfg.GroupColumns {
		if idx := sc.FieldIndices(name); len(idx) > 0 {
			b.groupCols = append(b.groupCols, idx[0])
			b.groupNames = append(b.groupNames, name)
		}
	}
	if idx := sc.FieldIndices(cfg.RawColumn); len(idx) > 0 && isString(sc.Field(idx[0]).Type) {
		b.rawCol = idx[0]
		sets := rowGroupSets.Get().(*rgSets)
		b.rgTri, b.rgTok = sets.tri, sets.tok
		if cfg.WholeFile {
			b.fileTri = newTrigramSet()
		}
	}
	if cfg.WholeFile {
		for _, name := range cfg.IndexColumns {
			if idx := sc.FieldIndices(name); len(idx) > 0 {
				b.idxCols = append(b.idxCols, idx[0])
				b.idxNames = append(b.idxNames, name)
				b.postings = append(b.postings, NewPostings())
			}
		}
	}
	return b
}

func isString(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

// textCol reads the values of a column as bytes, without copying for string
// columns (other types are rendered as Arrow prints them).
type textCol struct {
	fn     func(i int) ([]byte, bool) // values that are not an Arrow column (AddTextRows)
	col    arrow.Array
	data   []byte
	offs   []int32
	offs64 []int64
	dict   *array.Dictionary // col, when it is one: values come from dictVals
	vals   *textCol          // the dictionary's values
}

func newTextCol(col arrow.Array) textCol {
	t := textCol{col: col}
	switch c := col.(type) {
	case *array.String:
		t.data, t.offs = c.ValueBytes(), c.ValueOffsets()
	case *array.LargeString:
		t.data, t.offs64 = c.ValueBytes(), c.ValueOffsets()
	case *array.Dictionary:
		v := newTextCol(c.Dictionary())
		t.dict, t.vals = c, &v
	}
	return t
}

// value returns row i, or false if it is null.
func (t textCol) value(i int) ([]byte, bool) {
	if t.fn != nil {
		return t.fn(i)
	}
	if t.col.IsNull(i) {
		return nil, false
	}
	if t.dict != nil {
		return t.vals.value(t.dict.GetValueIndex(i))
	}
	switch {
	case t.offs != nil:
		return t.data[t.offs[i]-t.offs[0] : t.offs[i+1]-t.offs[0]], true
	case t.offs64 != nil:
		return t.data[t.offs64[i]-t.offs64[0] : t.offs64[i+1]-t.offs64[0]], true
	}
	return []byte(t.col.ValueStr(i)), true
}

// AddRows adds the rows of rec (which has the builder's schema) to the
// current row group; ts holds their timestamps in microseconds.
func (b *Builder) AddRows(rec arrow.RecordBatch, ts []int64) {
	n := int(rec.NumRows())
	if n == 0 {
		return
	}
	b.addTimes(ts)
	b.addGroups(rec)
	if b.rawCol >= 0 {
		b.addRawValues(n, newTextCol(rec.Column(b.rawCol)).value)
	}
	for j, c := range b.idxCols {
		post := b.postings[j]
		if post == nil {
			continue // already over the footer limit
		}
		post.Add(rec.Column(c))
		// A lower bound of the encoded size: once even that is over the
		// limit the index will be skipped, so stop building it.
		if base64.StdEncoding.EncodedLen(int(post.MinEncodedBytes())) > int(b.cfg.FooterMaxBytes) {
			b.postings[j] = nil
		}
	}
}

// AddTextRows is AddRows for rows that are not an Arrow record (merge/pqdecode): text(col, i)
// is the value of schema field col in row i, nil and false when null. It is asked only for the
// group columns and the raw column, which must be strings for the entries to be those AddRows
// writes. A builder with inverted indexes needs the rows' Arrow columns: it must not be given any.
func (b *Builder) AddTextRows(ts []int64, text func(col, i int) ([]byte, bool)) {
	if len(b.postings) > 0 {
		panic("index: AddTextRows on a builder with inverted indexes")
	}
	n := len(ts)
	if n == 0 {
		return
	}
	b.addTimes(ts)
	if len(b.groupCols) == 1 && !b.tooMany {
		b.countSharedGroups(n, func(i int) ([]byte, bool) { return text(b.groupCols[0], i) })
	} else if len(b.groupCols) > 0 && !b.tooMany {
		cols := make([]textCol, len(b.groupCols))
		for j, c := range b.groupCols {
			cols[j] = textCol{fn: func(i int) ([]byte, bool) { return text(c, i) }}
		}
		b.countGroups(cols, n)
	}
	if b.rawCol >= 0 {
		b.addRawValues(n, func(i int) ([]byte, bool) { return text(b.rawCol, i) })
	}
}

// addTimes adds n rows with timestamps ts (ascending, n > 0) to the row group's time range and
// row count and to the file's time buckets.
func (b *Builder) addTimes(ts []int64) {
	if b.rgRows == 0 {
		b.rgMin = ts[0]
	}
	b.rgMax = ts[len(ts)-1]
	b.rgRows += int64(len(ts))
	b.addBuckets(ts)
}

// addRawValues adds rows 0..n-1's raw values (value: nil and false when null) to the row
// group's bloom keys and the file's trigrams.
func (b *Builder) addRawValues(n int, value func(i int) ([]byte, bool)) {
	for i := 0; i < n; i++ {
		if v, ok := value(i); ok {
			b.addRaw(v)
			if b.fileTri != nil {
				b.fileTri.addText(v)
			}
		}
	}
}

func (b *Builder) addBuckets(ts []int64) {
	for i, n := 0, len(ts); i < n; {
		k := floorDiv(ts[i], b.cfg.BucketMicros)
		j := i + 1
		for j < n && floorDiv(ts[j], b.cfg.BucketMicros) == k {
			j++
		}
		b.buckets[k] += int64(j - i)
		i = j
	}
}

// GroupColumns returns the group columns the builder counts, in order: the
// columns AddCopiedRowGroup takes.
func (b *Builder) GroupColumns() []string { return b.groupNames }

// AddCopiedRowGroup adds a row group copied from another file without its
// rows: its group columns (in GroupColumns order) and timestamps count
// towards the group-count and time-bucket entries, and its row-group entry
// takes encodedBloom (Footer.RowGroupBloom of the file it came from; nil
// writes no bloom, which answers maybe). The current row group must be empty.
// Copied rows add nothing to the whole-file structures, so a builder with
// WholeFile must not be given any.
func (b *Builder) AddCopiedRowGroup(groupCols []arrow.Array, ts []int64, encodedBloom []byte) {
	if b.rgRows != 0 || b.fileTri != nil || len(b.postings) > 0 {
		panic("index: AddCopiedRowGroup on a builder with an open row group or whole-file structures")
	}
	if len(ts) == 0 {
		return
	}
	if !b.tooMany && len(groupCols) == len(b.groupCols) {
		cols := make([]textCol, len(groupCols))
		for j, c := range groupCols {
			cols[j] = newTextCol(c)
		}
		b.countGroups(cols, len(ts))
	} else if len(groupCols) != len(b.groupCols) {
		b.tooMany, b.groups = true, nil // cannot count: leave the entry out (unknown)
	}
	b.addBuckets(ts)
	e := b.rowGroup
	e = binary.AppendVarint(e, ts[0])
	e = binary.AppendVarint(e, ts[len(ts)-1])
	e = binary.AppendUvarint(e, uint64(len(ts)))
	if b.rawCol < 0 || len(encodedBloom) == 0 {
		e = append(e, flagNoBloom)
	} else {
		e = append(e, encodedBloom...)
	}
	b.rowGroup = e
	b.nRG++
}

func (b *Builder) addGroups(rec arrow.RecordBatch) {
	if len(b.groupCols) == 0 || b.tooMany {
		return
	}
	cols := make([]textCol, len(b.groupCols))
	for j, c := range b.groupCols {
		cols[j] = newTextCol(rec.Column(c))
	}
	b.countGroups(cols, int(rec.NumRows()))
}

// countGroups counts n rows of the group columns cols.
func (b *Builder) countGroups(cols []textCol, n int) {
	if len(cols) == 0 || b.tooMany {
		return
	}
	if len(cols) == 1 && cols[0].dict != nil {
		b.countDictGroups(cols[0], n)
		return
	}
	var key []byte
	for i := 0; i < n; i++ {
		key = groupKey(key[:0], cols, i)
		g := b.groups[string(key)]
		if g == nil {
			if len(b.groups) >= MaxGroups {
				b.tooMany = true
				b.groups = nil
				return
			}
			g = &groupCount{}
			for _, c := range cols {
				if v, ok := c.value(i); ok {
					s := string(v)
					g.values = append(g.values, &s)
				} else {
					g.values = append(g.values, nil)
				}
			}
			b.groups[string(key)] = g
		}
		g.rows++
	}
}

// groupKey appends row i's group key to key: per column 1 and the value, or 0 for null, then
// 0xff.
func groupKey(key []byte, cols []textCol, i int) []byte {
	for _, c := range cols {
		if v, ok := c.value(i); ok {
			key = append(key, 1)
			key = append(key, v...)
		} else {
			key = append(key, 0)
		}
		key = append(key, 0xff)
	}
	return key
}

// countDictGroups counts n rows of one dictionary-encoded group column by
// dictionary index, then adds each value's count once.
func (b *Builder) countDictGroups(c textCol, n int) {
	counts := make([]int64, c.dict.Dictionary().Len())
	var nulls int64
	for i := 0; i < n; i++ {
		if c.col.IsNull(i) {
			nulls++
			continue
		}
		counts[c.dict.GetValueIndex(i)]++
	}
	add := func(v []byte, ok bool, rows int64) {
		key := []byte{0, 0xff}
		if ok {
			key = append(append([]byte{1}, v...), 0xff)
		}
		g := b.groups[string(key)]
		if g == nil {
			if len(b.groups) >= MaxGroups {
				b.tooMany, b.groups = true, nil
				return
			}
			g = &groupCount{}
			if ok {
				s := string(v)
				g.values = append(g.values, &s)
			} else {
				g.values = append(g.values, nil)
			}
			b.groups[string(key)] = g
		}
		g.rows += rows
	}
	if nulls > 0 {
		add(nil, false, nulls)
	}
	for k, rows := range counts {
		if rows > 0 && !b.tooMany {
			v, ok := c.vals.value(k)
			add(v, ok, rows)
		}
	}
}

// countSharedGroups counts n rows of one group column whose values mostly share their bytes
// (a parquet-go dictionary's: every row of a value points at its one copy), as countDictGroups
// does by index: rows are counted by where their bytes are, then each distinct place's value
// once. Values that share nothing cost a map entry each, about what countGroups costs.
func (b *Builder) countSharedGroups(n int, value func(i int) ([]byte, bool)) {
	type place struct {
		p *byte
		n int
	}
	type count struct {
		v    []byte
		rows int64
	}
	counts := map[place]*count{}
	var nulls int64
	for i := 0; i < n; i++ {
		v, ok := value(i)
		if !ok {
			nulls++
			continue
		}
		k := place{unsafe.SliceData(v), len(v)}
		c := counts[k]
		if c == nil {
			c = &count{v: v}
			counts[k] = c
		}
		c.rows++
	}
	cols := []textCol{{fn: nil}}
	if nulls > 0 {
		cols[0].fn = func(int) ([]byte, bool) { return nil, false }
		b.countGroupRows(cols, nulls)
	}
	for _, c := range counts {
		if b.tooMany {
			return
		}
		cols[0].fn = func(int) ([]byte, bool) { return c.v, true }
		b.countGroupRows(cols, c.rows)
	}
}

// countGroupRows counts rows rows whose group columns hold what row 0 of cols holds.
func (b *Builder) countGroupRows(cols []textCol, rows int64) {
	b.countGroups(cols, 1)
	if g := b.groups[string(groupKey(nil, cols, 0))]; g != nil {
		g.rows += rows - 1
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// addRaw adds the trigrams and tokens of one raw value to the row group's
// sets in one pass over its bytes: each token's key is hashed while the scan
// looks for its end, giving what forEachToken and tokenKey give.
func (b *Builder) addRaw(v []byte) {
	tri := b.rgTri
	var t uint32
	h, in := uint64(fnvOffset), false
	for i, c := range v {
		t = (t<<8 | uint32(c)) & 0xffffff
		if i >= 2 {
			w, m := &tri.bits[t>>6], uint64(1)<<(t&63)
			if *w&m == 0 {
				*w |= m
				tri.count++
			}
		}
		if tokenByte[c] {
			h, in = fnvByte(h, c), true
		} else if in {
			b.addTokenKey(tokenKeyOf(h))
			h, in = fnvOffset, false
		}
	}
	if in {
		b.addTokenKey(tokenKeyOf(h))
	}
}

// addTokenKey adds a token key to the row group's bloom, skipping it when the
// direct-mapped cache says the key was just added.
func (b *Builder) addTokenKey(k uint64) {
	slot := &b.tokCache[k&uint64(len(b.tokCache)-1)]
	if *slot == k {
		return
	}
	*slot = k
	b.rgTok.add(k)
}

// Row-group entry bloom flags (docs/file-format.md): what follows the flag byte.
const (
	flagNoBloom    = 0 // nothing: every probe answers maybe
	flagBloom      = 1 // a classic bloom (entries written before the split-block bloom)
	flagSplitBlock = 2 // a split-block bloom
)

// EndRowGroup closes the current row group's entry. Call it once per
// written row group, in order, including for row groups without raw text.
func (b *Builder) EndRowGroup() {
	e := b.rowGroup
	e = binary.AppendVarint(e, b.rgMin)
	e = binary.AppendVarint(e, b.rgMax)
	e = binary.AppendUvarint(e, uint64(b.rgRows))
	if b.rawCol < 0 {
		e = append(e, flagNoBloom)
	} else {
		bl := b.rgTok.bloom(b.rgTri.count)
		b.rgTri.forEach(func(t uint32) { bl.add(trigramKey(t)) })
		e = append(e, flagSplitBlock)
		e = bl.appendTo(e)
		b.rgTri.reset()
		b.rgTok.reset()
		clear(b.tokCache[:])
	}
	b.rowGroup = e
	b.nRG++
	b.rgRows = 0
}

// Finish returns the footer entries, and the names of index columns whose
// inverted index exceeded FooterMaxBytes and was left out.
func (b *Builder) Finish() (entries []Entry, skipped []string, err error) {
	if !b.tooMany && len(b.groupCols) > 0 {
		v, err := b.encodeGroups()
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, Entry{KeyGroups, v})
	}
	v, err := b.encodeBuckets()
	if err != nil {
		return nil, nil, err
	}
	entries = append(entries, Entry{KeyTimeBuckets, v})

	rg := binary.AppendUvarint(nil, uint64(b.nRG))
	rg = append(rg, b.rowGroup...)
	entries = append(entries, Entry{KeyRowGroups, base64.StdEncoding.EncodeToString(rg)})

	if b.fileTri != nil {
		bl := newBloom(b.fileTri.count)
		b.fileTri.forEach(func(t uint32) { bl.add(trigramKey(t)) })
		entries = append(entries, Entry{KeyFileTrigrams, base64.StdEncoding.EncodeToString(bl.appendTo(nil))})
	}
	for j, name := range b.idxNames {
		if b.postings[j] == nil {
			skipped = append(skipped, name)
			continue
		}
		enc := b.postings[j].Encode()
		if int64(base64.StdEncoding.EncodedLen(len(enc))) > b.cfg.FooterMaxBytes {
			skipped = append(skipped, name)
			continue
		}
		entries = append(entries, Entry{KeyInvertedPrefix + name, base64.StdEncoding.EncodeToString(enc)})
	}
	b.releaseSets()
	return entries, skipped, nil
}

// rgSets are a row group's trigram set and token key bloom (2 MiB, 1 MiB and a key buffer of
// up to 8 MiB), kept between builders: the drain makes one builder per file, and each would
// allocate them anew. A builder takes them in NewBuilder and gives them back, reset, in Finish.
type rgSets struct {
	tri *trigramSet
	tok *keyBloom
}

var rowGroupSets = sync.Pool{New: func() any { return &rgSets{tri: newTrigramSet(), tok: newKeyBloom()} }}

// releaseSets gives the row-group sets back for another builder; this one then has none, so a
// row added after Finish fails loudly rather than writing into another file's sets.
func (b *Builder) releaseSets() {
	if b.rgTok == nil {
		return
	}
	b.rgTri.reset()
	b.rgTok.reset()
	rowGroupSets.Put(&rgSets{tri: b.rgTri, tok: b.rgTok})
	b.rgTri, b.rgTok = nil, nil
}

// groupsJSON is the JSON form of the group-count entry.
type groupsJSON struct {
	Columns []string     `json:"columns"`
	Groups  []groupEntry `json:"groups"`
}

type groupEntry struct {
	Values []*string `json:"values"`
	Rows   int64     `json:"rows"`
}

func (b *Builder) encodeGroups() (string, error) {
	out := groupsJSON{Groups: make([]groupEntry, 0, len(b.groups))}
	out.Columns = b.groupNames
	keys := make([]string, 0, len(b.groups))
	for k := range b.groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g := b.groups[k]
		out.Groups = append(out.Groups, groupEntry{Values: g.values, Rows: g.rows})
	}
	v, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encoding group counts: %w", err)
	}
	return string(v), nil
}

// bucketsJSON is the JSON form of the time-bucket entry: Counts[i] rows have
// timestamps in [StartMicros + i*BucketMicros, StartMicros + (i+1)*BucketMicros).
type bucketsJSON struct {
	BucketMicros int64   `json:"bucket_us"`
	StartMicros  int64   `json:"start_us"`
	Counts       []int64 `json:"counts"`
}

func (b *Builder) encodeBuckets() (string, error) {
	out := bucketsJSON{BucketMicros: b.cfg.BucketMicros, Counts: []int64{}}
	if len(b.buckets) > 0 {
		lo, hi := int64(0), int64(0)
		first := true
		for k := range b.buckets {
			if first || k < lo {
				lo = k
			}
			if first || k > hi {
				hi = k
			}
			first = false
		}
		// Widen buckets by whole multiples until the span fits MaxBuckets.
		factor := int64(1)
		for (floorDiv(hi, factor)-floorDiv(lo, factor))+1 > MaxBuckets {
			factor *= 2
		}
		start := floorDiv(lo, factor)
		out.BucketMicros = b.cfg.BucketMicros * factor
		out.StartMicros = start * out.BucketMicros
		out.Counts = make([]int64, floorDiv(hi, factor)-start+1)
		for k, n := range b.buckets {
			out.Counts[floorDiv(k, factor)-start] += n
		}
	}
	v, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encoding time buckets: %w", err)
	}
	return string(v), nil
}
