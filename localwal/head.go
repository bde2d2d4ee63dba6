package localwal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"

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
	np, ok := parseName(filepath.Base(name))
	if !ok {
		return Header{}, nil, segErr(name, ReasonCorrupt, "file name is not <table>.<incarnation>.<seq>%s", SealedSuffix)
	}
	if !ValidTable(np.table) {
		return Header{}, nil, segErr(name, ReasonBadTableName, "table %q in file name does not match %s", np.table, tableRe)
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
	hdr, reason, err := headerFromMetadata(schema.Metadata())
	if err != nil {
		return Header{}, nil, &SegmentError{Path: name, Reason: reason, Err: err}
	}
	switch {
	case hdr.Table != np.table:
		return Header{}, nil, segErr(name, ReasonCorrupt, "header table %q does not match file name table %q", hdr.Table, np.table)
	case hdr.Incarnation != np.incarnation:
		return Header{}, nil, segErr(name, ReasonCorrupt, "header incarnation %d does not match file name incarnation %d", hdr.Incarnation, np.incarnation)
	case hdr.Seq != np.seq:
		return Header{}, nil, segErr(name, ReasonCorrupt, "header seq %d does not match file name seq %d", hdr.Seq, np.seq)
	}
	if err := CheckSchema(schema); err != nil {
		return Header{}, nil, &SegmentError{Path: name, Reason: ReasonBadSchema, Err: err}
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
