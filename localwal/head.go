package localwal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal/internal/ipcmsg"
)

// ReadHead reads only the first message of a segment, its schema, from r (the content of the file
// called name): the header and the columns, checked as ReadAll checks them, without decoding a
// record batch. The WAL buffer uses it to learn a segment's stream and columns before it answers;
// the batches may still be bad, which only ReadAll tells. Every failure is a *SegmentError.
func ReadHead(name string, r io.Reader) (Header, *arrow.Schema, error) {
	np, serr := parseFileName(name)
	if serr != nil {
		return Header{}, nil, serr
	}
	// The framing: an optional 0xFFFFFFFF continuation marker, then the metadata length.
	var prefix [8]byte
	n, err := io.ReadFull(r, prefix[:4])
	switch {
	case n == 0 && err == io.EOF:
		return Header{}, nil, segErr(name, ReasonEmpty, "zero-byte file")
	case err != nil:
		return Header{}, nil, headIOErr(name, err)
	}
	framing := 4
	size := binary.LittleEndian.Uint32(prefix[:4])
	if size == 0xFFFFFFFF {
		if _, err := io.ReadFull(r, prefix[4:8]); err != nil {
			return Header{}, nil, headIOErr(name, err)
		}
		framing = 8
		size = binary.LittleEndian.Uint32(prefix[4:8])
	}
	if size == 0 || size > MaxMetadataBytes {
		return Header{}, nil, segErr(name, ReasonCorrupt, "schema message metadata of %d bytes (at most %d)", size, MaxMetadataBytes)
	}
	msg := make([]byte, framing+int(size))
	copy(msg, prefix[:framing])
	if _, err := io.ReadFull(r, msg[framing:]); err != nil {
		return Header{}, nil, headIOErr(name, err)
	}
	bodyLen, err := ipcmsg.CheckMessage(msg[framing:])
	if err != nil {
		return Header{}, nil, segErr(name, ReasonCorrupt, "checking IPC metadata: message 0 at offset 0: %w", err)
	}
	if bodyLen != 0 {
		// A schema message has no body; Arrow would allocate whatever this one declares.
		return Header{}, nil, segErr(name, ReasonCorrupt, "the first message declares a body of %d bytes; a schema message has none", bodyLen)
	}
	// ipc.NewReader reads the schema message when it is created and nothing else; the budget
	// is a second guard on what it may allocate.
	budget := ipcmsg.NewBudget(memory.DefaultAllocator, 1<<20)
	defer budget.Disarm()
	rd, err := ipc.NewReader(bytes.NewReader(msg), ipc.WithMetadataSizeLimit(MaxMetadataBytes), ipc.WithAllocator(budget))
	if err != nil {
		return Header{}, nil, segErr(name, ReasonCorrupt, "reading schema: %w", err)
	}
	schema := rd.Schema()
	rd.Release()
	// No trailer is known from the head: the version is checked against it by ReadAll.
	hdr, serr := checkHeader(name, schema, np, false)
	if serr != nil {
		return Header{}, nil, serr
	}
	return hdr, schema, nil
}

func headIOErr(name string, err error) *SegmentError {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return segErr(name, ReasonTruncated, "the file ends inside its schema message")
	}
	return &SegmentError{Path: name, Reason: ReasonIO, Err: fmt.Errorf("reading segment: %w", err)}
}

// ParseSegmentName splits a sealed segment's file name (no directory) into its table,
// incarnation and seq; ok=false for any other name.
func ParseSegmentName(name string) (table string, incarnation, seq uint64, ok bool) {
	p, ok := parseName(name)
	if !ok || p.suffix != SealedSuffix {
		return "", 0, 0, false
	}
	return p.table, p.incarnation, p.seq, true
}
