// Package catalogtest is the tests' one fault-injection double for catalog commits: a real
// catalog whose table commits go through a hook. Only tests import it.
package catalogtest

import (
	"context"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
)

// CommitFunc is catalog.Catalog's CommitTable.
type CommitFunc func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error)

// hookCatalog is the fault-injection double for table commits: a real catalog whose every table
// commits through commit, which is handed the real CommitTable as next (to call, skip or wrap).
type hookCatalog struct {
	catalog.Catalog
	commit func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next CommitFunc) (table.Metadata, string, error)
}

// Hook wraps l's catalog in a hookCatalog; from then on l's table commits go through commit.
func Hook(l *lake.Lake, commit func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next CommitFunc) (table.Metadata, string, error)) {
	h := &hookCatalog{commit: commit}
	l.WrapCatalog(func(c catalog.Catalog) catalog.Catalog { h.Catalog = c; return h })
}

func (c *hookCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	t, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	// Bind the table to this wrapper so its commits come through CommitTable below.
	return table.New(t.Identifier(), t.Metadata(), t.MetadataLocation(), t.FS, c), nil
}

func (c *hookCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	return c.commit(ctx, id, reqs, ups, c.Catalog.CommitTable)
}
