package sim

// Metadata sizes, from the tables the measured runs wrote (iceberg-go, format version 2): a
// metadata.json of a few KB plus about 2 KB per retained snapshot (its summary carries siglake's
// keys) and the table properties; a manifest list entry of about 200 bytes per live manifest.
const (
	metadataBaseBytes   = 4 << 10
	snapshotBytes       = 2 << 10
	retainedSnapshots   = 100 // snapshot expiry keeps about this many
	manifestEntryBytes  = 200
	markBytes           = 48  // "siglake.mark.<stream>": "<inc>:<seq>" in metadata.json
	watermarkBytes      = 100 // siglake.complete-through
	metadataObjects     = 3   // manifest, manifest list, metadata.json per attempt
	tableCacheUs        = 60e6
	answerTimeoutExtraU = 2e6
)

// table is what the model keeps of the table: its head (every landed commit moves it) and what
// sizes its metadata.
type table struct {
	head      int64
	snapshots int
	manifests int
	streams   map[int]bool // streams with a mark
	watermark bool
	merge     int
}

// metadataBytes is one load's read: metadata.json and the manifest list.
func (t *table) metadataBytes() float64 {
	return float64(metadataBaseBytes+snapshotBytes*min(t.snapshots, retainedSnapshots)) + t.propertyBytes() +
		float64(manifestEntryBytes*t.manifests)
}

// metadataJSONBytes is a metadata.json read alone (a pod's table load before its batch).
func (t *table) metadataJSONBytes() float64 {
	return float64(metadataBaseBytes+snapshotBytes*min(t.snapshots, retainedSnapshots)) + t.propertyBytes()
}

func (t *table) propertyBytes() float64 {
	b := float64(markBytes * len(t.streams))
	if t.watermark {
		b += watermarkBytes
	}
	return b
}

// merging reports whether the next append merges the manifests (min-count-to-merge reached).
func (t *table) merging() bool { return t.merge > 0 && t.manifests+1 >= t.merge }

// append lands an append of streams' marks: a new manifest, merged with the others at the
// min count.
func (t *table) append(streams []int, watermark bool) {
	t.head++
	t.snapshots++
	if t.merging() {
		t.manifests = 1
	} else {
		t.manifests++
	}
	for _, s := range streams {
		t.streams[s] = true
	}
	t.watermark = t.watermark || watermark
}

// maintain lands a maintenance commit: a rewrite of older files empties about half the live
// manifests (a coarse model of a level rewrite taking the L0 files of older appends).
func (t *table) maintain() {
	t.head++
	t.snapshots++
	t.manifests = max(1, t.manifests/2+1)
}
