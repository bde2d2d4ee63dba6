//go:build !unix

package walwriter

// lockDir is a no-op where flock is unavailable; only one writer per
// directory may run there.
func lockDir(dir string) (func() error, error) { return func() error { return nil }, nil }
