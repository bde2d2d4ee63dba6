package localwal

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Schema-level Arrow metadata keys that make up the segment header.
const (
	KeyVersion     = "siglake.wal.version"
	KeyTable       = "siglake.table"
	KeyStream      = "siglake.stream"
	KeyIncarnation = "siglake.incarnation"
	KeySeq         = "siglake.seq"
	KeyCreated     = "siglake.created_unix_ms"

	// FormatVersion is the version this package writes: version 2 ends
	// with a CRC32C trailer (checksum.go).
	FormatVersion = "2"
	// FormatVersion1 is the version before the trailer; such segments, from
	// older writers or other producers, are still read (without a checksum).
	FormatVersion1 = "1"

	// TimestampColumn must exist in every segment schema.
	TimestampColumn = "timestamp"
)

// Header is the identity of a segment, stored as schema metadata.
type Header struct {
	Table       string
	Stream      string
	Incarnation uint64
	Seq         uint64
	Created     time.Time // millisecond precision
	// Version is the format version a segment was read with (1 or 2);
	// Metadata writes FormatVersion1 for 1, else FormatVersion.
	Version int
}

// Metadata renders h as the schema-level metadata a segment carries.
func (h Header) Metadata() arrow.Metadata {
	return arrow.NewMetadata(
		[]string{KeyVersion, KeyTable, KeyStream, KeyIncarnation, KeySeq, KeyCreated},
		[]string{
			h.versionKey(), h.Table, h.Stream,
			strconv.FormatUint(h.Incarnation, 10),
			strconv.FormatUint(h.Seq, 10),
			strconv.FormatInt(h.Created.UnixMilli(), 10),
		})
}

func (h Header) versionKey() string {
	if h.Version == 1 {
		return FormatVersion1
	}
	return FormatVersion
}

// headerFromMetadata parses and validates the header keys. It returns a
// reason code with the error so the reader can type it.
func headerFromMetadata(md arrow.Metadata) (Header, string, error) {
	var h Header
	get := func(key string) (string, error) {
		i := md.FindKey(key)
		if i < 0 {
			return "", fmt.Errorf("missing header key %s", key)
		}
		return md.Values()[i], nil
	}
	v, err := get(KeyVersion)
	if err != nil {
		return h, ReasonBadHeader, err
	}
	switch v {
	case FormatVersion1:
		h.Version = 1
	case FormatVersion:
		h.Version = 2
	default:
		return h, ReasonBadHeader, fmt.Errorf("unsupported %s %q (accepted: %q, %q)", KeyVersion, v, FormatVersion1, FormatVersion)
	}
	if h.Table, err = get(KeyTable); err != nil {
		return h, ReasonBadHeader, err
	}
	if !ValidTable(h.Table) {
		return h, ReasonBadTableName, fmt.Errorf("header %s %q does not match %s", KeyTable, h.Table, tableRe)
	}
	if h.Stream, err = get(KeyStream); err != nil {
		return h, ReasonBadHeader, err
	}
	if !ValidStream(h.Stream) {
		return h, ReasonBadHeader, fmt.Errorf("header %s %q does not match %s", KeyStream, h.Stream, streamRe)
	}
	for _, f := range []struct {
		key string
		dst *uint64
	}{{KeyIncarnation, &h.Incarnation}, {KeySeq, &h.Seq}} {
		s, err := get(f.key)
		if err != nil {
			return h, ReasonBadHeader, err
		}
		if *f.dst, err = strconv.ParseUint(s, 10, 64); err != nil {
			return h, ReasonBadHeader, fmt.Errorf("header %s %q is not a decimal uint64", f.key, s)
		}
	}
	s, err := get(KeyCreated)
	if err != nil {
		return h, ReasonBadHeader, err
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return h, ReasonBadHeader, fmt.Errorf("header %s %q is not a decimal int64", KeyCreated, s)
	}
	h.Created = time.UnixMilli(ms).UTC()
	return h, "", nil
}

// CheckSchema verifies the column rules every segment must satisfy: a
// column named "timestamp" of Arrow type timestamp (any unit) whose time
// zone is "UTC" or empty. Writers call it before creating a segment so
// they never produce a file the reader rejects.
func CheckSchema(s *arrow.Schema) error {
	idx := s.FieldIndices(TimestampColumn)
	switch len(idx) {
	case 0:
		return fmt.Errorf("schema has no %q column", TimestampColumn)
	case 1:
	default:
		return fmt.Errorf("schema has %d columns named %q", len(idx), TimestampColumn)
	}
	f := s.Field(idx[0])
	ts, ok := f.Type.(*arrow.TimestampType)
	if !ok {
		return fmt.Errorf("column %q has type %s, want timestamp", TimestampColumn, f.Type)
	}
	if ts.TimeZone != "" && ts.TimeZone != "UTC" {
		return fmt.Errorf("column %q has time zone %q, want \"UTC\" or none", TimestampColumn, ts.TimeZone)
	}
	return nil
}
