package localwal

import "fmt"

// Reject reasons. They are short, stable snake_case codes: the drain uses
// them as a metric label and writes them into quarantine reason files, so
// renaming one is a breaking change for dashboards and operators.
const (
	// ReasonTruncated: the file ends before the Arrow end-of-stream marker
	// (a torn write, a copy cut short, a crash before seal).
	ReasonTruncated = "truncated"
	// ReasonCorrupt: bytes that are not a valid Arrow IPC stream, data that
	// fails Arrow validation, trailing bytes after the end-of-stream
	// marker, or a header that contradicts the file name.
	ReasonCorrupt = "corrupt"
	// ReasonEmpty: a zero-byte file or a well-formed stream without rows.
	ReasonEmpty = "empty"
	// ReasonBadHeader: a missing or malformed siglake.* metadata key, an
	// unknown format version or an invalid stream id.
	ReasonBadHeader = "bad_header"
	// ReasonBadSchema: no usable `timestamp` column.
	ReasonBadSchema = "bad_schema"
	// ReasonBadTableName: the table name (in the file name or the header)
	// does not match ^[a-z][a-z0-9_]{0,127}$.
	ReasonBadTableName = "bad_table_name"
	// ReasonChecksum: a version 2 segment whose bytes do not match the
	// CRC32C in its trailer (a flipped bit, a torn or mixed-up copy).
	ReasonChecksum = "checksum"
	// ReasonOversize: the file is larger than the reader's MaxFileBytes;
	// it was rejected from its size alone, without being read.
	ReasonOversize = "oversize"
	// ReasonIO: the file could not be read at all (permissions, EIO, gone).
	// Unlike the others this says nothing about the bytes, so callers
	// usually retry instead of quarantining.
	ReasonIO = "io"
)

// Reasons lists every reject reason, for pre-registering metric labels.
var Reasons = []string{
	ReasonTruncated, ReasonCorrupt, ReasonEmpty, ReasonBadHeader,
	ReasonBadSchema, ReasonBadTableName, ReasonChecksum, ReasonOversize, ReasonIO,
}

// SegmentError is the only error type the reader returns for a segment
// that cannot be used. Reason is one of the Reason* codes.
type SegmentError struct {
	Path   string
	Reason string
	Err    error
}

func (e *SegmentError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("wal segment %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("wal segment %s: %s: %v", e.Path, e.Reason, e.Err)
}

func (e *SegmentError) Unwrap() error { return e.Err }

func segErr(path, reason string, format string, args ...any) *SegmentError {
	return &SegmentError{Path: path, Reason: reason, Err: fmt.Errorf(format, args...)}
}
