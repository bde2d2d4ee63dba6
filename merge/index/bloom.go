package index

import (
	"errors"
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

// keySet is an open-addressing set of nonzero 64-bit keys, used to count
// distinct tokens so a bloom is sized by distinct keys, not occurrences.
type keySet struct {
	slots []uint64
	n     int
}

func (s *keySet) add(k uint64) {
	if k == 0 {
		k = 1
	}
	if (s.n+1)*4 > len(s.slots)*3 {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = k
			s.n++
			return
		case k:
			return
		}
	}
}

func (s *keySet) grow() {
	old := s.slots
	s.slots = make([]uint64, max(1024, len(old)*2))
	s.n = 0
	for _, k := range old {
		if k != 0 {
			s.add(k)
		}
	}
}

func (s *keySet) forEach(fn func(k uint64)) {
	for _, k := range s.slots {
		if k != 0 {
			fn(k)
		}
	}
}

func (s *keySet) reset() {
	clear(s.slots)
	s.n = 0
}
