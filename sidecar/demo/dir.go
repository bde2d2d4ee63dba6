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

// stampFile marks a directory as the demo's own. The demo writes it when it takes a directory and
// clears a used directory only when it is there: the demo's other names (wal, warehouse,
// catalog.db) are also the defaults of a real single-node lake, so names alone prove nothing.
const stampFile = ".siglake-demo"

// stampContent identifies the stamp as the demo's; a file of that name with other content does
// not count.
const stampContent = "siglake demo directory: `siglake demo` removes and rewrites everything here\n"

// writeStamp marks dir as the demo's.
func writeStamp(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte(stampContent), 0o644); err != nil {
		return fmt.Errorf("--dir %s: mark it as a demo directory: %w", dir, err)
	}
	return nil
}

// stamped reports whether dir carries the demo's stamp.
func stamped(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, stampFile))
	return err == nil && string(b) == stampContent
}

// demoEntry reports whether name is something `siglake demo` writes at the top of its directory:
// the WAL, the embedded catalog (and SQLite's side files), the warehouse, the live-file lists and
// the running sidecar's address.
func demoEntry(name string) bool {
	switch name {
	case stampFile, "wal", "warehouse", addrFile, "catalog.db", "catalog.db-journal", "catalog.db-wal", "catalog.db-shm":
		return true
	}
	return strings.HasSuffix(name, ".live-files.txt")
}

// prepareDir makes dir ready for a run. A new or empty directory is used and stamped. A directory
// that carries the demo's stamp and holds only what an earlier demo wrote (its catalog among it) is
// cleared, since the summary checks the tables against this run's rows alone; the returned note
// says so. Anything else is refused: a demo never removes what it did not write, nor a lake laid
// out like the demo's without its stamp (a real lake under the binary's default paths), nor the
// lake of a demo sidecar that still runs.
func prepareDir(dir string) (note string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("--dir %s: %w", dir, err)
		}
		return "", writeStamp(dir)
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
	if !stamped(dir) {
		return "", fmt.Errorf("--dir %s is not empty and has no %s stamp: it looks like a lake (wal, warehouse, catalog.db) that no demo wrote, and the demo removes only its own; give another (new or empty) directory with --dir", dir, stampFile)
	}
	if addr, err := RunningAddr(dir); err == nil && answers(addr) {
		return "", fmt.Errorf("--dir %s: a demo sidecar still runs on it (HTTP %s; stop it with Ctrl-C), or give another directory with --dir", dir, addr)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return "", fmt.Errorf("--dir %s: clear the earlier demo: %w", dir, err)
		}
	}
	if err := writeStamp(dir); err != nil {
		return "", err
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
