// Package catalogs opens the Iceberg catalog a --catalog URI names (SQLite, PostgreSQL, REST) and
// decides whether a failure to open it is the configuration's (ErrBadConfig: retrying cannot
// help) or an outage to wait out.
package catalogs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/lib/pq"  // PostgreSQL driver for the SQL catalog; already in iceberg-go's module graph
	_ "modernc.org/sqlite" // pure-Go SQLite so the binary builds with CGO_ENABLED=0

	"github.com/siglake/siglake/sidecar/lake/redact"
)

// Open opens the catalog uri names, its tables' data under warehouse (a URI), with the FileIO
// properties ioProps. closeIdle, nil for the SQL catalogs, releases the REST catalog's pooled
// connections (iceberg-go leaves a transport it was given to its owner): call it after Close.
// An error that retrying cannot fix wraps ErrBadConfig.
func Open(ctx context.Context, uri, warehouse string, ioProps iceberg.Properties) (cat catalog.Catalog, closeIdle func(), err error) {
	props := iceberg.Properties{"warehouse": warehouse}
	for k, v := range ioProps {
		props[k] = v
	}
	switch {
	case strings.HasPrefix(uri, "sqlite:"):
		cat, err = openSQLite(strings.TrimPrefix(uri, "sqlite:"), props)
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		// The driver's own parse error quotes the whole URI, password included. An empty host is
		// fine with host= in the query: a Unix socket directory (the Cloud SQL Auth Proxy's socket
		// mode, a local server's /var/run/postgresql).
		if u, perr := url.Parse(uri); perr != nil || (u.Host == "" && u.Query().Get("host") == "") {
			return nil, nil, badCatalog(uri, "not a valid postgres:// URL", nil)
		}
		cat, err = openSQL("postgres", uri, sqlcat.Postgres, props)
	case strings.HasPrefix(uri, "rest+"):
		if u, perr := url.Parse(strings.TrimPrefix(uri, "rest+")); perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, badCatalog(uri, "a REST catalog URL is rest+http://HOST or rest+https://HOST", nil)
		}
		tr := newRESTTransport() // waits out a 429's Retry-After (rest.go)
		closeIdle = tr.CloseIdleConnections
		cat, err = rest.NewCatalog(ctx, "siglake", strings.TrimPrefix(uri, "rest+"), rest.WithWarehouseLocation(warehouse),
			rest.WithAdditionalProps(props), rest.WithCustomTransport(tr))
	default:
		return nil, nil, badCatalog(uri, "unknown catalog kind", nil)
	}
	if err != nil {
		if closeIdle != nil {
			closeIdle()
		}
		if errors.Is(err, ErrBadConfig) {
			return nil, nil, err
		}
		if err := OpenError(uri, err); errors.Is(err, ErrBadConfig) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("open catalog %s: %w", redact.URI(uri), err)
	}
	return cat, closeIdle, nil
}

func openSQLite(path string, props iceberg.Properties) (catalog.Catalog, error) {
	if path == "" {
		return nil, badCatalog("sqlite:", "a sqlite catalog needs a path", nil)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := checkSQLitePath("sqlite:"+path, abs); err != nil {
		return nil, err
	}
	// WAL journal and a busy timeout let several processes (drain replicas, CLI tools) share the
	// file; every pooled connection gets them because they are in the DSN.
	dsn := "file:" + abs + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	return openSQL("sqlite", dsn, sqlcat.SQLite, props)
}

func openSQL(driver, dsn string, dialect sqlcat.SupportedDialect, props iceberg.Properties) (catalog.Catalog, error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	p := iceberg.Properties{"init_catalog_tables": "true"}
	for k, v := range props {
		p[k] = v
	}
	cat, err := sqlcat.NewCatalog("siglake", db, dialect, p)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &ownedSQLCatalog{Catalog: cat, db: db}, nil
}

// ownedSQLCatalog closes the database handle that NewCatalog leaves to its caller.
type ownedSQLCatalog struct {
	*sqlcat.Catalog
	db *sql.DB
}

// DB is the catalog's connection pool, for a caller that must bound it (a benchmark running
// hundreds of catalogs in one process against a server's connection limit).
func (c *ownedSQLCatalog) DB() *sql.DB { return c.db }

func (c *ownedSQLCatalog) Close() error {
	err := c.Catalog.Close()
	if e := c.db.Close(); err == nil {
		err = e
	}
	return err
}
