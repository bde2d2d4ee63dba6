package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rows"
)

// runTail is `siglake tail TABLE [--where COL=V] [--in COL=V1,V2] [--from T] [--to T] [--columns A,B]
// [-n N] [--since D] [--follow] [--buffer ADDR,...] [--json] [compactor options]`: the newest rows
// of the lake plus the WAL buffer, without duplicates (docs/wal-buffer.md).
func runTail(args []string) error {
	fs := flag.NewFlagSet("siglake tail", flag.ContinueOnError)
	withSynopsis(fs, "siglake tail TABLE [--where COL=V]... [--in COL=V1,V2]... [--from T] [--to T] [--columns A,B] [-n N] [--since DURATION] [--follow] [--buffer ADDR,...] [--json] [--dir DIR | catalog options]")
	var where, in multiFlag
	fs.Var(&where, "where", "`COLUMN=VALUE`: only rows whose column equals the value (repeatable; ANDed)")
	fs.Var(&in, "in", "`COLUMN=V1,V2,...`: only rows whose column is one of the values (repeatable)")
	from := fs.String("from", "", "only rows with timestamp >= this (RFC 3339 or YYYY-MM-DD, UTC)")
	to := fs.String("to", "", "only rows with timestamp < this (RFC 3339 or YYYY-MM-DD, UTC)")
	columns := fs.String("columns", "", "columns to print, comma-separated (default: all)")
	lines := fs.Int("n", 20, "how many of the newest rows to print first")
	since := durationFlag(fs, "since", time.Hour, true, "look this far back for them (0: the whole table)")
	follow := fs.Bool("follow", false, "keep printing rows as they are sealed, until interrupted")
	interval := durationFlag(fs, "interval", time.Second, false, "with --follow, how often to poll the WAL buffers")
	bufs := fs.String("buffer", "", "WAL buffer addresses, comma-separated host:port or https://host:port (a name with several addresses, such as a headless Service, means every pod); \"none\" reads the lake only (default: --buffer-addr / SIGLAKE_BUFFER_ADDR, else 127.0.0.1:"+strconv.Itoa(reader.DefaultPort)+")")
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
	q := reader.Query{Filter: rows.Filter{From: *from, To: *to}}
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
		addr = defaultBufferAddr(cfg)
	}
	clients, err := tailBuffers(ctx, cfg, addr)
	if err != nil {
		return err
	}
	if clients == nil && *follow {
		return fmt.Errorf("--follow needs a WAL buffer (--buffer)")
	}
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		return err
	}
	defer l.Close()
	missing, err := tailCheckTable(ctx, l, tbl, q.Columns)
	if err != nil {
		return err
	}
	if missing != nil && clients == nil {
		return missing
	}
	load := func(ctx context.Context) (*table.Table, error) {
		t, err := l.LoadTable(ctx, tbl)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return nil, nil // not committed yet: the buffer may still hold rows
		}
		return t, err
	}
	o := reader.TailOptions{Table: tbl, Query: q, Lines: *lines, Since: *since, Follow: *follow, Interval: *interval, JSON: *asJSON, Attempts: 5}
	if missing == nil || *follow {
		return reader.Tail(ctx, load, clients, o, os.Stdout, os.Stderr)
	}
	return tailUnknownTable(func(out, errOut io.Writer) error { return reader.Tail(ctx, load, clients, o, out, errOut) }, missing)
}

// tailUnknownTable runs tail (without --follow) for a table the catalog lacks. The buffers'
// warnings are about a known table: they are held back and dropped when no buffer had rows
// either, so the unknown-table error (missing) stands alone.
func tailUnknownTable(tail func(out, errOut io.Writer) error, missing error) error {
	out := &countingWriter{w: os.Stdout}
	var held bytes.Buffer
	err := tail(out, &held)
	// A refused reader learns why (the token or certificate option), not that the table is unknown:
	// a table not committed yet is known only to the buffers it could not read.
	var refused *reader.StatusError
	if errors.As(err, &refused) && (refused.Code == http.StatusUnauthorized || refused.Code == http.StatusForbidden) {
		_, _ = os.Stderr.Write(held.Bytes())
		return err
	}
	if err != nil || out.n == 0 {
		return missing
	}
	_, _ = os.Stderr.Write(held.Bytes())
	return err
}

// tailBuffers connects to the WAL buffers at addr (comma-separated; nil for "none") with the
// sidecar's own token and TLS options, so that in its pod `siglake tail` needs no more than it has.
func tailBuffers(ctx context.Context, cfg config.Config, addr string) (reader.Buffers, error) {
	if addr == "none" {
		return nil, nil
	}
	token, err := reader.ReadToken(cfg.BufferTokenFile)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := reader.ClientTLS(cfg.BufferTLSCAFile, cfg.BufferTLSCertFile, cfg.BufferTLSKeyFile)
	if err != nil {
		return nil, err
	}
	var hc *http.Client
	if tlsCfg != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tlsCfg
		hc = &http.Client{Transport: tr}
	}
	if w := plainTokenWarning(strings.Split(addr, ","), token); w != "" {
		fmt.Fprintln(os.Stderr, w)
	}
	clients, err := reader.Resolve(ctx, strings.Split(addr, ","), hc)
	if err != nil {
		return nil, err
	}
	clients.WithToken(token)
	return clients, nil
}

// tailCheckTable returns missing, the error for a table the catalog does not have (which may
// still have rows in a WAL buffer before its first commit; when no buffer holds any either, it is
// most often a typo), and refuses a column the table lacks, which would be left out of the rows
// without a word.
func tailCheckTable(ctx context.Context, l *lake.Lake, tbl string, columns []string) (missing, err error) {
	if have, err := l.ListTables(ctx); err == nil && !slices.Contains(have, tbl) {
		return noSuchTable(ctx, l, tbl), nil
	}
	t, err := l.LoadTable(ctx, tbl)
	if err != nil {
		return nil, nil
	}
	var names []string
	for _, f := range t.Schema().Fields() {
		names = append(names, f.Name)
	}
	for _, c := range columns {
		if !slices.Contains(names, c) {
			return nil, fmt.Errorf("--columns %q: table %s has no such column; its columns: %s", c, tbl, strings.Join(names, ", "))
		}
	}
	return nil, nil
}

// countingWriter counts what passes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// defaultBufferAddr is the address tail reads without --buffer: the sidecar's own listener from
// its options (https:// when it serves TLS), else loopback at the default port. A wildcard bind
// (0.0.0.0, ::, no host) is not an address to dial, and no certificate names it: tail in the
// sidecar's pod dials loopback on that port, which the chart's certificate must name.
func defaultBufferAddr(cfg config.Config) string {
	addr := cfg.BufferAddr
	if addr == "" {
		return "127.0.0.1:" + strconv.Itoa(reader.DefaultPort)
	}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		// 127.0.0.1 for "::" too: Go listens there on both families.
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
	}
	if cfg.BufferTLSCertFile != "" {
		addr = "https://" + addr // the sidecar's own listener, which serves TLS
	}
	return addr
}

// plainTokenWarning is the one warning tail prints when it would send a token over plain HTTP
// beyond loopback, where whoever sees the traffic can replay it; "" when it would not.
func plainTokenWarning(addrs []string, token string) string {
	if token == "" {
		return ""
	}
	var plain []string
	for _, a := range addrs {
		a = strings.TrimSpace(a)
		if strings.HasPrefix(a, "https://") {
			continue
		}
		if hp := strings.TrimPrefix(a, "http://"); !config.BufferLoopback(strings.TrimSuffix(hp, "/")) {
			plain = append(plain, a)
		}
	}
	if len(plain) == 0 {
		return ""
	}
	return "siglake tail: warning: sending the buffer token over plain HTTP to " + strings.Join(plain, ", ") +
		": whoever sees the traffic can replay it; use https://host:port (the sidecar's --buffer-tls-cert-file) and --buffer-tls-ca-file"
}
