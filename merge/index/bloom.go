package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// bloomHashes is the number of bit probes per key; with bloomBitsPerKey it
// gives about a 1% false-positive rate.
const (
	bloomHashes     = 7
	bloomBitsPerKey = 10
	// maxBloomBits caps one filter at 1 MiB; past it the false-positive rate
	// rises but answers stay correct.
	maxBloomBits = 8 << 20
)

// bloom is a classic Bloom filter over 64-bit keys with double hashing.
// Its size is a power of two so a probe is a mask, not a division.
type bloom struct {
	logBits uint8
	k       uint8
	words   []uint64
}

func newBloom(keys int) *bloom {
	want := max(keys*bloomBitsPerKey, 64)
	want = min(want, maxBloomBits)
	lb := uint8(bits.Len(uint(want - 1)))
	return &bloom{logBits: lb, k: bloomHashes, words: make([]uint64, (1<<lb)/64)}
}

func (b *bloom) probes(key uint64, fn func(pos uint64) bool) bool {
	mask := uint64(1)<<b.logBits - 1
	h1, h2 := key, mix64(key)|1
	for i := uint64(0); i < uint64(b.k); i++ {
		if !fn((h1 + i*h2) & mask) {
			return false
		}
	}
	return true
}

func (b *bloom) add(key uint64) {
	b.probes(key, func(p uint64) bool { b.words[p>>6] |= 1 << (p & 63); return true })
}

func (b *bloom) mayContain(key uint64) bool {
	return b.probes(key, func(p uint64) bool { return b.words[p>>6]&(1<<(p&63)) != 0 })
}

// Encoding: logBits (1 byte), k (1 byte), then the bit array as little-endian
// 64-bit words.
func (b *bloom) appendTo(dst []byte) []byte {
	dst = append(dst, b.logBits, b.k)
	for _, w := range b.words {
		dst = append(dst, byte(w), byte(w>>8), byte(w>>16), byte(w>>24), byte(w>>32), byte(w>>40), byte(w>>48), byte(w>>56))
	}
	return dst
}

var errShort = errors.New("truncated entry")

func decodeBloom(src []byte) (*bloom, []byte, error) {
	if len(src) < 2 {
		return nil, nil, errShort
	}
	lb, k := src[0], src[1]
	if lb < 6 || lb > 30 || k == 0 || k > 32 {
		return nil, nil, errors.New("bad bloom header")
	}
	n := (1 << lb) / 64
	src = src[2:]
	if len(src) < n*8 {
		return nil, nil, errShort
	}
	words := make([]uint64, n)
	for i := range words {
		p := src[i*8:]
		words[i] = uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
			uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
	}
	return &bloom{logBits: lb, k: k, words: words}, src[n*8:], nil
}

// trigramSet is the exact set of byte trigrams seen: a 2^24-bit bitmap (2 MiB),
// cheaper per input byte than any hash set, turned into a bloom at the end.
type trigramSet struct {
	bits  []uint64
	count int
}

func newTrigramSet() *trigramSet { return &trigramSet{bits: make([]uint64, (1<<24)/64)} }

func (s *trigramSet) addText(v []byte) {
	for i := 0; i+2 < len(v); i++ {
		t := trigram(v[i], v[i+1], v[i+2])
		w, m := &s.bits[t>>6], uint64(1)<<(t&63)
		if *w&m == 0 {
			*w |= m
			s.count++
		}
	}
}

// forEach calls fn with every trigram in the set.
func (s *trigramSet) forEach(fn func(t uint32)) {
	for i, w := range s.bits {
		for w != 0 {
			tz := bits.TrailingZeros64(w)
			fn(uint32(i*64 + tz))
			w &= w - 1
		}
	}
}

func (s *trigramSet) reset() {
	if s.count == 0 {
		return
	}
	clear(s.bits)
	s.count = 0
}

// sbbf is a split-block Bloom filter, Parquet's SBBF layout: a key sets one
// bit in each of the 8 32-bit words of one 256-bit block, so adding or probing
// a key touches one cache line where the classic bloom touches 7 random ones.
// The block count is a power of two and the block index is multiply-shift, so
// halving it merges blocks 2j and 2j+1: a filter built at the largest size
// folds down to exactly the filter built at the size its key count asks for.
type sbbf struct {
	blocks [][8]uint32
	full   int // the block count it was made with (keyBloom.reset restores it)
}

// sbbfSalt are Parquet's SBBF salts.
var sbbfSalt = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

// maxSBBFBlocks is maxBloomBits in blocks.
const maxSBBFBlocks = maxBloomBits / 256

func newSBBF(blocks int) *sbbf { return &sbbf{blocks: make([][8]uint32, blocks), full: blocks} }

// sbbfBlocks is the block count writers give keys distinct keys: 10 bits per
// key rounded up to a power of two, between one block and maxSBBFBlocks.
func sbbfBlocks(keys int) int {
	want := min(max((keys*bloomBitsPerKey+255)/256, 1), maxSBBFBlocks)
	return 1 << bits.Len(uint(want-1))
}

func (f *sbbf) block(key uint64) *[8]uint32 {
	return &f.blocks[(key>>32)*uint64(len(f.blocks))>>32]
}

func (f *sbbf) add(key uint64) {
	b, x := f.block(key), uint32(key)
	for i := range b {
		b[i] |= 1 << (x * sbbfSalt[i] >> 27)
	}
}

func (f *sbbf) mayContain(key uint64) bool {
	b, x := f.block(key), uint32(key)
	for i := range b {
		if b[i]&(1<<(x*sbbfSalt[i]>>27)) == 0 {
			return false
		}
	}
	return true
}

// foldTo halves the filter until it has at most n blocks (n a power of two).
func (f *sbbf) foldTo(n int) {
	for len(f.blocks) > n {
		h := len(f.blocks) / 2
		for j := 0; j < h; j++ {
			lo, hi := &f.blocks[2*j], &f.blocks[2*j+1]
			for w := range lo {
				f.blocks[j][w] = lo[w] | hi[w]
			}
		}
		f.blocks = f.blocks[:h]
	}
}

// Encoding: logBlocks (1 byte), then the blocks' words as little-endian
// uint32s, block by block.
func (f *sbbf) appendTo(dst []byte) []byte {
	dst = append(dst, byte(bits.Len(uint(len(f.blocks)))-1))
	for i := range f.blocks {
		for _, w := range f.blocks[i] {
			dst = binary.LittleEndian.AppendUint32(dst, w)
		}
	}
	return dst
}

// maxSBBFLog bounds logBlocks on reading: 2^20 blocks is 32 MiB, far past
// what writers make (2^15).
const maxSBBFLog = 20

func decodeSBBF(src []byte) (*sbbf, []byte, error) {
	if len(src) < 1 {
		return nil, nil, errShort
	}
	if src[0] > maxSBBFLog {
		return nil, nil, fmt.Errorf("bad split-block bloom header: %d log2 blocks, at most %d", src[0], maxSBBFLog)
	}
	n := 1 << src[0]
	src = src[1:]
	if len(src) < n*32 {
		return nil, nil, errShort
	}
	f := newSBBF(n)
	for i := range f.blocks {
		for w := range f.blocks[i] {
			f.blocks[i][w] = binary.LittleEndian.Uint32(src[(i*8+w)*4:])
		}
	}
	return f, src[n*32:], nil
}

// keyBloom collects a row group's token keys into a split-block bloom sized
// by their distinct count, known only at the end. Keys are buffered (an
// append) and counted with linear counting over a small bitmap, then added to
// a filter of the final size: adding them as they come to a filter of the
// largest size (1 MiB, past the L2 cache) cost a cache miss per key. Past
// limit keys the buffer spills into the largest filter, which is folded at the
// end, so memory stays bounded and the bits are the same either way.
type keyBloom struct {
	keys    []uint64
	limit   int
	seen    []uint64 // linear-counting bitmap, 2^seenLog bits
	f       *sbbf    // at maxSBBFBlocks until bloom sizes it
	spilled bool
	// dirty is how many leading blocks of f may have bits set since the last reset: the size
	// bloom gave it, or all of them once keys spilled. reset clears only those; most row
	// groups' filters are a few KiB of the 1 MiB.
	dirty int
}

const (
	keyBufferLimit = 1 << 20 // 8 MiB of keys
	seenLog        = 19      // 64 KiB: estimates well past the largest filter's 838,860 keys
)

func newKeyBloom() *keyBloom {
	return &keyBloom{limit: keyBufferLimit, seen: make([]uint64, (1<<seenLog)/64), f: newSBBF(maxSBBFBlocks)}
}

func (c *keyBloom) add(k uint64) {
	i := k >> (64 - seenLog)
	c.seen[i>>6] |= 1 << (i & 63)
	switch {
	case c.spilled:
		c.f.add(k)
	case len(c.keys) < c.limit:
		c.keys = append(c.keys, k)
	default:
		for _, k := range c.keys {
			c.f.add(k)
		}
		c.keys, c.spilled, c.dirty = c.keys[:0], true, c.f.full
		c.f.add(k)
	}
}

// distinct estimates how many distinct keys were added.
func (c *keyBloom) distinct() int {
	zeros := 0
	for _, w := range c.seen {
		zeros += 64 - bits.OnesCount64(w)
	}
	m := float64(len(c.seen) * 64)
	if zeros == 0 {
		return maxBloomBits // saturated: the largest filter, whatever the count
	}
	return int(math.Ceil(-m * math.Log(float64(zeros)/m)))
}

// bloom returns the filter of the keys added, sized for them and extra more
// distinct keys; it is valid until reset.
func (c *keyBloom) bloom(extra int) *sbbf {
	n := sbbfBlocks(c.distinct() + extra)
	if c.spilled {
		c.f.foldTo(n)
		return c.f
	}
	c.f.blocks = c.f.blocks[:n]
	c.dirty = max(c.dirty, n)
	for _, k := range c.keys {
		c.f.add(k)
	}
	return c.f
}

func (c *keyBloom) reset() {
	c.f.blocks = c.f.blocks[:c.f.full]
	clear(c.f.blocks[:c.dirty])
	clear(c.seen)
	c.keys, c.spilled, c.dirty = c.keys[:0], false, 0
}
