package ipcmsg

import (
	"encoding/binary"
	"fmt"
)

// Arrow-go decodes IPC metadata without checking it first: it allocates
// slices as long as a flatbuffer vector claims to be and follows child
// offsets without a depth limit. A few flipped bytes can therefore ask for
// hundreds of GiB (a fatal, unrecoverable out-of-memory) or recurse
// forever. CheckStream walks every message's flatbuffer metadata before
// Arrow sees it and rejects any vector that does not fit in its buffer,
// nesting deeper than maxNesting, and table graphs that revisit tables more
// often than the buffer could hold distinct ones (shared subtrees would
// make Arrow build exponentially many fields).
//
// It knows only the parts of Arrow's Message.fbs/Schema.fbs that carry
// vectors and strings; scalar fields need no check.

const maxNesting = 64

// Flatbuffer union tags used below (Arrow format/Message.fbs, Schema.fbs).
const (
	fbHeaderSchema          = 1
	fbHeaderDictionaryBatch = 2
	fbHeaderRecordBatch     = 3
	fbTypeTimestamp         = 10
	fbTypeUnion             = 14
)

// CheckStream checks the metadata of every complete message in data. It
// stops quietly where the framing ends or is cut short: the Arrow reader
// reports those cases (end of stream, truncation) itself. On failure it
// also returns the offset where the bad message starts.
func CheckStream(data []byte) (int, error) {
	pos := 0
	for i := 0; ; i++ {
		start := pos
		if len(data)-pos < 4 {
			return 0, nil
		}
		n := binary.LittleEndian.Uint32(data[pos:])
		pos += 4
		if n == 0xFFFFFFFF {
			if len(data)-pos < 4 {
				return 0, nil
			}
			n = binary.LittleEndian.Uint32(data[pos:])
			pos += 4
		}
		if n == 0 || int32(n) < 0 {
			return 0, nil // end of stream, or a length Arrow rejects itself
		}
		if uint64(len(data)-pos) < uint64(n) {
			return 0, nil
		}
		meta := data[pos : pos+int(n)]
		bodyLen, err := CheckMessage(meta)
		if err != nil {
			return start, fmt.Errorf("message %d at offset %d: %w", i, start, err)
		}
		if bodyLen < 0 || uint64(bodyLen) > uint64(len(data)-pos-int(n)) {
			return 0, nil
		}
		pos += int(n) + int(bodyLen)
	}
}

type fbChecker struct {
	buf    []byte
	visits int
}

// CheckMessage validates one Message table and returns its bodyLength.
func CheckMessage(meta []byte) (int64, error) {
	c := &fbChecker{buf: meta}
	if len(meta) < 4 {
		return 0, fmt.Errorf("metadata of %d bytes", len(meta))
	}
	root := int(binary.LittleEndian.Uint32(meta))
	msg, err := c.table(root, 0)
	if err != nil {
		return 0, err
	}
	if err := c.keyValues(msg, 4, 1); err != nil {
		return 0, err
	}
	hdr, ok, err := c.tableField(msg, 2, 1)
	if err != nil || !ok {
		return 0, err
	}
	switch c.u8(msg, 1) {
	case fbHeaderSchema:
		err = c.schema(hdr, 2)
	case fbHeaderRecordBatch:
		err = c.recordBatch(hdr, 2)
	case fbHeaderDictionaryBatch:
		var rb fbTable
		if rb, ok, err = c.tableField(hdr, 1, 2); err == nil && ok {
			err = c.recordBatch(rb, 3)
		}
	}
	if err != nil {
		return 0, err
	}
	return c.i64(msg, 3), nil
}

// fbTable is a table position and its vtable.
type fbTable struct{ pos, vt, vtLen int }

func (c *fbChecker) in(pos, n int) bool { return pos >= 0 && n >= 0 && pos <= len(c.buf)-n }

func (c *fbChecker) table(pos, depth int) (fbTable, error) {
	if depth > maxNesting {
		return fbTable{}, fmt.Errorf("metadata nests deeper than %d", maxNesting)
	}
	c.visits++
	if c.visits > len(c.buf)/4 {
		return fbTable{}, fmt.Errorf("metadata refers to more tables than %d bytes can hold", len(c.buf))
	}
	if !c.in(pos, 4) {
		return fbTable{}, fmt.Errorf("table offset %d out of range", pos)
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(c.buf[pos:])))
	if !c.in(vt, 4) {
		return fbTable{}, fmt.Errorf("vtable offset %d out of range", vt)
	}
	vtLen := int(binary.LittleEndian.Uint16(c.buf[vt:]))
	if vtLen < 4 || vtLen%2 != 0 || !c.in(vt, vtLen) {
		return fbTable{}, fmt.Errorf("bad vtable of %d bytes at %d", vtLen, vt)
	}
	return fbTable{pos: pos, vt: vt, vtLen: vtLen}, nil
}

// field returns the absolute position of slot's value, or -1 if absent.
func (c *fbChecker) field(t fbTable, slot, size int) int {
	o := 4 + 2*slot
	if o+2 > t.vtLen {
		return -1
	}
	off := int(binary.LittleEndian.Uint16(c.buf[t.vt+o:]))
	if off == 0 || !c.in(t.pos+off, size) {
		return -1
	}
	return t.pos + off
}

func (c *fbChecker) u8(t fbTable, slot int) byte {
	if p := c.field(t, slot, 1); p >= 0 {
		return c.buf[p]
	}
	return 0
}

func (c *fbChecker) i64(t fbTable, slot int) int64 {
	if p := c.field(t, slot, 8); p >= 0 {
		return int64(binary.LittleEndian.Uint64(c.buf[p:]))
	}
	return 0
}

// deref follows the uoffset stored in slot.
func (c *fbChecker) deref(t fbTable, slot int) (int, bool, error) {
	p := c.field(t, slot, 4)
	if p < 0 {
		return 0, false, nil
	}
	target := p + int(binary.LittleEndian.Uint32(c.buf[p:]))
	if !c.in(target, 4) {
		return 0, false, fmt.Errorf("offset in slot %d points outside the metadata", slot)
	}
	return target, true, nil
}

func (c *fbChecker) tableField(t fbTable, slot, depth int) (fbTable, bool, error) {
	p, ok, err := c.deref(t, slot)
	if err != nil || !ok {
		return fbTable{}, false, err
	}
	sub, err := c.table(p, depth)
	return sub, err == nil, err
}

// vector checks that slot's vector of n elements of elem bytes fits, and
// returns the position of its first element and n.
func (c *fbChecker) vector(t fbTable, slot, elem int) (int, int, error) {
	p, ok, err := c.deref(t, slot)
	if err != nil || !ok {
		return 0, 0, err
	}
	n := binary.LittleEndian.Uint32(c.buf[p:])
	if uint64(n)*uint64(elem) > uint64(len(c.buf)-p-4) {
		return 0, 0, fmt.Errorf("vector in slot %d claims %d elements, more than the metadata holds", slot, n)
	}
	return p + 4, int(n), nil
}

// tables visits each table of a vector of tables.
func (c *fbChecker) tables(t fbTable, slot, depth int, visit func(fbTable) error) error {
	start, n, err := c.vector(t, slot, 4)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		p := start + 4*i
		sub, err := c.table(p+int(binary.LittleEndian.Uint32(c.buf[p:])), depth)
		if err != nil {
			return err
		}
		if err := visit(sub); err != nil {
			return err
		}
	}
	return nil
}

func (c *fbChecker) keyValues(t fbTable, slot, depth int) error {
	return c.tables(t, slot, depth, func(kv fbTable) error {
		for s := 0; s < 2; s++ {
			if _, _, err := c.vector(kv, s, 1); err != nil {
				return err
			}
		}
		return nil
	})
}

func (c *fbChecker) schema(s fbTable, depth int) error {
	if err := c.keyValues(s, 2, depth+1); err != nil {
		return err
	}
	if _, _, err := c.vector(s, 3, 8); err != nil { // features
		return err
	}
	return c.tables(s, 1, depth+1, func(f fbTable) error { return c.fieldTable(f, depth+1) })
}

func (c *fbChecker) fieldTable(f fbTable, depth int) error {
	if _, _, err := c.vector(f, 0, 1); err != nil { // name
		return err
	}
	if typ, ok, err := c.tableField(f, 3, depth+1); err != nil {
		return err
	} else if ok {
		switch c.u8(f, 2) {
		case fbTypeTimestamp: // timezone string
			_, _, err = c.vector(typ, 1, 1)
		case fbTypeUnion: // typeIds
			_, _, err = c.vector(typ, 1, 4)
		}
		if err != nil {
			return err
		}
	}
	if dict, ok, err := c.tableField(f, 4, depth+1); err != nil {
		return err
	} else if ok {
		if _, _, err := c.tableField(dict, 1, depth+2); err != nil { // indexType
			return err
		}
	}
	if err := c.keyValues(f, 6, depth+1); err != nil {
		return err
	}
	return c.tables(f, 5, depth+1, func(ch fbTable) error { return c.fieldTable(ch, depth+1) })
}

func (c *fbChecker) recordBatch(rb fbTable, depth int) error {
	for _, v := range []struct{ slot, elem int }{{1, 16}, {2, 16}, {4, 8}} {
		if _, _, err := c.vector(rb, v.slot, v.elem); err != nil {
			return err
		}
	}
	_, _, err := c.tableField(rb, 3, depth+1) // compression
	return err
}
