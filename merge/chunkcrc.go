package merge

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// chunkCRCKey is the footer entry holding the CRC-32C of every column chunk
// siglake wrote (docs/file-format.md). The splice path copies row groups
// without decoding them; with these sums it checks the copied bytes are the
// ones written, as they stream through, instead of decompressing every page.
const chunkCRCKey = "siglake.chunkcrc.v1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeChunkCRCs encodes per row group a flag byte (1: sums follow, 0: not
// known) and, when set, each chunk's sum as 4 bytes little-endian, in column
// order. ok is false when no row group has sums.
func encodeChunkCRCs(rgs [][]uint32) (string, bool) {
	var b []byte
	any := false
	for _, sums := range rgs {
		if sums == nil {
			b = append(b, 0)
			continue
		}
		any = true
		b = append(b, 1)
		for _, v := range sums {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
	}
	if !any {
		return "", false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

// chunkCRCs reads md's chunkCRCKey: per row group the sums of its chunks, nil
// for a row group without. An entry that does not decode, or does not match
// the file's row groups and columns (another tool rewrote the file and kept
// the key), counts as absent: nil.
func chunkCRCs(md *metadata.FileMetaData) [][]uint32 {
	v, ok := footerValue(md, chunkCRCKey)
	if !ok {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil
	}
	cols := md.Schema.NumColumns()
	out := make([][]uint32, 0, md.NumRowGroups())
	for len(b) > 0 {
		flag := b[0]
		b = b[1:]
		switch {
		case flag == 0:
			out = append(out, nil)
		case flag == 1 && len(b) >= 4*cols:
			sums := make([]uint32, cols)
			for j := range sums {
				sums[j] = binary.LittleEndian.Uint32(b[4*j:])
			}
			b = b[4*cols:]
			out = append(out, sums)
		default:
			return nil
		}
	}
	if len(out) != md.NumRowGroups() {
		return nil
	}
	return out
}

// footerValue is the value of key in md's key-value metadata.
func footerValue(md *metadata.FileMetaData, key string) (string, bool) {
	kv := md.KeyValueMetadata()
	if kv == nil {
		return "", false
	}
	v := kv.FindValue(key)
	if v == nil {
		return "", false
	}
	return *v, true
}
