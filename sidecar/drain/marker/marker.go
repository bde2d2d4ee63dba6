// Package marker is the drain's in-flight marker: a hidden file in a WAL dir that says a batch
// of one table is in flight, so that the next process to drain the dir knows the run before was
// killed mid-batch and which data files it may have left uncommitted.
//
// A marker is written before the batch's files, rewritten with their locations once they are
// written, and removed when the batch returns (committed, failed or stopped cleanly). The WAL
// scan skips dot files. Exactly-once does not need markers (the stream mark and the segments
// decide); they tell the operator, and count the files an interrupted batch left for gc.
package marker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Prefix starts every marker's file name: Prefix + table + ".json".
const Prefix = ".inflight-"

// Marker is a marker's content.
type Marker struct {
	Table string `json:"table"`
	// Node is the process that ran the batch (--node-name): with catalog claims a stream, and its
	// markers, pass between processes. Empty in markers older than the field.
	Node    string    `json:"node,omitempty"`
	Started time.Time `json:"started"`
	PID     int       `json:"pid"`
	// Files are the data files the batch wrote, once written (empty: killed before or while writing).
	Files []string `json:"files,omitempty"`
	// HandedOff: the batch's commit went to a group committer, which may commit the files after
	// the kill (they are orphans only once gc's floor passes).
	HandedOff bool `json:"handed_off,omitempty"`
}

// Path is the marker file of table in dir.
func Path(dir, table string) string { return filepath.Join(dir, Prefix+table+".json") }

// Write records m in dir, replacing its marker atomically (a torn marker would read as another
// table's). writeFile writes the new content beside it (os.WriteFile; tests make it fail).
func Write(dir string, m Marker, writeFile func(string, []byte, os.FileMode) error) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	p := Path(dir, m.Table)
	tmp := p + ".tmp"
	if err := writeFile(tmp, raw, 0o644); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("record batch in flight: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("record batch in flight: %w", err)
	}
	return nil
}

// Remove removes table's marker in dir: its batch returned.
func Remove(dir, table string) { _ = os.Remove(Path(dir, table)) }

// Read returns the markers in dir and removes marker writes that never finished (killed, or a
// full disk). A marker that cannot be read still names its table, from its file name. The
// markers stay until the caller has reported them and calls Remove: a kill before that leaves
// them for the next start to report.
func Read(dir string) []Marker {
	tmps, _ := filepath.Glob(filepath.Join(dir, Prefix+"*.json.tmp"))
	for _, p := range tmps {
		_ = os.Remove(p)
	}
	names, _ := filepath.Glob(filepath.Join(dir, Prefix+"*.json"))
	var out []Marker
	for _, p := range names {
		raw, err := os.ReadFile(p)
		var m Marker
		if err == nil {
			err = json.Unmarshal(raw, &m)
		}
		if err != nil || m.Table == "" {
			m.Table = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), Prefix), ".json")
		}
		out = append(out, m)
	}
	return out
}
