// Package tableprops is the one register and codec of siglake's `siglake.*` keys in table,
// namespace and snapshot-summary properties: every key and prefix is declared here (Keys) and
// specified in docs/format/table-properties.md, which a test keeps in step; Codec reads and writes
// a namespace's versioned JSON values with errors that name the key and the versions accepted.
// Pure: no catalog, no I/O.
package tableprops

// Where a key lives.
type Place string

const (
	Table     Place = "table property"
	Namespace Place = "namespace property"
	Summary   Place = "snapshot summary"
)

// Table properties (keys, and prefixes ending in ".").
const (
	MarkPrefix       = "siglake.mark."              // + stream: the stream's mark, incarnation:seq
	SeenPrefix       = "siglake.seen."              // + stream: unix seconds of the stream's last commit (hourly)
	MarksPruned      = "siglake.marks-pruned"       // the newest last commit of the streams whose marks were pruned
	SkippedPrefix    = "siglake.skipped."           // + hash of the path: a set-aside data file
	IndexAtFlush     = "siglake.index_at_flush"     // table setting index_at_flush
	IndexColumns     = "siglake.index_columns"      // the table's index specification
	CreatedBy        = "siglake.created-by"         // "siglake" on tables siglake created
	Fold             = "siglake.fold"               // the fold specification
	Retention        = "siglake.retention"          // the retention policy
	RetentionPending = "siglake.retention.pending." // + id: a pending retention deletion
	DeletePrefix     = "siglake.delete."            // + id: a deletion request
	PuffinPrefix     = "siglake.invidx.puffin.v1."  // + data file base name: its Puffin sidecars
	ClaimPrefix      = "siglake.claim."             // + stream (claims table): the stream's claim
	ClaimerPrefix    = "siglake.claimer."           // + holder (claims table): its heartbeat
	CommitterPrefix  = "siglake.committer."         // + table (claims table): the table's committer claim
	CommitterClaimer = "siglake.committer-claimer." // + holder (claims table): a committer claimer's heartbeat
	CompleteThrough  = "siglake.complete-through"   // group commit: the table's complete-through watermark
)

// CatalogID is the namespace property holding the catalog identity.
const CatalogID = "siglake.catalog-id"

// Snapshot summary keys, for people and tools reading a table's history.
const (
	SumStream           = "siglake.stream"                  // drain append: the stream
	SumMark             = "siglake.mark"                    // drain append: the stream's new mark
	SumSegments         = "siglake.segments"                // drain append: segments in the batch
	SumRows             = "siglake.rows"                    // drain append: rows in the batch
	SumGroupRequests    = "siglake.group.requests"          // group commit: the requests it answered
	SumGroupStreams     = "siglake.group.streams"           // group commit: the streams whose marks it moved
	SumClaimHolder      = "siglake.claim.holder"            // drain append under a claim
	SumClaimEpoch       = "siglake.claim.epoch"             // drain append under a claim
	SumRewriteKind      = "siglake.rewrite.kind"            // replace: the kind of rewrite
	SumRewritePath      = "siglake.rewrite.path"            // replace: the merge path
	SumRewriteInputs    = "siglake.rewrite.inputs"          // replace: input files
	SumFoldRowsIn       = "siglake.fold.rows-in"            // folding replace
	SumFoldRowsOut      = "siglake.fold.rows-out"           // folding replace
	SumRetentionFiles   = "siglake.retention.dropped-files" // retention: files dropped whole
	SumRetentionRows    = "siglake.retention.dropped-rows"  // retention: rows removed
	SumRetentionPending = "siglake.retention.pending"       // retention: its pending deletion id
	SumDeleteRequests   = "siglake.delete.requests"         // delete task: the request ids
	SumDeleteRows       = "siglake.delete.rows"             // delete task: rows deleted
	SumClaimer          = "siglake.claimer"                 // claims table commit: the claimer
	SumClaimsHeld       = "siglake.claims.held"             // claims table commit: claims held
	SumPropertiesEdit   = "siglake.properties-edit"         // empty snapshot of a CAS property edit
)

// Key is one registered key or prefix.
type Key struct {
	Name   string
	Prefix bool // Name prefixes a family of keys
	Place  Place
}

// Keys is every `siglake.*` key siglake writes or reads in catalog properties and snapshot
// summaries; docs/format/table-properties.md specifies each one.
var Keys = []Key{
	{MarkPrefix, true, Table},
	{SeenPrefix, true, Table},
	{MarksPruned, false, Table},
	{SkippedPrefix, true, Table},
	{IndexAtFlush, false, Table},
	{IndexColumns, false, Table},
	{CreatedBy, false, Table},
	{Fold, false, Table},
	{Retention, false, Table},
	{RetentionPending, true, Table},
	{DeletePrefix, true, Table},
	{PuffinPrefix, true, Table},
	{ClaimPrefix, true, Table},
	{ClaimerPrefix, true, Table},
	{CommitterPrefix, true, Table},
	{CommitterClaimer, true, Table},
	{CompleteThrough, false, Table},
	{CatalogID, false, Namespace},
	{SumStream, false, Summary},
	{SumMark, false, Summary},
	{SumSegments, false, Summary},
	{SumRows, false, Summary},
	{SumGroupRequests, false, Summary},
	{SumGroupStreams, false, Summary},
	{SumClaimHolder, false, Summary},
	{SumClaimEpoch, false, Summary},
	{SumRewriteKind, false, Summary},
	{SumRewritePath, false, Summary},
	{SumRewriteInputs, false, Summary},
	{SumFoldRowsIn, false, Summary},
	{SumFoldRowsOut, false, Summary},
	{SumRetentionFiles, false, Summary},
	{SumRetentionRows, false, Summary},
	{SumRetentionPending, false, Summary},
	{SumDeleteRequests, false, Summary},
	{SumDeleteRows, false, Summary},
	{SumClaimer, false, Summary},
	{SumClaimsHeld, false, Summary},
	{SumPropertiesEdit, false, Summary},
}
