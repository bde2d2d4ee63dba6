//go:build !linux

package gomem

// pageRange is one mapping releaseBinaryPages advised (see startpages_linux.go).
type pageRange struct {
	addr, size uintptr
	rss        int64
}

// releaseBinaryPages is Linux-only (see startpages_linux.go): elsewhere the binary's pages stay.
func releaseBinaryPages() []pageRange { return nil }
