package localwal

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// A version 2 segment ends with a trailer after the Arrow end-of-stream
// marker: the CRC32C (Castagnoli) of every byte before the trailer, little
// endian, then TrailerMagic. Arrow IPC has no checksum of its own, so a bit
// flipped inside a value (a string's bytes, a timestamp) decodes and
// validates and would be committed; the CRC catches it. Stock Arrow stream
// readers stop at the end-of-stream marker and never see the trailer.
const (
	// TrailerMagic ends a version 2 segment. A version 1 segment ends with
	// the end-of-stream marker, so the two never look alike.
	TrailerMagic = "SLWALCRC"
	// TrailerSize is the trailer's length: 4 bytes of CRC, 8 of magic.
	TrailerSize = 4 + len(TrailerMagic)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC32C of b, as the trailer records it.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Trailer returns the trailer of a segment whose bytes before it have CRC32C crc.
func Trailer(crc uint32) []byte {
	t := make([]byte, 0, TrailerSize)
	t = binary.LittleEndian.AppendUint32(t, crc)
	return append(t, TrailerMagic...)
}

// AppendChecksum appends the trailer to stream, a complete Arrow IPC stream
// (end-of-stream marker included) whose header says version 2: what a
// writer that builds the stream itself does before it seals the file.
func AppendChecksum(stream []byte) []byte {
	return append(stream, Trailer(Checksum(stream))...)
}

// splitTrailer returns the bytes before a trailer and the CRC it records;
// ok is false when data does not end with TrailerMagic.
func splitTrailer(data []byte) (body []byte, crc uint32, ok bool) {
	if len(data) < TrailerSize || !bytes.HasSuffix(data, []byte(TrailerMagic)) {
		return data, 0, false
	}
	n := len(data) - TrailerSize
	return data[:n], binary.LittleEndian.Uint32(data[n:]), true
}
