package localwal

import (
	"encoding/binary"
	"io"
	"os"
)

// DecodedSize estimates what decoding the segment at path allocates beyond
// its file bytes, from the IPC metadata alone (it reads the metadata and
// the 8-byte length prefix of each compressed buffer, not the bodies).
// An uncompressed batch decodes in place and adds nothing; a compressed
// one adds the uncompressed length of each buffer. A file it cannot walk
// (damaged: the reader will quarantine it) ends the estimate where it
// stops making sense; callers add their own margin.
func DecodedSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return decodedSize(f, fi.Size())
}

func decodedSize(r io.ReaderAt, size int64) (int64, error) {
	var total int64
	var word [8]byte
	pos := int64(0)
	for pos+4 <= size {
		if _, err := r.ReadAt(word[:4], pos); err != nil {
			return total, nil
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
		if n == 0 || int32(n) < 0 || int(n) > MaxMetadataBytes || int64(n) > size-pos {
			break
		}
		meta := make([]byte, n)
		if _, err := r.ReadAt(meta, pos); err != nil {
			break
		}
		bodyLen, err := checkMessage(meta)
		if err != nil {
			break
		}
		body := pos + int64(n)
		if bodyLen < 0 || bodyLen > size-body {
			break
		}
		for _, b := range compressedBuffers(meta) {
			if b.length < 8 || b.offset < 0 || b.offset > bodyLen-8 {
				continue
			}
			if _, err := r.ReadAt(word[:], body+b.offset); err != nil {
				continue
			}
			// The prefix is the uncompressed length, or -1 for a buffer stored as is.
			if ulen := int64(binary.LittleEndian.Uint64(word[:])); ulen >= 0 && ulen <= 1<<40 {
				total += ulen
			} else {
				total += b.length - 8
			}
		}
		pos = body + bodyLen
	}
	return total, nil
}

type ipcBuffer struct{ offset, length int64 }

// compressedBuffers returns the buffers of a record or dictionary batch
// whose body is compressed, nil otherwise. meta has passed checkMessage.
func compressedBuffers(meta []byte) []ipcBuffer {
	c := &fbChecker{buf: meta}
	msg, err := c.table(int(binary.LittleEndian.Uint32(meta)), 0)
	if err != nil {
		return nil
	}
	rb, ok, err := c.tableField(msg, 2, 1)
	if err != nil || !ok {
		return nil
	}
	switch c.u8(msg, 1) {
	case fbHeaderRecordBatch:
	case fbHeaderDictionaryBatch:
		if rb, ok, err = c.tableField(rb, 1, 2); err != nil || !ok {
			return nil
		}
	default:
		return nil
	}
	if _, ok, err := c.tableField(rb, 3, 3); err != nil || !ok {
		return nil // uncompressed: decoded in place
	}
	p, n, err := c.vector(rb, 2, 16)
	if err != nil {
		return nil
	}
	out := make([]ipcBuffer, n)
	for i := range out {
		out[i] = ipcBuffer{int64(binary.LittleEndian.Uint64(meta[p+16*i:])), int64(binary.LittleEndian.Uint64(meta[p+16*i+8:]))}
	}
	return out
}
