package demo

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// demoEntry reports whether name is something `siglake demo` writes at the top of its directory:
// the WAL, the embedded catalog (and SQLite's side files), the warehouse, the live-file lists and
// the running sidecar's address.
func demoEntry(name string) bool {
	switch name {
	case "wal", "warehouse", addrFile, "catalog.db", "catalog.db-journal", "catalog.db-wal", "catalog.db-shm":
		return true
	}
	return strings.HasSuffix(name, ".live-files.txt")
}

// prepareDir makes dir ready for a run. A new or empty directory is used as is. A directory that
// holds only what an earlier demo wrote (its catalog among it) is cleared, since the summary checks
// the tables against this run's rows alone; the returned note says so. Anything else is refused:
// a demo never removes what it did not write, nor the lake of a demo sidecar that still runs.
func prepareDir(dir string) (note string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return "", os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return "", fmt.Errorf("--dir %s: %w", dir, err)
	}
	var foreign []string
	hasCatalog := false
	for _, e := range entries {
		if !demoEntry(e.Name()) {
			foreign = append(foreign, e.Name())
		}
		hasCatalog = hasCatalog || e.Name() == "catalog.db"
	}
	if len(foreign) > 0 || !hasCatalog {
		sort.Strings(foreign)
		what := "no demo catalog (catalog.db)"
		if len(foreign) > 0 {
			what = "entries a demo does not write: " + strings.Join(head(foreign, 5), ", ")
		}
		return "", fmt.Errorf("--dir %s is not empty and holds %s; the demo starts only in a new or empty directory or one an earlier demo wrote: give another with --dir", dir, what)
	}
	if addr, err := RunningAddr(dir); err == nil && answers(addr) {
		return "", fmt.Errorf("--dir %s: a demo sidecar still runs on it (HTTP %s; stop it with Ctrl-C), or give another directory with --dir", dir, addr)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return "", fmt.Errorf("--dir %s: clear the earlier demo: %w", dir, err)
		}
	}
	return fmt.Sprintf("%s held an earlier demo's WAL, catalog and warehouse (nothing else): removed them to start fresh", dir), nil
}

// answers reports whether something listens on addr.
func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func head(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... (%d more)", len(s)-n))
	}
	return s
}
