package index

import "strings"

// isTokenByte reports whether b belongs to a token. Letters, digits and '_'
// do, and so does every byte of a multi-byte UTF-8 sequence, so non-ASCII
// words stay whole; everything else separates tokens.
func isTokenByte(b byte) bool { return tokenByte[b] }

// tokenByte is isTokenByte as a table: the scan loops test every byte of raw.
var tokenByte = func() (t [256]bool) {
	for i := range t {
		b := byte(i)
		t[i] = b >= 0x80 || b == '_' || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
	}
	return t
}()

// forEachToken calls fn with every token of s (see isTokenByte).
func forEachToken(s []byte, fn func(tok []byte)) {
	start := -1
	for i := 0; i < len(s); i++ {
		if isTokenByte(s[i]) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			fn(s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		fn(s[start:])
	}
}

// IsToken reports whether t is exactly one token: what MayContainToken can
// answer "no" for.
func IsToken(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if !isTokenByte(t[i]) {
			return false
		}
	}
	return true
}

// trigram packs three bytes into a 24-bit value.
func trigram(a, b, c byte) uint32 { return uint32(a)<<16 | uint32(b)<<8 | uint32(c) }

// trigramKey and tokenKey map trigrams and tokens into one 64-bit key space
// with disjoint domains, so one bloom serves both.
func trigramKey(t uint32) uint64 { return mix64(uint64(t) | 1<<62) }

func tokenKey(tok []byte) uint64 {
	h := uint64(fnvOffset)
	for _, b := range tok {
		h = fnvByte(h, b)
	}
	return tokenKeyOf(h)
}

// FNV-1a over a token's bytes, then tokenKeyOf: split so a scan can hash a
// token while it finds its end (Builder.addRaw).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func tokenKeyOf(fnv uint64) uint64 {
	if k := mix64(fnv &^ (1 << 62)); k != 0 {
		return k
	}
	return 1 // the documented key: 0 is never one
}

// mix64 is the splitmix64 finalizer: it spreads FNV's weak low bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// ContainsToken reports whether t occurs in s as a whole token (the exact
// answer MayContainToken approximates): a run of token bytes equal to t with
// a non-token byte, or the string's edge, on either side.
func ContainsToken(s, t string) bool {
	if !IsToken(t) {
		return false
	}
	for from := 0; from+len(t) <= len(s); {
		i := strings.Index(s[from:], t)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(t)
		if (i == 0 || !isTokenByte(s[i-1])) && (end == len(s) || !isTokenByte(s[end])) {
			return true
		}
		from = i + 1
	}
	return false
}
