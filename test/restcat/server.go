// Package restcat is an Iceberg REST catalog server for tests: the endpoints of the Apache Iceberg
// REST Catalog OpenAPI spec (open-api/rest-catalog-open-api.yaml, info.version 0.0.1) that
// siglake and iceberg-go's REST client use, on 127.0.0.1, backed by iceberg-go's SQL catalog on a
// SQLite file, with fault knobs (faults.go) for the failure modes a REST catalog shows a client:
// a commit applied whose answer is a 503 or a cut connection, a 409 for a concurrent commit, a 429
// with Retry-After, added latency.
//
// It is assembled from iceberg-go's exported pieces: its SQL catalog does the catalog work (the
// requirement checks, the metadata builder, the atomic swap of the metadata location), its JSON
// decoders read the requests (table.Requirements, table.Updates, iceberg.Schema,
// iceberg.UnboundPartitionSpec, table.UnboundSortOrder) and its metadata types encode the
// answers. This package only routes, maps errors to the spec's status codes and error bodies, and
// injects faults. No REST catalog server can be installed on the machines the tests run on, so
// this stands in for one; what a real server does differently is listed in docs/testing.md.
package restcat

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// warehouses (versitygw in the e2e tests)
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite" // pure-Go SQLite, as siglake's embedded catalog uses
)

// SpecVersion names the REST spec this server follows: the info.version of
// open-api/rest-catalog-open-api.yaml in apache/iceberg. That version has stayed 0.0.1 while the
// spec grew; the endpoints and error bodies followed here are those of the file at apache/iceberg
// commit 00342e565ac0.
const SpecVersion = "0.0.1"

// Config says where the server keeps its catalog and where new tables go.
type Config struct {
	// Warehouse is the location of new tables: file:///PATH or s3://bucket/prefix.
	Warehouse string
	// IO are the FileIO properties the server writes table metadata with (for s3://: s3.endpoint,
	// s3.access-key-id, ...). They are never sent to clients: a client brings its own.
	IO iceberg.Properties
	// Dir holds the SQLite catalog file; empty means a new temporary directory, removed by Close.
	Dir string
	// Port to listen on (on 127.0.0.1 only); 0 picks a free one.
	Port int
}

// Server is a running REST catalog.
type Server struct {
	// URL is the catalog's base URI, http://127.0.0.1:PORT (siglake: --catalog rest+URL).
	URL string

	cat     *sqlcat.Catalog
	db      *sql.DB
	srv     *http.Server
	ln      net.Listener
	tempDir string
	ctx     context.Context
	cancel  context.CancelFunc

	requests sync.Map // operationId -> *atomic.Int64
	faults   faultState
}

// Start starts a server on 127.0.0.1.
func Start(cfg Config) (*Server, error) {
	if cfg.Warehouse == "" {
		return nil, errors.New("restcat: Config.Warehouse is empty")
	}
	s := &Server{}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "restcat-")
		if err != nil {
			return nil, err
		}
		dir, s.tempDir = d, d
	}
	dsn := "file:" + filepath.Join(dir, "catalog.db") + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		s.cleanup()
		return nil, err
	}
	s.db = db
	props := iceberg.Properties{"warehouse": strings.TrimRight(cfg.Warehouse, "/"), "init_catalog_tables": "true"}
	for k, v := range cfg.IO {
		props[k] = v
	}
	if s.cat, err = sqlcat.NewCatalog("restcat", db, sqlcat.SQLite, props); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("restcat: open the SQL catalog: %w", err)
	}
	if s.ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port))); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("restcat: listen: %w", err)
	}
	s.URL = "http://" + s.ln.Addr().String()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.faults.init()
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return s.ctx }}
	go s.srv.Serve(s.ln)
	return s, nil
}

// Close stops the server (open connections are dropped) and releases the catalog.
func (s *Server) Close() error {
	err := s.srv.Close()
	s.cancel()
	s.cleanup()
	return err
}

func (s *Server) cleanup() {
	if s.cat != nil {
		_ = s.cat.Close()
	}
	if s.db != nil {
		_ = s.db.Close()
	}
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir)
	}
}

// Catalog is the SQL catalog behind the server: a test reads the truth there, past the faults.
func (s *Server) Catalog() catalog.Catalog { return s.cat }

// Requests returns how many requests each operation got, by the spec's operationId
// (getConfig, loadTable, updateTable, ...).
func (s *Server) Requests() map[string]int64 {
	out := map[string]int64{}
	s.requests.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// endpoints are the routes the server implements, advertised in the config response so a client
// calls nothing else (iceberg-go then also uses the HEAD existence checks).
var endpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"POST /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"DELETE /v1/{prefix}/namespaces/{namespace}",
	"POST /v1/{prefix}/namespaces/{namespace}/properties",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"POST /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/tables/rename",
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern, op string, h func(w http.ResponseWriter, r *http.Request)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			v, _ := s.requests.LoadOrStore(op, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
			if err := s.faults.delay(r.Context()); err != nil {
				return
			}
			h(w, r)
		})
	}
	handle("GET /v1/config", "getConfig", s.getConfig)
	handle("GET /v1/namespaces", "listNamespaces", s.listNamespaces)
	handle("POST /v1/namespaces", "createNamespace", s.createNamespace)
	handle("GET /v1/namespaces/{namespace}", "loadNamespaceMetadata", s.loadNamespace)
	handle("HEAD /v1/namespaces/{namespace}", "namespaceExists", s.namespaceExists)
	handle("DELETE /v1/namespaces/{namespace}", "dropNamespace", s.dropNamespace)
	handle("POST /v1/namespaces/{namespace}/properties", "updateProperties", s.updateProperties)
	handle("GET /v1/namespaces/{namespace}/tables", "listTables", s.listTables)
	handle("POST /v1/namespaces/{namespace}/tables", "createTable", s.createTable)
	handle("GET /v1/namespaces/{namespace}/tables/{table}", "loadTable", s.loadTable)
	handle("HEAD /v1/namespaces/{namespace}/tables/{table}", "tableExists", s.tableExists)
	handle("POST /v1/namespaces/{namespace}/tables/{table}", "updateTable", s.updateTable)
	handle("DELETE /v1/namespaces/{namespace}/tables/{table}", "dropTable", s.dropTable)
	handle("POST /v1/tables/rename", "renameTable", s.renameTable)
	handle("/", "unsupported", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotImplemented, "NotImplementedException",
			fmt.Sprintf("restcat does not implement %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// --- wire helpers ---------------------------------------------------------------------------

// errorModel is the spec's IcebergErrorResponse: {"error": ErrorModel}.
type errorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalServerError", "encode response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, struct {
		Error errorModel `json:"error"`
	}{errorModel{Message: msg, Type: typ, Code: status}})
}

// writeCatalogError answers err of a non-commit operation with the spec's status and error type.
func writeCatalogError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable):
		writeError(w, http.StatusNotFound, "NoSuchTableException", err.Error())
	case errors.Is(err, catalog.ErrNoSuchNamespace):
		writeError(w, http.StatusNotFound, "NoSuchNamespaceException", err.Error())
	case errors.Is(err, catalog.ErrTableAlreadyExists), errors.Is(err, catalog.ErrNamespaceAlreadyExists),
		errors.Is(err, catalog.ErrViewAlreadyExists):
		writeError(w, http.StatusConflict, "AlreadyExistsException", err.Error())
	case errors.Is(err, catalog.ErrNamespaceNotEmpty):
		writeError(w, http.StatusConflict, "NamespaceNotEmptyException", err.Error())
	case errors.Is(err, catalog.ErrInvalidIdentifier), errors.Is(err, iceberg.ErrInvalidArgument):
		writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
	}
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20))
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", "malformed request body: "+err.Error())
		return false
	}
	return true
}

// namespace decodes the {namespace} path parameter: levels joined by the unit separator 0x1F
// (the spec's default namespace-separator, %1F on the wire; ServeMux has unescaped it).
func namespace(r *http.Request) table.Identifier {
	return strings.Split(r.PathValue("namespace"), "\x1f")
}

func tableIdent(r *http.Request) table.Identifier {
	return append(namespace(r), r.PathValue("table"))
}

type wireIdent struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

func (i wireIdent) ident() table.Identifier { return append(slices.Clone(i.Namespace), i.Name) }

// page cuts a sorted listing by the pageToken (an offset this server handed out) and pageSize
// query parameters, returning the next token ("" on the last page).
func page[T any](w http.ResponseWriter, r *http.Request, all []T) ([]T, *string, bool) {
	q := r.URL.Query()
	start := 0
	if tok := q.Get("pageToken"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(all) {
			writeError(w, http.StatusBadRequest, "BadRequestException", "invalid pageToken "+strconv.Quote(tok))
			return nil, nil, false
		}
		start = n
	}
	end := len(all)
	if sz := q.Get("pageSize"); sz != "" {
		n, err := strconv.Atoi(sz)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "BadRequestException", "invalid pageSize "+strconv.Quote(sz))
			return nil, nil, false
		}
		end = min(end, start+n)
	}
	if end == len(all) {
		return all[start:end], nil, true
	}
	next := strconv.Itoa(end)
	return all[start:end], &next, true
}

func less(a, b table.Identifier) int { return slices.Compare(a, b) }

// --- configuration and namespaces ------------------------------------------------------------

func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"defaults":  map[string]string{},
		"overrides": map[string]string{},
		"endpoints": endpoints,
	})
}

func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) {
	var parent table.Identifier
	if p := r.URL.Query().Get("parent"); p != "" {
		parent = strings.Split(p, "\x1f")
	}
	all, err := s.cat.ListNamespaces(r.Context(), parent)
	if err != nil {
		writeCatalogError(w, err)
		return
	}
	// The spec lists one level: the direct children of parent (top-level ones without it).
	var level []table.Identifier
	for _, ns := range all {
		if len(ns) <= len(parent) {
			continue
		}
		child := slices.Clone(ns[:len(parent)+1])
		if !slices.ContainsFunc(level, func(l table.Identifier) bool { return slices.Equal(l, child) }) {
			level = append(level, child)
		}
	}
	slices.SortFunc(level, less)
	out, next, ok := page(w, r, level)
	if !ok {
		return
	}
	if out == nil {
		out = []table.Identifier{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": out, "next-page-token": next})
}

func (s *Server) createNamespace(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Namespace  []string           `json:"namespace"`
		Properties iceberg.Properties `json:"properties"`
	}
	if !decode(w, r, &req) {
		return
	}
	if err := s.cat.CreateNamespace(r.Context(), req.Namespace, req.Properties); err != nil {
		writeCatalogError(w, err)
		return
	}
	props, err := s.cat.LoadNamespaceProperties(r.Context(), req.Namespace)
	if err != nil {
		writeCatalogError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespace": req.Namespace, "properties": props})
}

func (s *Server) loadNamespace(w http.ResponseWriter, r *http.Request) {
	ns := namespace(r)
	props, err := s.cat.LoadNamespaceProperties(r.Context(), ns)
	if err != nil {
		writeCatalogError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespace": ns, "properties": props})
}

func (s *Server) namespaceExists(w http.ResponseWriter, r *http.Request) {
	ok, err := s.cat.CheckNamespaceExists(r.Context(), namespace(r))
	switch {
	case err != nil:
		writeCatalogError(w, err)
	case !ok:
		w.WriteHeader(http.StatusNotFound)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) dropNamespace(w http.ResponseWriter, r *http.Request) {
	if err := s.cat.DropNamespace(r.Context(), namespace(r)); err != nil {
		writeCatalogError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) updateProperties(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Removals []string           `json:"removals"`
		Updates  iceberg.Properties `json:"updates"`
	}
	if !decode(w, r, &req) {
		return
	}
	sum, err := s.cat.UpdateNamespaceProperties(r.Context(), namespace(r), req.Removals, req.Updates)
	if err != nil {
		writeCatalogError(w, err)
		return
	}
	for _, p := range []*[]string{&sum.Updated, &sum.Removed, &sum.Missing} {
		if *p == nil {
			*p = []string{}
		}
	}
	writeJSON(w, http.StatusOK, sum)
}

// --- tables --------------------------------------------------------------------------------

func (s *Server) listTables(w http.ResponseWriter, r *http.Request) {
	ns := namespace(r)
	var all []table.Identifier
	for id, err := range s.cat.ListTables(r.Context(), ns) {
		if err != nil {
			writeCatalogError(w, err)
			return
		}
		all = append(all, id)
	}
	slices.SortFunc(all, less)
	ids, next, ok := page(w, r, all)
	if !ok {
		return
	}
	out := make([]wireIdent, 0, len(ids))
	for _, id := range ids {
		out = append(out, wireIdent{Namespace: id[:len(id)-1], Name: id[len(id)-1]})
	}
	writeJSON(w, http.StatusOK, map[string]any{"identifiers": out, "next-page-token": next})
}

// loadTableResult is the spec's LoadTableResult (and, without config, CommitTableResponse).
// The metadata goes out through iceberg-go's own encoder of table metadata.
type loadTableResult struct {
	MetadataLocation string             `json:"metadata-location"`
	Metadata         table.Metadata     `json:"metadata"`
	Config           iceberg.Properties `json:"config,omitempty"`
}

func (s *Server) createTable(w http.ResponseWriter, r *http.Request) {
	// CreateTableRequest. The spec and order refer to the request schema's field ids, so they are
	// decoded unbound and bound by iceberg-go's table.NewMetadata (inside the SQL catalog).
	var req struct {
		Name          string                        `json:"name"`
		Location      string                        `json:"location"`
		Schema        *iceberg.Schema               `json:"schema"`
		PartitionSpec *iceberg.UnboundPartitionSpec `json:"partition-spec"`
		WriteOrder    *table.UnboundSortOrder       `json:"write-order"`
		StageCreate   bool                          `json:"stage-create"`
		Properties    iceberg.Properties            `json:"properties"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.Name == "" || req.Schema == nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", "create table needs a name and a schema")
		return
	}
	if req.StageCreate {
		writeError(w, http.StatusNotAcceptable, "UnsupportedOperationException", "restcat does not stage creates")
		return
	}
	opts := []catalog.CreateTableOpt{catalog.WithProperties(req.Properties)}
	if req.Location != "" {
		opts = append(opts, catalog.WithLocation(req.Location))
	}
	if req.PartitionSpec != nil {
		opts = append(opts, catalog.WithPartitionSpec(&req.PartitionSpec.PartitionSpec))
	}
	if req.WriteOrder != nil {
		opts = append(opts, catalog.WithSortOrder(req.WriteOrder.SortOrder))
	}
	t, err := s.cat.CreateTable(r.Context(), append(namespace(r), req.Name), req.Schema, opts...)
	if err != nil {
		writeCatalogError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, loadTableResult{MetadataLocation: t.MetadataLocation(), Metadata: t.Metadata(), Config: iceberg.Properties{}})
}

func (s *Server) loadTable(w http.ResponseWriter, r *http.Request) {
	t, err := s.cat.LoadTable(r.Context(), tableIdent(r))
	if err != nil {
		writeCatalogError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, loadTableResult{MetadataLocation: t.MetadataLocation(), Metadata: t.Metadata(), Config: iceberg.Properties{}})
}

func (s *Server) tableExists(w http.ResponseWriter, r *http.Request) {
	ok, err := s.cat.CheckTableExists(r.Context(), tableIdent(r))
	switch {
	case err != nil && errors.Is(err, catalog.ErrNoSuchNamespace):
		w.WriteHeader(http.StatusNotFound)
	case err != nil:
		writeCatalogError(w, err)
	case !ok:
		w.WriteHeader(http.StatusNotFound)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) dropTable(w http.ResponseWriter, r *http.Request) {
	id := tableIdent(r)
	var err error
	if purge, _ := strconv.ParseBool(r.URL.Query().Get("purgeRequested")); purge {
		err = s.cat.PurgeTable(r.Context(), id)
	} else {
		err = s.cat.DropTable(r.Context(), id)
	}
	if err != nil {
		writeCatalogError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) renameTable(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Source      wireIdent `json:"source"`
		Destination wireIdent `json:"destination"`
	}
	if !decode(w, r, &req) {
		return
	}
	if _, err := s.cat.RenameTable(r.Context(), req.Source.ident(), req.Destination.ident()); err != nil {
		writeCatalogError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// updateTable is the commit: CommitTableRequest in, CommitTableResponse out. Requirements and
// updates are decoded by iceberg-go (an unknown one is a 400, as the spec requires) and applied by
// its SQL catalog, which checks the requirements against the current metadata and swaps the
// metadata location atomically. The faults act here (faults.go).
func (s *Server) updateTable(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Identifier   *wireIdent         `json:"identifier"`
		Requirements table.Requirements `json:"requirements"`
		Updates      table.Updates      `json:"updates"`
	}
	if !decode(w, r, &req) {
		return
	}
	id := tableIdent(r)
	if req.Identifier != nil && !slices.Equal(req.Identifier.ident(), id) {
		writeError(w, http.StatusBadRequest, "BadRequestException",
			fmt.Sprintf("identifier %v in the body differs from %v in the path", req.Identifier.ident(), id))
		return
	}
	// A commit to a table that does not exist would create it in the SQL catalog; the spec's
	// updateTable answers 404 unless the commit asserts create (staged creates, unsupported here).
	if ok, err := s.cat.CheckTableExists(r.Context(), id); err != nil || !ok {
		if err == nil || errors.Is(err, catalog.ErrNoSuchNamespace) {
			err = fmt.Errorf("%w: %v", catalog.ErrNoSuchTable, id)
		}
		writeCommitError(w, err)
		return
	}
	fault, queued := s.faults.pick(id[len(id)-1])
	if fault.refuses() {
		s.faults.refuse(w, fault)
		return
	}
	held := ""
	if fault == HoldBeforeApply || fault == ApplyThenHold {
		b, _ := json.Marshal(req.Updates)
		held = string(b)
	}
	if fault == HoldBeforeApply && !s.faults.hold(r.Context(), fault, held) {
		return // the client went away: nothing applied
	}
	meta, loc, err := s.cat.CommitTable(r.Context(), id, req.Requirements, req.Updates)
	if err != nil {
		s.faults.unfired(fault, queued)
		writeCommitError(w, err)
		return
	}
	if fault == ApplyThenHold {
		s.faults.hold(r.Context(), fault, held)
		s.faults.cut(w)
		return
	}
	if fault == ApplyThen503 || fault == ApplyThenCut {
		s.faults.afterApply(w, fault)
		return
	}
	writeJSON(w, http.StatusOK, loadTableResult{MetadataLocation: loc, Metadata: meta})
}

// writeCommitError answers a failed commit: a failed requirement or a lost swap is the spec's 409
// CommitFailedException (nothing was committed; the client may retry on fresh metadata), an
// update the metadata builder refuses is a 400, and anything else is a 500
// CommitStateUnknownException, as the spec has it: the server cannot say whether it committed.
func writeCommitError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable), errors.Is(err, catalog.ErrNoSuchNamespace):
		writeError(w, http.StatusNotFound, "NoSuchTableException", err.Error())
	case errors.Is(err, table.ErrCommitFailed), strings.Contains(err.Error(), "requirement failed"):
		// iceberg-go's requirements fail with a plain "requirement failed: ..." error.
		writeError(w, http.StatusConflict, "CommitFailedException", err.Error())
	case errors.Is(err, iceberg.ErrInvalidArgument), errors.Is(err, table.ErrInvalidRequirement):
		writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "CommitStateUnknownException", err.Error())
	}
}
