package chunksum

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// Key is the footer entry holding the CRC-32C of every column chunk
// siglake wrote, each with the chunk's place in the file and its value count
// (docs/file-format.md). The splice path copies row groups without decoding
// them; with these sums it checks the copied bytes are the ones written, as
// they stream through, instead of decompressing every page.
const Key = "siglake.chunkcrc.v1"

var Table = crc32.MakeTable(crc32.Castagnoli)

// Sum is what the footer records of one column chunk: where its bytes
// start, how many there are, the values its footer entry counts, and their
// CRC-32C.
type Sum struct {
	Off, Size, Values int64
	CRC               uint32
}

// Start is where a column chunk's bytes start: its dictionary page when
// it has one before the first data page ("no dictionary" is written as 0 by
// some writers), else its first data page.
func Start(dataPageOffset int64, dictionaryPageOffset *int64) int64 {
	if d := dictionaryPageOffset; d != nil && *d >= int64(len("PAR1")) && *d < dataPageOffset {
		return *d
	}
	return dataPageOffset
}

// Encode encodes per row group a flag byte (1: sums follow, 0: not
// known) and, when set, for each chunk in column order its start offset, its
// total compressed size and its value count as unsigned varints, then its
// sum as 4 bytes little-endian. ok is false when no row group has sums.
func Encode(rgs [][]Sum) (string, bool) {
	var b []byte
	any := false
	for _, sums := range rgs {
		if sums == nil {
			b = append(b, 0)
			continue
		}
		any = true
		b = append(b, 1)
		for _, s := range sums {
			b = binary.AppendUvarint(b, uint64(s.Off))
			b = binary.AppendUvarint(b, uint64(s.Size))
			b = binary.AppendUvarint(b, uint64(s.Values))
			b = binary.LittleEndian.AppendUint32(b, s.CRC)
		}
	}
	if !any {
		return "", false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

// decode is the inverse of Encode for files of cols columns; ok
// is false when v does not decode.
func decode(v string, cols int) (rgs [][]Sum, ok bool) {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, false
	}
	uvarint := func() (int64, bool) {
		x, n := binary.Uvarint(b)
		if n <= 0 || x > 1<<62 {
			return 0, false
		}
		b = b[n:]
		return int64(x), true
	}
	for len(b) > 0 {
		flag := b[0]
		b = b[1:]
		if flag == 0 {
			rgs = append(rgs, nil)
			continue
		}
		if flag != 1 {
			return nil, false
		}
		sums := make([]Sum, cols)
		for j := range sums {
			var ok1, ok2, ok3 bool
			sums[j].Off, ok1 = uvarint()
			sums[j].Size, ok2 = uvarint()
			sums[j].Values, ok3 = uvarint()
			if !ok1 || !ok2 || !ok3 || len(b) < 4 {
				return nil, false
			}
			sums[j].CRC = binary.LittleEndian.Uint32(b)
			b = b[4:]
		}
		rgs = append(rgs, sums)
	}
	return rgs, true
}

// RowGroupSums reads md's Key: per row group the sums of its chunks, nil
// for a row group without. The sums belong to the bytes siglake wrote; a
// tool that rewrites a file and keeps its key-value metadata (parquet-mr's
// ParquetRewriter re-encoding with another codec) leaves them beside other
// bytes. So a row group's sums count only when every chunk's start offset,
// total compressed size and value count in the footer are the ones recorded
// beside its sum; otherwise the row group has none (the splice reads its
// pages instead). An entry that does not decode, or does not describe as
// many row groups as the file has, is absent: nil.
func RowGroupSums(md *metadata.FileMetaData) [][]uint32 {
	v, ok := footerValue(md, Key)
	if !ok {
		return nil
	}
	rgs, ok := decode(v, md.Schema.NumColumns())
	if !ok || len(rgs) != len(md.RowGroups) {
		return nil
	}
	out := make([][]uint32, len(rgs))
	for rg, sums := range rgs {
		if sums == nil || len(md.RowGroups[rg].Columns) != len(sums) {
			continue
		}
		crcs := make([]uint32, len(sums))
		for j, c := range md.RowGroups[rg].Columns {
			cm := c.MetaData
			if cm == nil || Start(cm.DataPageOffset, cm.DictionaryPageOffset) != sums[j].Off ||
				cm.TotalCompressedSize != sums[j].Size || cm.NumValues != sums[j].Values {
				crcs = nil
				break
			}
			crcs[j] = sums[j].CRC
		}
		out[rg] = crcs
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
