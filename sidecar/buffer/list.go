package buffer

import (
	"encoding/json"
	"net/http"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/buffer/segments"
)

// tableBacklog is what waits for one table in GET /v1/buffer.
type tableBacklog struct {
	Segments         int   `json:"segments"`
	Bytes            int64 `json:"bytes"`
	RetainedSegments int   `json:"retained_segments"`
	RetainedBytes    int64 `json:"retained_bytes"`
}

// serveList answers GET /v1/buffer: per table, the sealed segments waiting and those retained.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request) {
	dirs, err := segments.Dirs(s.Cfg.WALDir, s.Cfg.Claims)
	if err != nil {
		writeError(w, &httpError{http.StatusServiceUnavailable, reader.ErrorBody{Error: err.Error()}})
		return
	}
	tables := map[string]*tableBacklog{}
	get := func(t string) *tableBacklog {
		if tables[t] == nil {
			tables[t] = &tableBacklog{}
		}
		return tables[t]
	}
	for _, dir := range dirs {
		segs, err := localwal.Scan(dir)
		if err != nil {
			writeError(w, &httpError{http.StatusServiceUnavailable, reader.ErrorBody{Error: err.Error()}})
			return
		}
		for _, g := range segs {
			b := get(g.Table)
			b.Segments++
			b.Bytes += g.Size
		}
		rs, _ := segments.ListRetained(dir, "")
		for _, g := range rs {
			t, _, _, _ := localwal.ParseSegmentName(g.Name)
			b := get(t)
			b.RetainedSegments++
			b.RetainedBytes += g.Size
		}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(map[string]any{"tables": tables})
}
