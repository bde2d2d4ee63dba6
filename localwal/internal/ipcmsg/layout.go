package ipcmsg

import (
	"encoding/binary"
	"io"
)

// Buffer is one buffer of a batch message's body: where it starts in the body and its length.
type Buffer struct{ Offset, Length int64 }

// Layout is what a record or dictionary batch message's metadata says about its body.
type Layout struct {
	Buffers []Buffer // of the record batch (of a dictionary batch, its data)
	// Compressed: every buffer is compressed and starts with its uncompressed length.
	Compressed bool
	// BodyLengthAt is where the message's bodyLength lies in the metadata, -1 when absent.
	BodyLengthAt int
}

// Describe returns the layout of a record or dictionary batch; ok is false for any other
// message or a vector it cannot walk. meta has passed CheckMessage.
func Describe(meta []byte) (l Layout, ok bool) {
	c := &fbChecker{buf: meta}
	msg, err := c.table(int(binary.LittleEndian.Uint32(meta)), 0)
	if err != nil {
		return l, false
	}
	rb, ok, err := c.tableField(msg, 2, 1)
	if err != nil || !ok {
		return l, false
	}
	switch c.u8(msg, 1) {
	case fbHeaderRecordBatch:
	case fbHeaderDictionaryBatch:
		if rb, ok, err = c.tableField(rb, 1, 2); err != nil || !ok {
			return l, false
		}
	default:
		return l, false
	}
	_, l.Compressed, err = c.tableField(rb, 3, 3)
	if err != nil {
		return l, false
	}
	p, n, err := c.vector(rb, 2, 16)
	if err != nil {
		return l, false
	}
	l.Buffers = make([]Buffer, n)
	for i := range l.Buffers {
		l.Buffers[i] = Buffer{int64(binary.LittleEndian.Uint64(meta[p+16*i:])), int64(binary.LittleEndian.Uint64(meta[p+16*i+8:]))}
	}
	l.BodyLengthAt = c.field(msg, 3, 8)
	return l, true
}

// DecodedSize estimates what decoding the size bytes of r allocates beyond them, from the IPC
// metadata alone (it reads the metadata, at most maxMeta bytes a message, and the 8-byte length
// prefix of each compressed buffer, not the bodies). An uncompressed batch decodes in place and
// adds nothing; a compressed one adds the uncompressed length of each buffer. Bytes it cannot
// walk (damaged: the reader will reject them) end the estimate where it stops making sense.
func DecodedSize(r io.ReaderAt, size int64, maxMeta int) int64 {
	var total int64
	var word [8]byte
	pos := int64(0)
	for pos+4 <= size {
		if _, err := r.ReadAt(word[:4], pos); err != nil {
			return total
		}
		n := binary.LittleEndian.Uint32(word[:4])
		pos += 4
		if n == 0xFFFFFFFF {
			if pos+4 > size {
				break
			}
			if _, err := r.ReadAt(word[:4], pos); err != nil {
				break
			}
			n = binary.LittleEndian.Uint32(word[:4])
			pos += 4
		}
		if n == 0 || int32(n) < 0 || int(n) > maxMeta || int64(n) > size-pos {
			break
		}
		meta := make([]byte, n)
		if _, err := r.ReadAt(meta, pos); err != nil {
			break
		}
		bodyLen, err := CheckMessage(meta)
		if err != nil {
			break
		}
		body := pos + int64(n)
		if bodyLen < 0 || bodyLen > size-body {
			break
		}
		total += compressedSize(r, meta, body, bodyLen)
		pos = body + bodyLen
	}
	return total
}

// compressedSize is what the compressed buffers of the batch whose metadata is meta and whose
// body of bodyLen bytes starts at body decompress to; 0 for an uncompressed batch.
func compressedSize(r io.ReaderAt, meta []byte, body, bodyLen int64) int64 {
	l, ok := Describe(meta)
	if !ok || !l.Compressed {
		return 0 // uncompressed: decoded in place
	}
	var total int64
	var word [8]byte
	for _, b := range l.Buffers {
		if b.Length < 8 || b.Offset < 0 || b.Offset > bodyLen-8 {
			continue
		}
		if _, err := r.ReadAt(word[:], body+b.Offset); err != nil {
			continue
		}
		// The prefix is the uncompressed length, or -1 for a buffer stored as is.
		if ulen := int64(binary.LittleEndian.Uint64(word[:])); ulen >= 0 && ulen <= 1<<40 {
			total += ulen
		} else {
			total += b.Length - 8
		}
	}
	return total
}
