//go:build !linux

package sidecar

// releaseBinaryPages is Linux-only (see startpages_linux.go): elsewhere the binary's pages stay.
func releaseBinaryPages() {}
