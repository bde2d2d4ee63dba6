// Package lake is siglake's Iceberg wiring: it opens a catalog and FileIO from URIs, ensures tables
// exist with the schema their segments bring, lists live files with their bounds, and commits appends
// and rewrites together with the stream marks that make the drain exactly-once.
package lake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3:// FileIO without the other clouds' SDKs
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake/catalogs"
	"github.com/siglake/siglake/sidecar/lake/deadline"
	_ "github.com/siglake/siglake/sidecar/lake/objstore" // the counting s3:// FileIO every table access uses
)

// Config says where the catalog and the data live.
type Config struct {
	Catalog   string // sqlite:PATH, postgres://..., rest+http(s)://...
	Warehouse string // local path, file://PATH, s3://bucket/prefix
	Namespace string

	S3Endpoint  string
	S3Region    string
	S3AccessKey string
	S3SecretKey string
	S3PathStyle bool

	// CommitTimeout bounds each catalog commit attempt (--commit-timeout); 0 is
	// DefaultCommitTimeout.
	CommitTimeout time.Duration

	// ManifestMergeMinCount (--manifest-merge-min-count) turns on iceberg-go's manifest merge in
	// every table siglake creates and commits to (MergeProps): appends merge the bin holding the
	// new manifest once it has this many manifests, so metadata stops growing with every commit.
	// 0 leaves the tables' own settings alone.
	ManifestMergeMinCount int

	// WatchFull, when set, sees every wait for a full catalog from Open on, the namespace check
	// at open included (Lake.WatchFull replaces it later).
	WatchFull func(FullEvent)
}

// Lake is an open catalog plus the namespace siglake's tables live in.
type Lake struct {
	// cat is the opened catalog behind the commit deadline.
	cat *deadline.Catalog
	ns  table.Identifier
	// ioProps are the FileIO properties (S3 endpoint, credentials) for the warehouse.
	ioProps   iceberg.Properties
	warehouse string
	// closeIdle releases the REST catalog's pooled connections (catalogs.Open); nil for the SQL
	// catalogs.
	closeIdle func()
	// locks serialise the commit attempts of each table in this process (lockTable).
	locks tableLocks
	// mergeMinCount is Config.ManifestMergeMinCount.
	mergeMinCount int
	// full sees every wait for a catalog with no connection left (WatchFull).
	full atomic.Pointer[func(FullEvent)]
}

// Open connects to the catalog named by cfg.Catalog and makes sure the namespace exists.
func Open(ctx context.Context, cfg Config) (*Lake, error) {
	warehouse, err := warehouseURI(cfg.Warehouse)
	if err != nil {
		return nil, fmt.Errorf("%w: --warehouse / SIGLAKE_WAREHOUSE: %w", catalogs.ErrBadConfig, err)
	}
	ioProps := iceberg.Properties{}
	if strings.HasPrefix(warehouse, "s3://") {
		if cfg.S3Endpoint != "" {
			ioProps[icebergio.S3EndpointURL] = cfg.S3Endpoint
		}
		if cfg.S3Region != "" {
			ioProps[icebergio.S3Region] = cfg.S3Region
		}
		if cfg.S3AccessKey != "" {
			ioProps[icebergio.S3AccessKeyID] = cfg.S3AccessKey
			ioProps[icebergio.S3SecretAccessKey] = cfg.S3SecretKey
		}
		if cfg.S3PathStyle {
			ioProps[icebergio.S3ForceVirtualAddressing] = "false"
		}
	}

	// Opening the SQL catalog connects (it creates its tables): a full catalog is waited out here
	// as on every later call, each wait reported as op "open".
	opening := &fullWait{op: "open", limit: cmp.Or(cfg.CommitTimeout, deadline.DefaultCommitTimeout), watch: cfg.WatchFull}
	var cat catalog.Catalog
	var closeIdle func()
	for {
		cat, closeIdle, err = catalogs.Open(ctx, cfg.Catalog, warehouse, ioProps)
		if err == nil {
			break
		}
		if !opening.again(ctx, err) {
			return nil, err
		}
	}
	l := &Lake{cat: deadline.New(cat, cfg.CommitTimeout), ns: table.Identifier{cfg.Namespace}, ioProps: ioProps, warehouse: warehouse, closeIdle: closeIdle,
		mergeMinCount: cfg.ManifestMergeMinCount}
	l.WatchFull(cfg.WatchFull)
	// The first query may be the first connection (database/sql connects lazily).
	if err := l.ensureNamespace(ctx); err != nil {
		l.Close()
		return nil, catalogs.OpenError(cfg.Catalog, err)
	}
	return l, nil
}

// Catalog exposes the underlying catalog (for tools such as inspect and tests).
func (l *Lake) Catalog() catalog.Catalog { return l.cat }

// WrapCatalog replaces the catalog with wrap(catalog), inside the commit deadline (which stays
// outermost, so a wrapped commit that stalls is abandoned like a real one). Fault-injection tests
// use it (a commit whose response is lost); production code never does.
func (l *Lake) WrapCatalog(wrap func(catalog.Catalog) catalog.Catalog) {
	l.cat.Catalog = wrap(l.cat.Catalog)
}

// ManifestMergeMinCount is Config.ManifestMergeMinCount: MergeProps' argument.
func (l *Lake) ManifestMergeMinCount() int { return l.mergeMinCount }

// CommitTimeout is the deadline each catalog commit attempt runs under.
func (l *Lake) CommitTimeout() time.Duration { return l.cat.Timeout() }

// SetCommitTimeout changes the commit deadline (0: deadline.DefaultCommitTimeout) for the
// commits that start from now on.
func (l *Lake) SetCommitTimeout(d time.Duration) { l.cat.SetTimeout(d) }

// WatchCommits makes watch see every commit attempt's events (deadline.Catalog.Watch); nil stops it.
func (l *Lake) WatchCommits(watch func(deadline.CommitEvent)) { l.cat.Watch(watch) }

// AbandonedInFlight is the number of abandoned commit attempts still in flight.
func (l *Lake) AbandonedInFlight() int { return l.cat.AbandonedInFlight() }

// Namespace is the namespace siglake's tables live in.
func (l *Lake) Namespace() string { return l.ns[0] }

// Close releases the catalog's connections.
func (l *Lake) Close() error {
	if l.closeIdle != nil {
		defer l.closeIdle()
	}
	return l.cat.Close()
}

// Ping checks the catalog answers; /readyz reports its result.
func (l *Lake) Ping(ctx context.Context) error {
	if _, err := l.cat.CheckNamespaceExists(ctx, l.ns); err != nil {
		return fmt.Errorf("catalog unreachable: %w", err)
	}
	return nil
}

// Ident is the identifier of table name in siglake's namespace.
func (l *Lake) Ident(name string) table.Identifier { return table.Identifier{l.ns[0], name} }

// LoadTable loads a table by name; errors wrap catalog.ErrNoSuchTable when it does not exist.
func (l *Lake) LoadTable(ctx context.Context, name string) (*table.Table, error) {
	t, err := untilNotFull(ctx, l, "load", func() (*table.Table, error) { return l.cat.LoadTable(ctx, l.Ident(name)) })
	if err != nil {
		return nil, fmt.Errorf("load table %s.%s: %w", l.ns[0], name, err)
	}
	return t, nil
}

// ListTables lists siglake's tables by name.
func (l *Lake) ListTables(ctx context.Context) ([]string, error) {
	var out []string
	for id, err := range l.cat.ListTables(ctx, l.ns) {
		if err != nil {
			return nil, fmt.Errorf("list tables in %s: %w", l.ns[0], err)
		}
		out = append(out, id[len(id)-1])
	}
	return out, nil
}

func (l *Lake) ensureNamespace(ctx context.Context) error {
	ok, err := untilNotFull(ctx, l, "open", func() (bool, error) { return l.cat.CheckNamespaceExists(ctx, l.ns) })
	if err != nil {
		return fmt.Errorf("check namespace %s: %w", l.ns[0], err)
	}
	if ok {
		return nil
	}
	if err := l.cat.CreateNamespace(ctx, l.ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("create namespace %s: %w", l.ns[0], err)
	}
	return nil
}

// warehouseURI turns the warehouse option into a URI iceberg-go's FileIO registry understands.
func warehouseURI(w string) (string, error) {
	switch {
	case strings.HasPrefix(w, "s3://"):
		u, err := url.Parse(w)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("warehouse %q: want s3://bucket/prefix", w)
		}
		return strings.TrimRight(w, "/"), nil
	case strings.HasPrefix(w, "file://"):
		return strings.TrimRight(w, "/"), nil
	case strings.Contains(w, "://"):
		return "", fmt.Errorf("warehouse %q: accepted forms are a local path, file://PATH, s3://bucket/prefix", w)
	case w == "":
		return "", errors.New("warehouse is empty: accepted forms are a local path, file://PATH, s3://bucket/prefix")
	}
	abs, err := filepath.Abs(w)
	if err != nil {
		return "", err
	}
	return "file://" + abs, nil
}
