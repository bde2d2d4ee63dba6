package ipcmsg

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// InPlace reads IPC messages straight out of the segment's bytes:
// the metadata and the body of each message are slices of data, so an
// uncompressed record batch's buffers point into the file buffer instead of
// a copy of it. That halves what a decoded segment costs (the file buffer
// was garbage right after decoding anyway) and saves a copy of every body.
//
// It reports the end of the stream and short input exactly as Arrow's own
// stream reader does (a bare io.EOF for the end-of-stream marker, an error
// wrapping io.EOF or io.ErrUnexpectedEOF when the input runs out), so the
// rest of the decoder cannot tell the two apart. Its Offset says how far it
// has read, so the decoder can tell where the last good batch ends and
// whether bytes trail the end-of-stream marker.
type InPlace struct {
	data     []byte
	pos      int
	maxMeta  int
	refCount atomic.Int64
}

// NewInPlace reads the messages of data, refusing metadata above maxMeta bytes.
func NewInPlace(data []byte, maxMeta int) *InPlace {
	r := &InPlace{data: data, maxMeta: maxMeta}
	r.refCount.Store(1)
	return r
}

// Offset is the number of bytes read so far: where the last message read ends.
func (r *InPlace) Offset() int64 { return int64(r.pos) }
func (r *InPlace) Retain()       { r.refCount.Add(1) }
func (r *InPlace) Release()      { r.refCount.Add(-1) }

// take returns the next n bytes. Running out before n is ErrUnexpectedEOF,
// or EOF when nothing at all is left and eofOK says that is a clean place
// to stop (Arrow's reader makes the same distinction).
func (r *InPlace) take(n int, eofOK bool) ([]byte, error) {
	left := len(r.data) - r.pos
	if left < n {
		r.pos = len(r.data)
		if left == 0 && eofOK {
			return nil, io.EOF
		}
		return nil, io.ErrUnexpectedEOF
	}
	b := r.data[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return b, nil
}

func (r *InPlace) Message() (*ipc.Message, error) {
	b, err := r.take(4, true)
	if err != nil {
		return nil, fmt.Errorf("arrow/ipc: could not read continuation indicator: %w", err)
	}
	msgLen := int32(binary.LittleEndian.Uint32(b))
	switch uint32(msgLen) {
	case 0:
		return nil, io.EOF // the end-of-stream marker
	case 0xFFFFFFFF: // continuation token, then the length
		if b, err = r.take(4, false); err != nil {
			return nil, fmt.Errorf("arrow/ipc: could not read message length: %w", err)
		}
		if msgLen = int32(binary.LittleEndian.Uint32(b)); msgLen == 0 {
			return nil, io.EOF
		}
	}
	// Without a continuation token the word is the length (IPC before 0.15).
	if msgLen < 4 {
		return nil, fmt.Errorf("arrow/ipc: invalid message metadata length %d", msgLen)
	}
	if int(msgLen) > r.maxMeta {
		return nil, fmt.Errorf("arrow/ipc: message metadata length %d exceeds limit %d", msgLen, r.maxMeta)
	}
	meta, err := r.take(int(msgLen), false)
	if err != nil {
		return nil, fmt.Errorf("arrow/ipc: could not read message metadata: %w", err)
	}
	// CheckStream has checked this metadata before Arrow reads it; a message
	// it stopped short of (cut input) ends in an error here or below.
	bodyLen, err := CheckMessage(meta)
	if err != nil {
		return nil, fmt.Errorf("arrow/ipc: invalid message metadata: %w", err)
	}
	if bodyLen < 0 || bodyLen > int64(len(r.data)) {
		if bodyLen >= 0 {
			r.pos = len(r.data)
			return nil, fmt.Errorf("arrow/ipc: could not read message body: %w", io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("arrow/ipc: invalid message body length %d", bodyLen)
	}
	body, err := r.take(int(bodyLen), false)
	if err != nil {
		return nil, fmt.Errorf("arrow/ipc: could not read message body: %w", err)
	}
	// Arrow casts buffers to typed slices in place. The writer pads every
	// message to 8 bytes, so a body that is not 8-aligned comes from a file
	// this package did not write: copy it rather than hand out misaligned
	// values.
	if len(body) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(body)))%8 != 0 {
		body = append(make([]byte, 0, len(body)), body...)
	}
	return ipc.NewMessage(memory.NewBufferBytes(meta), memory.NewBufferBytes(body)), nil
}
