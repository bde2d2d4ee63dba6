// Package commit is group commit (docs/design/group-commit.md). Its pure core takes messages
// and times and does no I/O: the messages a pod and a table's committer exchange
// (docs/format/group-commit-messages.md), the committer's bounded per-table queue with its
// receive rules and backpressure, Select, which picks the queued requests one group commit takes,
// and the watermark. Around it, thin loops that take their clock, transport, membership and lake
// as arguments: the Committer (one loop per owned table, lake.CommitGroup), the pod's Client
// (drain/handoff.GroupCommitter) and LocalTransport (tests, in-process pods, self-sends).
package commit

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/peermsg/jsonmsg"
)

// The first byte of every message names its kind; the gossip transport dispatches on it.
const (
	KindRequest byte = 'G' // pod -> committer: a group commit request or a heartbeat
	KindAnswer  byte = 'A' // committer -> pod: the answer to one request
)

// Version is the only encoding version written and read. A reader takes the fields it knows, so
// a field added later needs no new version; a change of meaning does.
const Version = 1

// MaxMessageBytes bounds a request's encoding. A batch above it is not handed off (Encode returns
// ErrTooLarge and the pod commits directly); memberlist itself would carry up to 20 MiB, but one
// request must not hold a committer's memory hostage.
const MaxMessageBytes = 1 << 20

// ErrTooLarge is the error of encoding or decoding a request above MaxMessageBytes.
var ErrTooLarge = errors.New("group commit request above 1 MiB")

// Answer kinds.
const (
	KindAck      = "ack"       // queued; wait for done
	KindBusy     = "busy"      // queue full: resend after SlowMs
	KindNotOwner = "not_owner" // the receiver does not own the table: ask Owner
	KindDone     = "done"      // final: Outcome says what became of the request
)

// Outcomes of a done answer.
const (
	OutcomeCommitted        = "committed"         // in snapshot SnapshotID; Prev is the mark it replaced
	OutcomeAlreadyCommitted = "already_committed" // the mark covered the range already
	OutcomeMarkAhead        = "mark_ahead"        // the mark is inside the range: another writer has the stream
	OutcomeExpired          = "expired"           // too old to commit safely: commit directly
	OutcomeRefused          = "refused"           // not accepted (Error says why): commit directly
	OutcomeFailed           = "failed"            // attempts exhausted; MaybeCommitted: re-read the mark
)

// Request is one pod's batch handed to the table's committer: files written, not yet committed.
// A request with neither First nor Last is a heartbeat (no files; watermark inputs only).
type Request struct {
	V       int    `json:"v"`
	ID      string `json:"id"`    // 128 random bits, hex; the same on every resend of one batch
	From    string `json:"from"`  // sender's member name: answers go there
	Catalog string `json:"cat"`   // catalog identity; a committer of another catalog refuses
	Table   string `json:"table"` // table in the namespace
	Stream  string `json:"stream"`
	First   string `json:"first"` // segment range "incarnation:seq", First <= Last
	Last    string `json:"last"`
	Epoch   uint64 `json:"epoch"` // the pod's claim epoch: logs only

	Format   int `json:"fmt"`    // table format version the files were encoded for
	SchemaID int `json:"schema"` // schema and partition spec ids the files were written with
	SpecID   int `json:"spec"`
	// Files are the data files in iceberg-go's cross-process encoding (codec.EncodeDataFile): every
	// manifest stat, decoded by the committer with the schema and spec of those ids.
	Files    [][]byte `json:"files"`
	Rows     int64    `json:"rows"`
	Bytes    int64    `json:"bytes"`
	Segments int      `json:"segs"`

	// More: the pod has another batch of this table due right after this one (it sends one at a
	// time), so the committer does not hold this one for the max wait.
	More bool `json:"more,omitempty"`

	WrittenMs int64 `json:"written_ms"` // pod wall clock when the files were complete: expiry
	ScanMs    int64 `json:"scan_ms"`    // watermark inputs
	PendingMs int64 `json:"pending_ms"`
	EveryMs   int64 `json:"every_ms"` // the pod's heartbeat period
}

// Heartbeat reports whether r carries no batch.
func (r Request) Heartbeat() bool { return r.First == "" && r.Last == "" }

// Answer is the committer's reply to one request, sent to the request's From.
type Answer struct {
	V              int    `json:"v"`
	ID             string `json:"id"`
	Table          string `json:"table"`
	Stream         string `json:"stream"`
	Kind           string `json:"kind"`
	Outcome        string `json:"outcome,omitempty"`
	MaybeCommitted bool   `json:"maybe,omitempty"`       // failed: some attempt's outcome is unknown
	Prev           string `json:"prev,omitempty"`        // committed: the mark replaced, empty if none
	SnapshotID     int64  `json:"snapshot_id,omitempty"` // committed
	Owner          string `json:"owner,omitempty"`       // not_owner: the receiver's view of the owner
	Queue          int    `json:"queue,omitempty"`       // ack: group commits of the table ahead of this one (files ahead / max files)
	SlowMs         int64  `json:"slow_ms,omitempty"`     // ack, busy: the table's batch-age floor
	WaitMs         int64  `json:"wait_ms,omitempty"`     // ack: the committer's --group-commit-max-wait
	IntervalMs     int64  `json:"interval_ms,omitempty"` // ack: the committer's --group-commit-interval
	Error          string `json:"error,omitempty"`       // refused, failed: why (never a row value)
}

// FieldError is why a message was not accepted: the field and what it accepts. Field is a JSON
// name, or "kind" (the first byte), "size" or "json" (the message as a whole); Message is
// "request" or "answer".
type FieldError = jsonmsg.FieldError

// The framing of each message. Answers are the committer's own and have no bound, as before
// requests had one.
var (
	requestWire = jsonmsg.Protocol{Name: "group commit", MaxBytes: MaxMessageBytes, ErrTooLarge: ErrTooLarge}
	answerWire  = jsonmsg.Protocol{Name: "group commit"}
)

// Encode returns r as a message, refusing what a committer would refuse, and ErrTooLarge above
// MaxMessageBytes (the pod then commits directly).
func (r Request) Encode() ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	return requestWire.Encode(KindRequest, "request", r)
}

// DecodeRequest reads and validates a request message.
func DecodeRequest(msg []byte) (Request, error) {
	var r Request
	if err := requestWire.Decode(msg, KindRequest, "request", &r); err != nil {
		return Request{}, err
	}
	if err := r.validate(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// Encode returns a as a message.
func (a Answer) Encode() ([]byte, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	return answerWire.Encode(KindAnswer, "answer", a)
}

// DecodeAnswer reads and validates an answer message.
func DecodeAnswer(msg []byte) (Answer, error) {
	var a Answer
	if err := answerWire.Decode(msg, KindAnswer, "answer", &a); err != nil {
		return Answer{}, err
	}
	if err := a.validate(); err != nil {
		return Answer{}, err
	}
	return a, nil
}

var idRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Bounds of the free-form strings.
const (
	maxNameBytes  = 255    // member names
	maxCatalogLen = 128    // catalog identities (24 hex today)
	maxWaitMs     = 60_000 // an ack's wait_ms a pod honours: the longest --group-commit-max-wait the option takes
	maxIntervalMs = 60_000 // an ack's interval_ms a pod honours: the longest --group-commit-interval
)

// validate holds r to the format's rules; the first broken rule is the error.
func (r Request) validate() error {
	bad := requestWire.Bad("request")
	if err := checkHead(bad, r.V, r.ID); err != nil {
		return err
	}
	switch {
	case r.From == "" || len(r.From) > maxNameBytes:
		return bad("from", quote(r.From), fmt.Sprintf("a member name of 1 to %d bytes", maxNameBytes))
	case r.Catalog == "" || len(r.Catalog) > maxCatalogLen:
		return bad("cat", quote(r.Catalog), fmt.Sprintf("a catalog identity of 1 to %d bytes", maxCatalogLen))
	case !localwal.ValidTable(r.Table):
		return bad("table", quote(r.Table), "a table name matching "+localwal.TablePattern)
	case !localwal.ValidStream(r.Stream):
		return bad("stream", quote(r.Stream), "a stream id matching "+localwal.StreamPattern)
	case r.ScanMs < 0 || r.PendingMs < 0 || r.EveryMs < 0:
		return bad("scan_ms", "a negative time", "scan_ms, pending_ms and every_ms >= 0")
	}
	if r.Heartbeat() {
		if len(r.Files) > 0 {
			return bad("files", fmt.Sprintf("%d files in a heartbeat", len(r.Files)), "none without first and last")
		}
		return nil
	}
	return r.validateBatch(bad)
}

// validateBatch holds a request that carries a batch to the rules of its range and files.
func (r Request) validateBatch(bad func(field, problem, want string) error) error {
	first, err := marks.ParseMark(r.First)
	if err != nil {
		return bad("first", quote(r.First), `"incarnation:seq", two unsigned decimal integers`)
	}
	last, err := marks.ParseMark(r.Last)
	if err != nil {
		return bad("last", quote(r.Last), `"incarnation:seq", two unsigned decimal integers`)
	}
	if last.Less(first) {
		return bad("last", fmt.Sprintf("%s before first %s", r.Last, r.First), "last at or after first")
	}
	switch {
	case len(r.Files) == 0:
		return bad("files", "none", "at least one data file")
	case r.Format < 1 || r.Format > 3:
		return bad("fmt", strconv.Itoa(r.Format), "table format version 1, 2 or 3")
	case r.SchemaID < 0 || r.SpecID < 0:
		return bad("schema", fmt.Sprintf("schema %d spec %d", r.SchemaID, r.SpecID), "ids >= 0")
	case r.Rows < 0 || r.Bytes < 0 || r.Segments < 1:
		return bad("segs", fmt.Sprintf("rows %d bytes %d segs %d", r.Rows, r.Bytes, r.Segments), "rows, bytes >= 0 and segs >= 1")
	case r.WrittenMs <= 0:
		return bad("written_ms", strconv.FormatInt(r.WrittenMs, 10), "unix milliseconds > 0")
	}
	for i, f := range r.Files {
		if len(f) == 0 {
			return bad("files", fmt.Sprintf("file %d is empty", i), "encoded data files")
		}
	}
	return nil
}

// checkHead holds the fields every message starts with to their rules.
func checkHead(bad func(field, problem, want string) error, v int, id string) error {
	if v != Version {
		return bad("v", strconv.Itoa(v), "1")
	}
	if !idRe.MatchString(id) {
		return bad("id", quote(id), "32 lowercase hex digits")
	}
	return nil
}

var (
	kinds    = map[string]bool{KindAck: true, KindBusy: true, KindNotOwner: true, KindDone: true}
	outcomes = map[string]bool{OutcomeCommitted: true, OutcomeAlreadyCommitted: true, OutcomeMarkAhead: true,
		OutcomeExpired: true, OutcomeRefused: true, OutcomeFailed: true}
)

// validate holds a to the format's rules. An answer's table and stream are those of its request,
// held to the same patterns; only the refusal of an invalid request may leave them empty.
func (a Answer) validate() error {
	bad := answerWire.Bad("answer")
	if err := checkHead(bad, a.V, a.ID); err != nil {
		return err
	}
	switch {
	case a.Table != "" && !localwal.ValidTable(a.Table):
		return bad("table", quote(a.Table), "empty or a table name matching "+localwal.TablePattern)
	case a.Stream != "" && !localwal.ValidStream(a.Stream):
		return bad("stream", quote(a.Stream), "empty or a stream id matching "+localwal.StreamPattern)
	case (a.Table == "" || a.Stream == "") && a.Outcome != OutcomeRefused:
		return bad("table", "empty", "table and stream on every answer but a refusal of an invalid request")
	case !kinds[a.Kind]:
		return bad("kind", quote(a.Kind), "ack, busy, not_owner or done")
	case (a.Kind == KindDone) != (a.Outcome != ""):
		return bad("outcome", quote(a.Outcome), "set exactly on a done answer")
	case a.Outcome != "" && !outcomes[a.Outcome]:
		return bad("outcome", quote(a.Outcome), "committed, already_committed, mark_ahead, expired, refused or failed")
	case a.Queue < 0 || a.SlowMs < 0:
		return bad("slow_ms", fmt.Sprintf("queue %d slow_ms %d", a.Queue, a.SlowMs), "queue and slow_ms >= 0")
	case a.WaitMs < 0:
		return bad("wait_ms", strconv.FormatInt(a.WaitMs, 10), "wait_ms >= 0")
	case a.IntervalMs < 0:
		return bad("interval_ms", strconv.FormatInt(a.IntervalMs, 10), "interval_ms >= 0")
	}
	if a.Prev != "" {
		if _, err := marks.ParseMark(a.Prev); err != nil {
			return bad("prev", quote(a.Prev), `empty or "incarnation:seq"`)
		}
	}
	return nil
}

// quote shows a value in an error, cut short.
var quote = jsonmsg.Quote
