package puffinidx

import (
	"context"
	"fmt"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/index"
)

// Source says where a file's inverted index came from.
type Source string

const (
	FromFooter Source = "footer" // the data file's own Parquet footer
	FromPuffin Source = "puffin" // a registered Puffin sidecar
	Absent     Source = "absent" // none: "maybe", scan the file's rows
)

// Index returns a live data file's inverted index of column: from its footer when it carries one
// (an index a file already has is always used first), else from a registered Puffin sidecar,
// else Absent. A sidecar that cannot be read or decoded answers Absent with the error, so a
// caller scans (promise 7) and can log why.
func Index(ctx context.Context, t *table.Table, dataFile, column string) (*index.Inverted, Source, error) {
	fsys, err := t.FS(ctx)
	if err != nil {
		return nil, Absent, err
	}
	footer, err := merge.ReadFooter(fsys, dataFile)
	if err != nil {
		return nil, Absent, err
	}
	if ix, ok := footer.Inverted(column); ok {
		return ix, FromFooter, nil
	}
	reg, _ := Parse(t.Properties())
	sc, ok := reg[dataFile].sidecarFor(column)
	if !ok {
		return nil, Absent, nil
	}
	ix, err := ReadSidecar(fsys, sc.Path, dataFile, column)
	if err != nil {
		return nil, Absent, err
	}
	return ix, FromPuffin, nil
}

// ReadSidecar reads the index of column of dataFile from a Puffin file with iceberg-go's reader.
func ReadSidecar(fsys icebergio.IO, puffinPath, dataFile, column string) (*index.Inverted, error) {
	ix, _, err := ReadSidecarUpTo(fsys, puffinPath, dataFile, column, 0)
	return ix, err
}

// ReadSidecarUpTo is ReadSidecar for a reader with a cost limit: when the blob is longer than
// maxBytes (0: no limit) it reads only the Puffin footer and returns nil and the blob's length, so
// a search can scan instead of reading an index that costs more than the scan it saves.
func ReadSidecarUpTo(fsys icebergio.IO, puffinPath, dataFile, column string, maxBytes int64) (*index.Inverted, int64, error) {
	f, err := fsys.Open(puffinPath)
	if err != nil {
		return nil, 0, fmt.Errorf("open index sidecar %s: %w", puffinPath, err)
	}
	defer f.Close()
	pr, err := puffin.NewReader(f)
	if err != nil {
		return nil, 0, fmt.Errorf("read index sidecar %s: %w", puffinPath, err)
	}
	for _, b := range pr.Blobs() {
		if b.Type != BlobType || b.Properties[PropColumn] != column || b.Properties[PropDataFile] != dataFile {
			continue
		}
		if maxBytes > 0 && b.Length > maxBytes {
			return nil, b.Length, nil
		}
		raw, err := pr.ReadBlobByMetadata(b)
		if err != nil {
			return nil, b.Length, fmt.Errorf("read %s blob of %s in %s: %w", column, dataFile, puffinPath, err)
		}
		ix, err := index.DecodeInverted(raw)
		if err != nil {
			return nil, b.Length, fmt.Errorf("decode %s blob of %s in %s: %w", column, dataFile, puffinPath, err)
		}
		return ix, b.Length, nil
	}
	return nil, 0, fmt.Errorf("index sidecar %s has no %s blob for column %s of %s", puffinPath, BlobType, column, dataFile)
}

// DropStale removes, in one property commit, the registrations of data files that are not live in
// t (t's own metadata: properties and live files come from the same version). unregister commits
// the removal (the sidecar's Lake, so it queues behind the table's other commits); nil commits it
// on t. It returns how many it dropped; their sidecars become orphans for gc.
func DropStale(ctx context.Context, t *table.Table, live func(dataFile string) bool,
	unregister func(ctx context.Context, keys []string) error, m *Metrics, log *zap.Logger) (int, error) {
	keys := StaleKeys(t.Properties(), live)
	if len(keys) == 0 {
		return 0, nil
	}
	name := t.Identifier()[len(t.Identifier())-1]
	var err error
	if unregister != nil {
		err = unregister(ctx, keys)
	} else {
		txn := t.NewTransaction()
		if err = txn.RemoveProperties(keys); err == nil {
			_, err = txn.Commit(ctx)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("drop %d stale index registrations of %s: %w", len(keys), name, err)
	}
	m.Dropped.WithLabelValues(name).Add(float64(len(keys)))
	log.Info("dropped index registrations of files no longer live", zap.String("table", name), zap.Strings("keys", keys))
	return len(keys), nil
}
