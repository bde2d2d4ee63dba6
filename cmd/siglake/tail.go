package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/buffer"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/lake"
)

// runTail is `siglake tail TABLE [--where COL=V] [--in COL=V1,V2] [--from T] [--to T] [--columns A,B]
// [-n N] [--since D] [--follow] [--buffer ADDR,...] [--json] [compactor options]`: the newest rows
// of the lake plus the WAL buffer, without duplicates (docs/wal-buffer.md).
func runTail(args []string) error {
	fs := flag.NewFlagSet("siglake tail", flag.ContinueOnError)
	var where, in multiFlag
	fs.Var(&where, "where", "COLUMN=VALUE: only rows whose column equals the value (repeatable; ANDed)")
	fs.Var(&in, "in", "COLUMN=V1,V2,...: only rows whose column is one of the values (repeatable)")
	from := fs.String("from", "", "only rows with timestamp >= this (RFC 3339 or YYYY-MM-DD, UTC)")
	to := fs.String("to", "", "only rows with timestamp < this (RFC 3339 or YYYY-MM-DD, UTC)")
	columns := fs.String("columns", "", "columns to print, comma-separated (default: all)")
	lines := fs.Int("n", 20, "how many of the newest rows to print first")
	since := fs.Duration("since", time.Hour, "look this far back for them (0: the whole table)")
	follow := fs.Bool("follow", false, "keep printing rows as they are sealed, until interrupted")
	interval := fs.Duration("interval", time.Second, "with --follow, how often to poll the WAL buffers")
	bufs := fs.String("buffer", "", "WAL buffer addresses, comma-separated host:port (a name with several addresses, such as a headless Service, means every pod); \"none\" reads the lake only (default: --buffer-addr / SIGLAKE_BUFFER_ADDR, else 127.0.0.1:"+strconv.Itoa(buffer.DefaultPort)+")")
	asJSON := fs.Bool("json", false, "print one JSON object per row")
	tbl := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		tbl, args = args[0], args[1:]
	}
	cfg, help, err := toolConfig(fs, args)
	if help || err != nil {
		return err
	}
	if tbl == "" {
		fmt.Fprintln(os.Stderr, "usage: siglake tail TABLE [flags]; see siglake tail -h")
		return usageError{errors.New("TABLE is required")}
	}
	q := buffer.Query{Filter: deletes.Request{From: *from, To: *to}}
	if q.Filter.Where, err = conditions(where, in); err != nil {
		return err
	}
	if _, _, err := q.Filter.Range(); err != nil {
		return err
	}
	q.Columns = columnList(*columns)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	addr := *bufs
	if addr == "" {
		addr = cfg.BufferAddr
	}
	if addr == "" {
		addr = "127.0.0.1:" + strconv.Itoa(buffer.DefaultPort)
	}
	var clients buffer.Buffers
	if addr != "none" {
		if clients, err = buffer.Resolve(ctx, strings.Split(addr, ","), nil); err != nil {
			return err
		}
	} else if *follow {
		return fmt.Errorf("--follow needs a WAL buffer (--buffer)")
	}
	l, err := lake.Open(ctx, sidecar.LakeConfig(cfg))
	if err != nil {
		return err
	}
	defer l.Close()
	load := func(ctx context.Context) (*table.Table, error) {
		t, err := l.LoadTable(ctx, tbl)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return nil, nil // not committed yet: the buffer may still hold rows
		}
		return t, err
	}
	// Without --follow a table nobody knows is an error that lists the tables: with --buffer none
	// no buffer can know it, else every buffer said so or none answered.
	if !*follow && len(clients) == 0 {
		t, err := load(ctx)
		if err != nil {
			return err
		}
		if t == nil {
			return unknownTable(ctx, l, tbl, nil)
		}
	}
	err = buffer.Tail(ctx, load, clients, buffer.TailOptions{Table: tbl, Query: q, Lines: *lines, Since: *since,
		Follow: *follow, Interval: *interval, JSON: *asJSON, Attempts: 5}, os.Stdout, os.Stderr)
	if err != nil && !*follow {
		if t, lerr := load(ctx); lerr == nil && t == nil {
			return unknownTable(ctx, l, tbl, err)
		}
	}
	return err
}

// unknownTable is the error for a table the catalog does not have, with the tables it has; cause
// is what the read said (no buffer knows it either, none answered), nil when none was asked.
func unknownTable(ctx context.Context, l *lake.Lake, tbl string, cause error) error {
	names, err := l.ListTables(ctx)
	if err != nil {
		return fmt.Errorf("table %s is not in the catalog (listing its tables: %v)", tbl, err)
	}
	list := "none"
	if len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	if cause != nil {
		return fmt.Errorf("%w; tables in the catalog: %s", cause, list)
	}
	return fmt.Errorf("table %s is not in the catalog; tables in the catalog: %s", tbl, list)
}
