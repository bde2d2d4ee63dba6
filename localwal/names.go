package localwal

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

const (
	// SealedSuffix marks a complete segment the drain may read.
	SealedSuffix = ".wal"
	// OpenSuffix marks a segment a writer is still appending to.
	OpenSuffix = ".open"
	// StreamFile holds the stream identity and the next sequence number.
	StreamFile = "STREAM"
	// QuarantineDir is the subdirectory rejected segments are moved into.
	QuarantineDir = "quarantine"
)

// What table names and stream ids must match.
const (
	TablePattern  = `^[a-z][a-z0-9_]{0,127}$`
	StreamPattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`
)

var (
	tableRe  = regexp.MustCompile(TablePattern)
	streamRe = regexp.MustCompile(StreamPattern)
)

// ValidTable reports whether name is an acceptable table name.
func ValidTable(name string) bool { return tableRe.MatchString(name) }

// ValidStream reports whether id is an acceptable stream id.
func ValidStream(id string) bool { return streamRe.MatchString(id) }

// segmentStem is "<table>.<incarnation 20 digits>.<seq 20 digits>". Fixed
// widths make lexical order of names equal numeric order within a table.
func segmentStem(table string, incarnation, seq uint64) string {
	return fmt.Sprintf("%s.%020d.%020d", table, incarnation, seq)
}

// SegmentName returns the sealed file name of a segment.
func SegmentName(table string, incarnation, seq uint64) string {
	return segmentStem(table, incarnation, seq) + SealedSuffix
}

// nameParts is what a segment file name says about its content.
type nameParts struct {
	table       string // not yet checked against tableRe
	incarnation uint64
	seq         uint64
	suffix      string // SealedSuffix or OpenSuffix
}

// parseName splits a segment file name. It accepts any table part without
// dots so that a segment with a bad table name is still listed and can be
// quarantined with reason bad_table_name instead of lingering forever.
func parseName(name string) (nameParts, bool) {
	var p nameParts
	switch {
	case strings.HasSuffix(name, SealedSuffix):
		p.suffix = SealedSuffix
	case strings.HasSuffix(name, OpenSuffix):
		p.suffix = OpenSuffix
	default:
		return p, false
	}
	parts := strings.Split(strings.TrimSuffix(name, p.suffix), ".")
	if len(parts) != 3 || parts[0] == "" || strings.HasPrefix(name, ".") {
		return p, false
	}
	var ok bool
	p.table = parts[0]
	if p.incarnation, ok = parseFixed20(parts[1]); !ok {
		return p, false
	}
	if p.seq, ok = parseFixed20(parts[2]); !ok {
		return p, false
	}
	return p, true
}

func parseFixed20(s string) (uint64, bool) {
	if len(s) != 20 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
