package lake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// SkippedPrefix prefixes the table properties that set a data file aside: its rewrites failed
// permanently (a corrupt, truncated, missing or unreadable object) SIGLAKE_COMPACTOR_SKIP_AFTER_FAILURES
// times, so maintenance plans without it (docs/operations.md "Skipped files"). They live with
// the table, so every owner, after restarts and lease moves, knows.
const SkippedPrefix = tableprops.SkippedPrefix

// Skipped is one set-aside data file.
type Skipped struct {
	Path     string    `json:"path"`
	Class    string    `json:"class"` // corrupt, missing, schema, permission
	Cause    string    `json:"cause"`
	At       time.Time `json:"at"`
	Failures int       `json:"failures"`
	Kind     string    `json:"kind"` // the rewrite that failed last
}

// skippedCodec reads and writes the set-aside records; a record belongs under its path's key.
var skippedCodec = tableprops.Codec[Skipped]{Name: SkippedPrefix, What: "set-aside file",
	KeyOf: func(s Skipped) string { return SkippedKey(s.Path) }}

// SkippedKey is the property of path: a hash, since paths are long and hold any character.
func SkippedKey(path string) string {
	h := sha256.Sum256([]byte(path))
	return SkippedPrefix + hex.EncodeToString(h[:12])
}

// SkippedFiles are the files props sets aside, by path; entries that do not decode are left
// alone (and do not set anything aside).
func SkippedFiles(props iceberg.Properties) map[string]Skipped {
	out := map[string]Skipped{}
	entries, _ := skippedCodec.List(props)
	for _, e := range entries {
		if e.Value.Path != "" {
			out[e.Value.Path] = e.Value
		}
	}
	return out
}

// SortedSkipped lists m by path.
func SortedSkipped(m map[string]Skipped) []Skipped {
	out := make([]Skipped, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// SetSkipped records s in table name, retried on a concurrent commit.
func (l *Lake) SetSkipped(ctx context.Context, name string, s Skipped) error {
	v, err := skippedCodec.Encode(s)
	if err != nil {
		return err
	}
	return l.UpdateProperties(ctx, name, func(iceberg.Properties) (iceberg.Properties, []string) {
		return iceberg.Properties{SkippedKey(s.Path): string(v)}, nil
	})
}

// ClearSkipped removes the set-aside records of paths (every one when paths is empty) from table
// name and returns the paths cleared: maintenance plans them again.
func (l *Lake) ClearSkipped(ctx context.Context, name string, paths []string) ([]string, error) {
	var cleared []string
	err := l.UpdateProperties(ctx, name, func(props iceberg.Properties) (iceberg.Properties, []string) {
		cur := SkippedFiles(props)
		cleared = nil
		if len(paths) == 0 {
			for p := range cur {
				cleared = append(cleared, p)
			}
		}
		for _, p := range paths {
			if _, ok := cur[p]; ok {
				cleared = append(cleared, p)
			}
		}
		keys := make([]string, len(cleared))
		for i, p := range cleared {
			keys[i] = SkippedKey(p)
		}
		return nil, keys
	})
	sort.Strings(cleared)
	return cleared, err
}
