// Package work is bin leases (issue 34, docs/design/bin-leases.md): a table's owner plans as
// before and offers the pass's bins; any maintenance sidecar (a worker) takes the bins that fit
// its memory budget, merges them, and hands the outputs back; the owner commits the replace only
// while the worker's lease is live.
//
// What is here is pure: values and times in, decisions out, no I/O and no clock reads. wire.go
// is the one codec of the messages workers and owners exchange
// (docs/format/bin-lease-messages.md); book.go is the owner's lease book, which decides which
// bins are on offer, which worker holds which, and when a lease ends. The process wraps them
// (not yet wired): the gossip transport that carries the messages (kinds 'W' and 'L'), the
// owner's maintenance executor that offers each pass and commits results in the table's loop,
// the worker loop that asks, merges through sidecar/rewrite and renews, and the clock.
package work

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/sidecar/peermsg/jsonmsg"
)

// The first byte of every message names its direction; the gossip transport dispatches on it.
const (
	KindWorker byte = 'W' // worker -> owner: want, renew, result
	KindOwner  byte = 'L' // owner -> worker: leases, answer
)

// Version is the only encoding version written and read. A reader takes the fields it knows, so
// a field added later needs no new version; a change of meaning does.
const Version = 1

// MaxMessageBytes bounds every message, as group commit's requests: one message must not hold a
// receiver's memory hostage. A bin whose job does not fit one stays on the owner (Offer refuses
// it), and Take stops before a leases message would pass it.
const MaxMessageBytes = 1 << 20

// ErrTooLarge is the error of a message above MaxMessageBytes, or of a job that could not travel
// in one.
var ErrTooLarge = errors.New("bin lease message above 1 MiB")

// Message types (the "type" field).
const (
	TypeWant   = "want"   // worker: lease me bins for my free budget
	TypeRenew  = "renew"  // worker: extend my live lease
	TypeResult = "result" // worker: the lease's merge is done (merged or failed)
	TypeLeases = "leases" // owner: the bins leased to you (none: ask again after retry_ms)
	TypeAnswer = "answer" // owner: what became of a lease's result or renewal
)

// Result statuses.
const (
	StatusMerged = "merged" // outputs written: files name them
	StatusFailed = "failed" // nothing to commit; error says why (outputs already removed)
)

// Outcomes of an answer. Only the live lease's holder is ever answered committed.
const (
	OutcomeCommitted      = "committed"       // the replace committed the result's files
	OutcomeConflict       = "conflict"        // the inputs changed meanwhile: nothing committed, outputs removed
	OutcomeExpired        = "expired"         // the lease is not live or not the sender's: refused
	OutcomeFailed         = "failed"          // the commit failed: nothing committed, outputs removed
	OutcomeMaybeCommitted = "maybe_committed" // the commit's outcome is unknown: outputs kept for gc to judge
)

// Input is one file a job replaces.
type Input struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	Rows       int64  `json:"rows"`
	Generation int    `json:"generation"`
}

// Metadata is merge.MetadataOptions with names of its own on the wire: a field renamed in the
// merge package must not change the format silently, and one added there does not compile here
// until the format carries it (MetadataOf converts the two struct types directly).
type Metadata struct {
	GroupColumns     []string `json:"group_columns"`
	RawColumn        string   `json:"raw_column"`
	IndexColumns     []string `json:"index_columns"`
	InvertedIndexOff bool     `json:"inverted_index_off"`
	FooterMaxBytes   int64    `json:"footer_max_bytes"`
	IndexAtFlush     bool     `json:"index_at_flush"`
}

// MetadataOf returns the wire form of o.
func MetadataOf(o merge.MetadataOptions) Metadata { return Metadata(o) }

// Options returns the merge options m carries.
func (m Metadata) Options() merge.MetadataOptions { return merge.MetadataOptions(m) }

// Job is the leasable part of a rewrite job (sidecar/rewrite.Job without its functions, filter
// and stage): plain values a worker merges with the table's schema, spec and FileIO alone (a
// rollup's fold travels in it).
type Job struct {
	Kind      string  `json:"kind"`      // the planner's bin kind (l0, l1, depth, fold, absorb, ...)
	Partition string  `json:"partition"` // the day, YYYY-MM-DD
	Inputs    []Input `json:"inputs"`
	// Generation is the outputs' generation: max input generation + 1 (promise 5).
	Generation      int      `json:"generation"`
	Dir             string   `json:"dir"` // where outputs go: the partition's data directory
	TargetFileBytes int64    `json:"target_file_bytes"`
	SplitSparse     float64  `json:"split_sparse"`
	Metadata        Metadata `json:"metadata"`
	// Fold folds the rows of a rollup table, as the owner planned it: its tier cutoffs are times
	// of the owner's planning clock, and FoldTier (in the outputs' names) was planned against
	// them, so the fold travels whole rather than being derived again on the worker. nil: no fold.
	Fold     *Fold `json:"fold,omitempty"`
	FoldTier int   `json:"fold_tier"`
	// Reason is the planner's printable reason, for the worker's logs.
	Reason string `json:"reason,omitempty"`
}

// Fold is merge/folding.Fold with names of its own on the wire (FoldOf, Folding).
type Fold struct {
	Keys       []string        `json:"keys"`
	Aggregates []FoldAggregate `json:"aggregates"`
	BucketUs   int64           `json:"bucket_us"` // the fold bucket, microseconds
	Tiers      []FoldTier      `json:"tiers"`
	MaxGroups  int             `json:"max_groups"` // 0: the default
}

// FoldAggregate is an aggregated column and how it folds (sum, min, max or count).
type FoldAggregate struct {
	Column string `json:"column"`
	Func   string `json:"func"`
}

// FoldTier is a coarser bucket for the rows older than BeforeUs (timestamp microseconds).
type FoldTier struct {
	BeforeUs int64 `json:"before_us"`
	BucketUs int64 `json:"bucket_us"`
}

// FoldOf returns the wire form of f.
func FoldOf(f folding.Fold) *Fold {
	w := &Fold{Keys: f.Keys, BucketUs: f.Bucket, MaxGroups: f.MaxGroups}
	for _, a := range f.Aggregates {
		w.Aggregates = append(w.Aggregates, FoldAggregate{Column: a.Column, Func: string(a.Func)})
	}
	for _, t := range f.Tiers {
		w.Tiers = append(w.Tiers, FoldTier{BeforeUs: t.Before, BucketUs: t.Bucket})
	}
	return w
}

// Folding returns the fold f carries.
func (f Fold) Folding() folding.Fold {
	out := folding.Fold{Keys: f.Keys, Bucket: f.BucketUs, MaxGroups: f.MaxGroups}
	for _, a := range f.Aggregates {
		out.Aggregates = append(out.Aggregates, folding.Aggregate{Column: a.Column, Func: folding.AggFunc(a.Func)})
	}
	for _, t := range f.Tiers {
		out.Tiers = append(out.Tiers, folding.FoldTier{Before: t.BeforeUs, Bucket: t.BucketUs})
	}
	return out
}

// Bytes is the job's input bytes: what a lease's duration and placement weigh.
func (j Job) Bytes() int64 {
	var n int64
	for _, in := range j.Inputs {
		n += in.Size
	}
	return n
}

// WorkerMessage is what a worker sends the owner (kind 'W'). Type says which fields it carries:
// want (FreeBytes, MergeBytes, MaxBinBytes), renew (Lease), result (Lease and the rest).
type WorkerMessage struct {
	V       int    `json:"v"`
	Type    string `json:"type"`
	From    string `json:"from"` // the sender's member name; the envelope's must be the same
	Catalog string `json:"cat"`  // the catalog identity; an owner of another catalog refuses

	// want: the worker's free merge budget and what one merge of its reserves: the owner leases at
	// most FreeBytes/MergeBytes bins. MaxBinBytes (0: any) is the largest bin the worker takes.
	FreeBytes   int64 `json:"free_bytes,omitempty"`
	MergeBytes  int64 `json:"merge_bytes,omitempty"`
	MaxBinBytes int64 `json:"max_bin_bytes,omitempty"`

	Lease string `json:"lease,omitempty"` // renew, result: the lease's id

	// result: the merge's end. Files are the outputs in iceberg-go's cross-process data-file
	// encoding (codec.EncodeDataFile), decoded and checked by the owner before it commits them.
	Status       string   `json:"status,omitempty"`
	Files        [][]byte `json:"files,omitempty"`
	BytesRead    int64    `json:"bytes_read,omitempty"`
	BytesWritten int64    `json:"bytes_written,omitempty"`
	SplicedBytes int64    `json:"spliced_bytes,omitempty"`
	TookMs       int64    `json:"took_ms,omitempty"`
	Error        string   `json:"error,omitempty"` // failed: why (never a row value)
}

// Grant is one lease as a worker receives it.
type Grant struct {
	ID         string `json:"id"`
	Table      string `json:"table"`
	Job        Job    `json:"job"`
	DurationMs int64  `json:"duration_ms"` // the lease lapses this long after its grant or last renewal
}

// Duration is the grant's lease duration.
func (g Grant) Duration() time.Duration { return time.Duration(g.DurationMs) * time.Millisecond }

// OwnerMessage is what an owner sends a worker (kind 'L'): leases (Catalog, Leases, RetryMs) or
// an answer (Lease, Outcome, Error).
type OwnerMessage struct {
	V       int     `json:"v"`
	Type    string  `json:"type"`
	Catalog string  `json:"cat,omitempty"`    // leases: the owner's catalog; a worker of another runs none
	Leases  []Grant `json:"leases,omitempty"` // leases: none means nothing for you now
	RetryMs int64   `json:"retry_ms,omitempty"`
	Lease   string  `json:"lease,omitempty"` // answer: the lease answered
	Outcome string  `json:"outcome,omitempty"`
	Error   string  `json:"error,omitempty"` // answer: why, for conflict, expired, failed
}

// FieldError is why a message was not accepted: the field and what it accepts. Field is a JSON
// name (a nested one dotted, "leases.job.inputs.path"), or "kind" (the first byte), "size" or
// "json" (the message as a whole); Message is "worker message", "owner message" or "job".
type FieldError = jsonmsg.FieldError

// wire is the messages' framing, bounded at MaxMessageBytes.
var wire = jsonmsg.Protocol{Name: "bin lease", MaxBytes: MaxMessageBytes, ErrTooLarge: ErrTooLarge}

// Encode returns m as a message, refusing what an owner would refuse.
func (m WorkerMessage) Encode() ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	return wire.Encode(KindWorker, "worker message", m)
}

// DecodeWorker reads and validates a worker's message whose envelope names sender: a body naming
// another member is refused.
func DecodeWorker(msg []byte, sender string) (WorkerMessage, error) {
	var m WorkerMessage
	if err := wire.Decode(msg, KindWorker, "worker message", &m); err != nil {
		return WorkerMessage{}, err
	}
	if err := m.validate(); err != nil {
		return WorkerMessage{}, err
	}
	if m.From != sender {
		return WorkerMessage{}, badOf("worker message")("from", quote(m.From)+" from member "+quote(sender), "the sender's own member name")
	}
	return m, nil
}

// Encode returns m as a message, refusing what a worker would refuse, and ErrTooLarge above
// MaxMessageBytes.
func (m OwnerMessage) Encode() ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	return wire.Encode(KindOwner, "owner message", m)
}

// DecodeOwner reads and validates an owner's message.
func DecodeOwner(msg []byte) (OwnerMessage, error) {
	var m OwnerMessage
	if err := wire.Decode(msg, KindOwner, "owner message", &m); err != nil {
		return OwnerMessage{}, err
	}
	if err := m.validate(); err != nil {
		return OwnerMessage{}, err
	}
	return m, nil
}

var idRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Bounds of the free-form values.
const (
	maxNameBytes  = 255  // member names, column names
	maxCatalogLen = 128  // catalog identities (24 hex today)
	maxPathBytes  = 4096 // file paths and directories
	maxErrorBytes = 4096 // error texts
	maxKindBytes  = 32
)

type badFunc func(field, problem, want string) error

func badOf(message string) badFunc { return wire.Bad(message) }

// validate holds m to the format's rules; the first broken rule is the error.
func (m WorkerMessage) validate() error {
	bad := badOf("worker message")
	switch {
	case m.V != Version:
		return bad("v", strconv.Itoa(m.V), "1")
	case m.From == "" || len(m.From) > maxNameBytes:
		return bad("from", quote(m.From), fmt.Sprintf("a member name of 1 to %d bytes", maxNameBytes))
	case m.Catalog == "" || len(m.Catalog) > maxCatalogLen:
		return bad("cat", quote(m.Catalog), fmt.Sprintf("a catalog identity of 1 to %d bytes", maxCatalogLen))
	case m.FreeBytes < 0 || m.MergeBytes < 0 || m.MaxBinBytes < 0:
		return bad("free_bytes", fmt.Sprintf("free %d merge %d max bin %d", m.FreeBytes, m.MergeBytes, m.MaxBinBytes), "free_bytes, merge_bytes and max_bin_bytes >= 0")
	}
	switch m.Type {
	case TypeWant:
		return m.validateWant(bad)
	case TypeRenew:
		if !idRe.MatchString(m.Lease) {
			return bad("lease", quote(m.Lease), "a lease id of 32 lowercase hex digits")
		}
		return m.noResult(bad)
	case TypeResult:
		return m.validateResult(bad)
	}
	return bad("type", quote(m.Type), "want, renew or result")
}

func (m WorkerMessage) validateWant(bad badFunc) error {
	switch {
	case m.MergeBytes < 1:
		return bad("merge_bytes", strconv.FormatInt(m.MergeBytes, 10), "the bytes one merge reserves, >= 1")
	case m.Lease != "":
		return bad("lease", quote(m.Lease), "none on a want")
	}
	return m.noResult(bad)
}

// noResult refuses a want or renew that carries a result's fields.
func (m WorkerMessage) noResult(bad badFunc) error {
	if m.Status != "" || len(m.Files) > 0 || m.Error != "" {
		return bad("status", quote(m.Status), "a result's fields only on a result")
	}
	return nil
}

func (m WorkerMessage) validateResult(bad badFunc) error {
	switch {
	case !idRe.MatchString(m.Lease):
		return bad("lease", quote(m.Lease), "a lease id of 32 lowercase hex digits")
	case m.FreeBytes != 0 || m.MergeBytes != 0 || m.MaxBinBytes != 0:
		return bad("free_bytes", "budget fields on a result", "free_bytes, merge_bytes and max_bin_bytes only on a want")
	case m.BytesRead < 0 || m.BytesWritten < 0 || m.SplicedBytes < 0 || m.TookMs < 0:
		return bad("bytes_read", fmt.Sprintf("read %d written %d spliced %d took_ms %d", m.BytesRead, m.BytesWritten, m.SplicedBytes, m.TookMs),
			"bytes_read, bytes_written, spliced_bytes and took_ms >= 0")
	case len(m.Error) > maxErrorBytes:
		return bad("error", fmt.Sprintf("%d bytes", len(m.Error)), fmt.Sprintf("at most %d bytes", maxErrorBytes))
	}
	switch m.Status {
	case StatusMerged:
		if len(m.Files) == 0 {
			return bad("files", "none", "at least one data file on merged")
		}
		for i, f := range m.Files {
			if len(f) == 0 {
				return bad("files", fmt.Sprintf("file %d is empty", i), "encoded data files")
			}
		}
		return nil
	case StatusFailed:
		if len(m.Files) > 0 {
			return bad("files", fmt.Sprintf("%d files on failed", len(m.Files)), "none on failed: the worker removed its outputs")
		}
		if m.Error == "" {
			return bad("error", "empty", "why the merge failed")
		}
		return nil
	}
	return bad("status", quote(m.Status), "merged or failed")
}

var outcomes = map[string]bool{OutcomeCommitted: true, OutcomeConflict: true, OutcomeExpired: true,
	OutcomeFailed: true, OutcomeMaybeCommitted: true}

// validate holds m to the format's rules; the first broken rule is the error.
func (m OwnerMessage) validate() error {
	bad := badOf("owner message")
	switch {
	case m.V != Version:
		return bad("v", strconv.Itoa(m.V), "1")
	case len(m.Error) > maxErrorBytes:
		return bad("error", fmt.Sprintf("%d bytes", len(m.Error)), fmt.Sprintf("at most %d bytes", maxErrorBytes))
	}
	switch m.Type {
	case TypeLeases:
		return m.validateLeases(bad)
	case TypeAnswer:
		switch {
		case !idRe.MatchString(m.Lease):
			return bad("lease", quote(m.Lease), "a lease id of 32 lowercase hex digits")
		case !outcomes[m.Outcome]:
			return bad("outcome", quote(m.Outcome), "committed, conflict, expired, failed or maybe_committed")
		case len(m.Leases) > 0 || m.Catalog != "" || m.RetryMs != 0:
			return bad("leases", fmt.Sprintf("%d leases on an answer", len(m.Leases)), "leases, cat and retry_ms only on leases")
		}
		return nil
	}
	return bad("type", quote(m.Type), "leases or answer")
}

func (m OwnerMessage) validateLeases(bad badFunc) error {
	switch {
	case m.Catalog == "" || len(m.Catalog) > maxCatalogLen:
		return bad("cat", quote(m.Catalog), fmt.Sprintf("a catalog identity of 1 to %d bytes", maxCatalogLen))
	case m.RetryMs < 0:
		return bad("retry_ms", strconv.FormatInt(m.RetryMs, 10), ">= 0")
	case m.Lease != "" || m.Outcome != "":
		return bad("outcome", quote(m.Outcome), "lease and outcome only on an answer")
	}
	ids := map[string]bool{}
	for i, g := range m.Leases {
		switch {
		case !idRe.MatchString(g.ID):
			return bad("leases.id", fmt.Sprintf("lease %d: %s", i, quote(g.ID)), "32 lowercase hex digits")
		case ids[g.ID]:
			return bad("leases.id", fmt.Sprintf("lease %d: %s twice", i, g.ID), "one id per lease")
		case !localwal.ValidTable(g.Table):
			return bad("leases.table", fmt.Sprintf("lease %d: %s", i, quote(g.Table)), "a table name matching "+localwal.TablePattern)
		case g.DurationMs < 1:
			return bad("leases.duration_ms", fmt.Sprintf("lease %d: %d", i, g.DurationMs), ">= 1")
		}
		ids[g.ID] = true
		if err := g.Job.Validate(); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				return bad("leases.job."+fe.Field, fmt.Sprintf("lease %d: %s", i, fe.Problem), fe.Want)
			}
			return err
		}
	}
	return nil
}

// notLeasable are the kinds whose rewrite needs what a job does not carry: a delete task's and
// retention's row filters and the progress they record in the same commit.
var notLeasable = map[string]bool{"delete-task": true, "retention": true}

var kindRe = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// Validate holds j to the format's rules (docs/format/bin-lease-messages.md, "Job"); Offer
// refuses a job that breaks one, and a worker one it received.
func (j Job) Validate() error {
	bad := badOf("job")
	switch {
	case len(j.Kind) > maxKindBytes || !kindRe.MatchString(j.Kind):
		return bad("kind", quote(j.Kind), fmt.Sprintf("a bin kind of 1 to %d bytes matching %s", maxKindBytes, kindRe))
	case notLeasable[j.Kind]:
		return bad("kind", quote(j.Kind), "a kind other than delete-task and retention: their rewrites stay on the owner")
	case !validDay(j.Partition):
		return bad("partition", quote(j.Partition), "a day, YYYY-MM-DD")
	case j.Dir == "" || len(j.Dir) > maxPathBytes:
		return bad("dir", quote(j.Dir), fmt.Sprintf("a directory of 1 to %d bytes", maxPathBytes))
	case j.TargetFileBytes < 0:
		return bad("target_file_bytes", strconv.FormatInt(j.TargetFileBytes, 10), ">= 0 (0: no cut by size)")
	case !(j.SplitSparse >= 0): // NaN too
		return bad("split_sparse", strconv.FormatFloat(j.SplitSparse, 'g', -1, 64), ">= 0 (0 cuts by size only)")
	case j.FoldTier < 0 || (j.Fold == nil && j.FoldTier != 0):
		return bad("fold_tier", strconv.Itoa(j.FoldTier), ">= 0, and 0 without a fold")
	case len(j.Reason) > maxErrorBytes:
		return bad("reason", fmt.Sprintf("%d bytes", len(j.Reason)), fmt.Sprintf("at most %d bytes", maxErrorBytes))
	}
	if err := j.validateInputs(bad); err != nil {
		return err
	}
	if j.Fold != nil {
		if err := j.Fold.validate(bad); err != nil {
			return err
		}
	}
	return j.Metadata.validate(bad)
}

func validDay(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// validateInputs holds the inputs and the generation to their rules: distinct paths, and the
// outputs one generation above the newest input (promise 5).
func (j Job) validateInputs(bad badFunc) error {
	if len(j.Inputs) == 0 {
		return bad("inputs", "none", "at least one input file")
	}
	seen := make(map[string]bool, len(j.Inputs))
	top := 0
	for i, in := range j.Inputs {
		switch {
		case in.Path == "" || len(in.Path) > maxPathBytes:
			return bad("inputs.path", fmt.Sprintf("input %d: %s", i, quote(in.Path)), fmt.Sprintf("a path of 1 to %d bytes", maxPathBytes))
		case seen[in.Path]:
			return bad("inputs.path", fmt.Sprintf("input %d: %s twice", i, quote(in.Path)), "each input once")
		case in.Size < 0 || in.Rows < 0 || in.Generation < 0:
			return bad("inputs.size", fmt.Sprintf("input %d: size %d rows %d generation %d", i, in.Size, in.Rows, in.Generation),
				"size, rows and generation >= 0")
		}
		seen[in.Path] = true
		top = max(top, in.Generation)
	}
	if j.Generation != top+1 {
		return bad("generation", strconv.Itoa(j.Generation), fmt.Sprintf("%d, one above the newest input's", top+1))
	}
	return nil
}

func (m Metadata) validate(bad badFunc) error {
	want := fmt.Sprintf("column names of 1 to %d bytes", maxNameBytes)
	if len(m.RawColumn) > maxNameBytes {
		return bad("metadata.raw_column", quote(m.RawColumn), want+" (empty: the default)")
	}
	for _, l := range []struct {
		field string
		cols  []string
	}{{"metadata.group_columns", m.GroupColumns}, {"metadata.index_columns", m.IndexColumns}} {
		for _, c := range l.cols {
			if c == "" || len(c) > maxNameBytes {
				return bad(l.field, quote(c), want)
			}
		}
	}
	if m.FooterMaxBytes < 0 {
		return bad("metadata.footer_max_bytes", strconv.FormatInt(m.FooterMaxBytes, 10), ">= 0 (0: the default)")
	}
	return nil
}

var aggFuncs = map[string]bool{string(folding.AggSum): true, string(folding.AggMin): true, string(folding.AggMax): true, string(folding.AggCount): true}

// validate holds a fold to the shape the format accepts; the worker compiles it against the
// table's schema (folding.Compile), which checks the columns.
func (f Fold) validate(bad badFunc) error {
	name := fmt.Sprintf("column names of 1 to %d bytes", maxNameBytes)
	switch {
	case f.BucketUs < 1:
		return bad("fold.bucket_us", strconv.FormatInt(f.BucketUs, 10), "microseconds >= 1")
	case f.MaxGroups < 0:
		return bad("fold.max_groups", strconv.Itoa(f.MaxGroups), ">= 0 (0: the default)")
	case len(f.Aggregates) == 0:
		return bad("fold.aggregates", "none", "at least one aggregated column")
	}
	for _, k := range f.Keys {
		if k == "" || len(k) > maxNameBytes {
			return bad("fold.keys", quote(k), name)
		}
	}
	for i, a := range f.Aggregates {
		switch {
		case a.Column == "" || len(a.Column) > maxNameBytes:
			return bad("fold.aggregates.column", fmt.Sprintf("aggregate %d: %s", i, quote(a.Column)), name)
		case !aggFuncs[a.Func]:
			return bad("fold.aggregates.func", fmt.Sprintf("aggregate %d: %s", i, quote(a.Func)), "sum, min, max or count")
		}
	}
	for i, t := range f.Tiers {
		if t.BucketUs < 1 {
			return bad("fold.tiers.bucket_us", fmt.Sprintf("tier %d: %d", i, t.BucketUs), "microseconds >= 1")
		}
	}
	return nil
}

// quote shows a value in an error, cut short.
var quote = jsonmsg.Quote
