//go:build unix

package walwriter

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile guards a WAL directory against a second writer, which would
// hand out the same sequence numbers and make the drain drop data.
const lockFile = "LOCK"

func lockDir(dir string) (func() error, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking WAL dir %s (is another writer running?): %w", dir, err)
	}
	return func() error {
		// Closing the descriptor drops the flock.
		if err := f.Close(); err != nil {
			return fmt.Errorf("unlocking WAL dir %s: %w", dir, err)
		}
		return nil
	}, nil
}
