package drain

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
)

// tableCacheTTL is how long a drain with a group committer uses a table it loaded before loading
// it again. EnsureTable per batch is a catalog read and a metadata.json GET: 100/s on one table
// at 1,000 pods, each committing every 10 s.
const tableCacheTTL = 60 * time.Second

// cachedTable is a table as the drain last loaded it, and when.
type cachedTable struct {
	t      *table.Table
	loaded time.Time
}

// tableFor is EnsureTable(name, sc). With a group committer it is served from the drain's cache
// while the cached table is younger than tableCacheTTL and holds every column of sc with its type;
// otherwise (and always without a group committer) the table is loaded, and cached. cached: t
// came from the cache.
//
// A stale table is safe for everything a batch reads from it:
//   - marks only grow, so a stale mark drops fewer segments as already committed (dropCommitted),
//     never more; the commit re-reads the marks on the head it pins (lake.CommitGroup) and that
//     decides, whoever commits. The one mark that goes away, a pruned one, is still a true record
//     while the cache shows it: the segments at or below it were committed, and those above it
//     go in on a head without it;
//   - columns are only added, as optional: files written with an older schema are valid under a
//     newer one (Iceberg field ids), and a committer decodes them with the schema id they carry,
//     which the table's metadata keeps. A segment column the cached table lacks, or holds with
//     another type, loads the table again (EnsureTable adds it, or the segment is quarantined
//     against the current schema), and so does a segment that does not conform to the cached
//     table (ensureTable: a column another writer made optional);
//   - table settings (retention policy, index columns) reach the drain up to tableCacheTTL late,
//     as a batch age would delay them without the cache.
//
// A failed batch forgets its table (forgetTable): a conflict, mark ahead or refused commit may
// come from a change the cache does not show.
func (d *Drain) tableFor(ctx context.Context, name string, sc *arrow.Schema) (t *table.Table, cached bool, err error) {
	if d.Group != nil {
		if c, ok := d.tables[name]; ok && d.Now().Sub(c.loaded) < tableCacheTTL {
			if missing, err := lake.CheckColumns(c.t, sc); err == nil && len(missing) == 0 {
				return c.t, true, nil
			}
		}
	}
	t, err = d.Lake.EnsureTable(ctx, name, sc)
	if err == nil && d.Group != nil {
		if d.tables == nil {
			d.tables = map[string]cachedTable{}
		}
		d.tables[name] = cachedTable{t: t, loaded: d.Now()}
	}
	return t, false, err
}

// forgetTable drops name from the table cache: its next batch loads it.
func (d *Drain) forgetTable(name string) {
	delete(d.tables, name)
}
