// Package chunksum encodes and checks the footer entry siglake.chunkcrc.v1:
// the CRC-32C of every column chunk a file was written with, tied to the
// chunk's offset, size and value count (docs/file-format.md). The writer
// records it; the splice checks copied chunks against it instead of reading
// their pages. Pure: no I/O.
package chunksum
