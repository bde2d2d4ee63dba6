package marks

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// A mark carries no time, and its stored form is read by old pods and the WAL buffer, so a
// stream's last commit is kept beside it: siglake.seen.<stream>, unix seconds, refreshed by the
// commits that move the mark when it is older than SeenRefresh. Streams silent for longer than the
// prune age lose both keys, so 1,000 pods' random stream names do not pile up in every
// metadata.json; siglake.marks-pruned keeps how recent a pruned stream's last commit may have
// been, so the drain never re-commits blindly a segment that may be in the table already.

// SeenPrefix prefixes the table property holding each stream's last commit (unix seconds).
const SeenPrefix = tableprops.SeenPrefix

// SeenRefresh is how stale a stream's seen may be before a commit moving its mark rewrites it:
// one extra property write per stream and hour, and a seen that lags the last commit by less.
const SeenRefresh = time.Hour

// PruneSlack is what a pruned stream's last commit may lie after its seen: SeenRefresh, plus as
// much again for a commit that lands late and for clocks of pods and committers that disagree
// (a segment's ModTime is the pod's clock, seen the committer's).
const PruneSlack = 2 * SeenRefresh

// prunedRecord is the value of siglake.marks-pruned.
type prunedRecord struct {
	V      int   `json:"v"`
	Before int64 `json:"before"` // unix seconds: no pruned stream committed after it
}

var prunedCodec = tableprops.Codec[prunedRecord]{Name: tableprops.MarksPruned, What: "marks-pruned record",
	Version: func(r *prunedRecord) *int { return &r.V }, MinVersion: 1, MaxVersion: 1}

// StreamProps is what a commit that moves the marks of the streams committing sets and removes,
// given the table's current properties: the seen of each committing stream, when missing or older
// than SeenRefresh; and, when prune is set (the caller's tick, at most hourly per table) and
// pruneAfter > 0, the pruning of the other streams. A stream whose seen is more than
// pruneAfter + SeenRefresh old loses its mark and seen (it cannot have committed within
// pruneAfter: seen lags its last commit by less than SeenRefresh) and siglake.marks-pruned moves
// up to cover it; a mark without seen gets seen = now instead (the migration: never pruned in the
// pass that finds it). pruned counts the streams pruned.
func StreamProps(current iceberg.Properties, committing []string, now time.Time, pruneAfter time.Duration, prune bool) (set iceberg.Properties, remove []string, pruned int) {
	set = iceberg.Properties{}
	stamp := strconv.FormatInt(now.Unix(), 10)
	for _, s := range committing {
		if at, ok := seenAt(current, s); !ok || now.Sub(at) > SeenRefresh {
			set[SeenPrefix+s] = stamp
		}
	}
	if !prune || pruneAfter <= 0 {
		return set, nil, 0
	}
	var before time.Time
	for _, s := range silentStreams(current, committing) {
		at, ok := seenAt(current, s)
		switch {
		case !ok:
			if _, marked := current[PropertyPrefix+s]; marked {
				set[SeenPrefix+s] = stamp
			}
		case at.Add(pruneAfter + SeenRefresh).Before(now):
			remove = append(remove, SeenPrefix+s)
			if _, marked := current[PropertyPrefix+s]; marked {
				remove = append(remove, PropertyPrefix+s)
				pruned++
			}
			if b := at.Add(PruneSlack); b.After(before) {
				before = b
			}
		}
	}
	if !before.IsZero() {
		// Never lower: a value that does not decode is replaced, as nothing else could fix it.
		if old, ok, err := PrunedBefore(current); err == nil && ok && old.After(before) {
			before = old
		}
		v, _ := prunedCodec.Encode(prunedCodec.Current(prunedRecord{Before: before.Unix()}))
		set[tableprops.MarksPruned] = v
	}
	return set, remove, pruned
}

// PrunedBefore is siglake.marks-pruned: no stream whose mark was pruned committed after it, so a
// segment of a stream without a mark sealed at or before it may be in the table already. ok is
// false when no mark was ever pruned; err when the value does not decode (then nothing is known).
func PrunedBefore(props iceberg.Properties) (before time.Time, ok bool, err error) {
	r, ok, err := prunedCodec.Read(props)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	return time.Unix(r.Before, 0), true, nil
}

// seenAt is stream's seen; ok is false when it has none or one that does not read as unix
// seconds (rewritten as if missing).
func seenAt(props iceberg.Properties, stream string) (time.Time, bool) {
	v, ok := props[SeenPrefix+stream]
	if !ok {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}

// silentStreams are the streams with a mark or a seen in props that are not committing, sorted.
func silentStreams(props iceberg.Properties, committing []string) []string {
	found := map[string]bool{}
	for k := range props {
		for _, prefix := range []string{PropertyPrefix, SeenPrefix} {
			if s, ok := strings.CutPrefix(k, prefix); ok {
				found[s] = true
			}
		}
	}
	for _, s := range committing {
		delete(found, s)
	}
	return slices.Sorted(maps.Keys(found))
}
