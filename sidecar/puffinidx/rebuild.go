package puffinidx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/writer"
)

// BlobType is the Puffin blob type of one column's inverted index (encoding: the footer's
// siglake.invidx.v1 entry without base64; docs/file-format.md).
const BlobType puffin.BlobType = "siglake-inverted-index-v1"

// Blob and file properties.
const (
	PropDataFile = "siglake.data-file" // full path of the indexed data file
	PropColumn   = "siglake.column"    // the indexed column's name
	PropRows     = "siglake.rows"      // rows of the data file (ordinals are below this)
	PropTerms    = "siglake.terms"     // distinct values indexed
)

// Dir is where a table's sidecars go: under its metadata folder, which gc walks with the rest of
// the table location.
func Dir(t *table.Table) string { return strings.TrimSuffix(t.Location(), "/") + "/metadata/invidx" }

// Result is what one rebuild did.
type Result struct {
	Files    int   // data files that got a sidecar
	Blobs    int   // column indexes written
	Bytes    int64 // Puffin bytes written
	Skipped  int   // data files with nothing to build (footer index, registration, column absent)
	Failures int   // data files whose index could not be built, written or registered
}

// Rebuilder runs the rebuild after a rewrite's replace committed.
type Rebuilder struct {
	Metrics *Metrics
	Log     *zap.Logger
	Mem     memory.Allocator
	// MaxMemBytes caps the memory one column's index may hold while it is built (the merge
	// memory budget): a column over it is skipped, counted and left unindexed; 0 = no cap.
	MaxMemBytes int64
	// Register commits the registrations (table properties); nil commits them on the table Run
	// was given. The sidecar passes its Lake's UpdateProperties, so they queue behind the table's
	// other commits in this process (group commits, replaces) instead of racing them.
	Register func(ctx context.Context, set iceberg.Properties) error
}

func (r *Rebuilder) register(ctx context.Context, t *table.Table, props iceberg.Properties) error {
	if r.Register != nil {
		return r.Register(ctx, props)
	}
	txn := t.NewTransaction()
	if err := txn.SetProperties(props); err != nil {
		return err
	}
	_, err := txn.Commit(ctx)
	return err
}

// Run indexes the data files of one committed rewrite (snapshot snap of t): for each file and
// each of columns with neither a footer index nor a registration, it builds the index from the
// file, writes one Puffin file per data file and registers all of them in one property commit.
// It touches nothing but the sidecars and their registrations: an error here leaves the rewrite
// committed and the files unindexed (promise 7), so the caller logs and goes on.
func (r *Rebuilder) Run(ctx context.Context, t *table.Table, fs icebergio.WriteFileIO, snap int64, files, columns []string) (Result, error) {
	name := t.Identifier()[len(t.Identifier())-1]
	log := r.Log.With(zap.String("table", name), zap.Int64("snapshot_id", snap))
	var res Result
	if len(columns) == 0 || len(files) == 0 {
		return res, nil
	}
	reg, perr := Parse(t.Properties())
	if perr != nil {
		log.Warn("index registry has malformed entries; they are ignored", zap.Error(perr))
	}
	seq := int64(0)
	if s := t.Metadata().SnapshotByID(snap); s != nil {
		seq = s.SequenceNumber
	}
	var written []Registration // new sidecars, with the file's registration so far
	var errs []error
	for _, f := range files {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		done := reg[f].Columns()
		var want []string
		for _, c := range columns {
			if !slices.Contains(done, c) {
				want = append(want, c)
			}
		}
		if len(want) == 0 {
			res.Skipped++
			continue
		}
		sc, err := r.writeSidecar(ctx, t, fs, f, want, snap, seq)
		if err != nil {
			res.Failures++
			r.Metrics.Failures.WithLabelValues(name).Inc()
			log.Warn("index rebuild of a data file failed; it stays unindexed", zap.String("data_file", f), zap.Error(err))
			errs = append(errs, err)
			continue
		}
		if sc.sidecar.Path == "" {
			res.Skipped++
			continue
		}
		res.Blobs += len(sc.sidecar.Columns)
		res.Bytes += sc.bytes
		rg := reg[f]
		rg.DataFile = f
		rg.Sidecars = append(slices.Clone(rg.Sidecars), sc.sidecar)
		written = append(written, rg)
		log.Info("wrote index sidecar", zap.String("data_file", f), zap.String("puffin", sc.sidecar.Path),
			zap.Strings("columns", sc.sidecar.Columns), zap.Int64("bytes", sc.bytes))
	}
	if len(written) == 0 {
		return res, errors.Join(errs...)
	}
	props := iceberg.Properties{}
	for _, rg := range written {
		props[Key(rg.DataFile)] = rg.Encode()
	}
	err := r.register(ctx, t, props)
	if err != nil {
		// The sidecars are unregistered: gc removes them as orphans once old enough.
		res.Failures += len(written)
		r.Metrics.Failures.WithLabelValues(name).Add(float64(len(written)))
		log.Warn("registering index sidecars failed; the files stay unindexed", zap.Int("sidecars", len(written)), zap.Error(err))
		return res, errors.Join(append(errs, fmt.Errorf("register %d index sidecars of %s: %w", len(written), name, err))...)
	}
	res.Files = len(written)
	r.Metrics.Files.WithLabelValues(name).Add(float64(res.Files))
	r.Metrics.Blobs.WithLabelValues(name).Add(float64(res.Blobs))
	r.Metrics.Bytes.WithLabelValues(name).Add(float64(res.Bytes))
	return res, errors.Join(errs...)
}

type writtenSidecar struct {
	sidecar Sidecar
	bytes   int64
}

// writeSidecar builds the missing indexes of one data file and writes them as one Puffin file;
// a zero Sidecar when the footer already carries them all (or the file lacks the columns).
func (r *Rebuilder) writeSidecar(ctx context.Context, t *table.Table, fs icebergio.WriteFileIO, dataFile string, columns []string, snap, seq int64) (writtenSidecar, error) {
	built, err := merge.BuildIndexes(ctx, fs, dataFile, columns, r.Mem, r.MaxMemBytes)
	if err != nil {
		return writtenSidecar{}, fmt.Errorf("build indexes %v of %s: %w", columns, dataFile, err)
	}
	if len(built.TooLarge) > 0 {
		name := t.Identifier()[len(t.Identifier())-1]
		r.Metrics.SkippedColumns.WithLabelValues(name).Add(float64(len(built.TooLarge)))
		r.Log.Warn("index rebuild skipped columns whose index would exceed the merge memory budget; they stay unindexed (scanned)",
			zap.String("table", name), zap.String("data_file", dataFile), zap.Strings("columns", built.TooLarge),
			zap.Int64("max_bytes", r.MaxMemBytes))
	}
	var cols []string
	for _, c := range columns {
		if _, ok := built.Built[c]; ok {
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		return writtenSidecar{}, nil
	}
	base := strings.TrimSuffix(path.Base(dataFile), ".parquet")
	p := Dir(t) + "/" + base + "-" + uuid.NewString() + ".puffin"
	out, err := fs.Create(p)
	if err != nil {
		return writtenSidecar{}, fmt.Errorf("create index sidecar %s: %w", p, err)
	}
	cw := &writer.CountingWriter{W: out}
	err = WritePuffin(cw, t.Schema(), dataFile, cols, built, snap, seq)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		_ = fs.Remove(p)
		return writtenSidecar{}, fmt.Errorf("write index sidecar %s: %w", p, err)
	}
	return writtenSidecar{sidecar: Sidecar{Path: p, Columns: cols, SnapshotID: snap}, bytes: cw.N}, nil
}

// WritePuffin writes one blob per column with iceberg-go's Puffin writer (uncompressed: the
// postings are varint deltas already, and a reader can then take a blob as is).
func WritePuffin(w io.Writer, sc *iceberg.Schema, dataFile string, cols []string, built merge.FileIndexes, snap, seq int64) error {
	pw, err := puffin.NewWriter(w)
	if err != nil {
		return err
	}
	if err := pw.SetCreatedBy("siglake"); err != nil {
		return err
	}
	if err := pw.AddProperties(map[string]string{PropDataFile: dataFile}); err != nil {
		return err
	}
	for _, c := range cols {
		field, ok := sc.FindFieldByName(c)
		if !ok {
			return fmt.Errorf("column %s is not in the table schema", c)
		}
		enc := built.Built[c]
		ix, err := index.DecodeInverted(enc)
		if err != nil {
			return fmt.Errorf("index of %s: %w", c, err) // a bug in the builder
		}
		if _, err := pw.AddBlob(puffin.BlobMetadataInput{
			Type: BlobType, SnapshotID: snap, SequenceNumber: seq, Fields: []int32{int32(field.ID)},
			Properties: map[string]string{PropDataFile: dataFile, PropColumn: c,
				PropRows: strconv.FormatInt(built.Rows, 10), PropTerms: strconv.Itoa(ix.Terms())},
		}, enc); err != nil {
			return err
		}
	}
	return pw.Finish()
}
