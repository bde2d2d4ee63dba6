// Package durable writes files so that a crash leaves either the old or the
// new content, and makes renames and creations inside a directory durable.
package durable

import (
	"fmt"
	"os"
	"path/filepath"
)

// SyncDir makes renames and creations inside dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening dir %s for fsync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// WriteFile replaces path with data so that a crash leaves either the old
// or the new content: temp file, fsync, rename, fsync dir. The file gets
// mode perm (not reduced by the umask).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("creating temp file for %s: %w", path, err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if perm != 0o600 { // CreateTemp's mode
		if err := tmp.Chmod(perm); err != nil {
			return fmt.Errorf("chmod %s: %w", tmpName, err)
		}
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmpName, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("renaming %s to %s: %w", tmpName, path, err)
	}
	ok = true
	return SyncDir(dir)
}
