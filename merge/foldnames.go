package merge

import (
	"path"
	"strconv"
	"strings"
)

// FoldedFileName is DataFileName for a fold's output, with the fold tier every row of the file
// reached (0: the fold bucket; n: coarsened through the n-th tier) after the generation:
// "g0003-f1-<uuid>.parquet". The planner reads it back from the path alone, as the generation,
// so that a file is never coarsened twice to the same tier.
func FoldedFileName(generation, tier int) string {
	n := DataFileName(generation)
	dash := strings.IndexByte(n, '-')
	return n[:dash] + "-f" + strconv.Itoa(tier) + n[dash:]
}

// ParseFoldTier reads the tier from a path written with FoldedFileName; ok is false for a file
// never folded (drain output, other writers). The tier must be followed by a whole UUID: an
// unfolded name whose random UUID happens to start with "f" and digits ("g0000-f1234567-89ab-…")
// leaves only the UUID's tail after the would-be tier, so it is not mistaken for a folded one.
func ParseFoldTier(p string) (tier int, ok bool) {
	base := path.Base(strings.ReplaceAll(p, "\\", "/"))
	if _, ok := ParseGeneration(p); !ok {
		return 0, false
	}
	rest := base[strings.IndexByte(base, '-')+1:]
	if !strings.HasPrefix(rest, "f") {
		return 0, false
	}
	end := strings.IndexByte(rest, '-')
	if end < 2 || !isUUID(strings.TrimSuffix(rest[end+1:], ".parquet")) {
		return 0, false
	}
	t, err := strconv.Atoi(rest[1:end])
	if err != nil || t < 0 {
		return 0, false
	}
	return t, true
}

// LateFileName is DataFileName for a file of the late stream: rows the writer found in a sparse
// run of its batch or bin (late rows), or the output of a rewrite of late files only:
// "g0003-l-<uuid>.parquet". The planner reads it back from the path (ParseLate) and plans late
// files apart from on-time ones (docs/compaction.md, "Late rows").
func LateFileName(generation int) string {
	n := DataFileName(generation)
	dash := strings.IndexByte(n, '-')
	return n[:dash] + "-l" + n[dash:]
}

// ParseLate reports whether p was written with LateFileName. As with ParseFoldTier, the marker
// must be followed by a whole UUID, so no on-time name is mistaken for a late one.
func ParseLate(p string) bool {
	base := path.Base(strings.ReplaceAll(p, "\\", "/"))
	if _, ok := ParseGeneration(p); !ok {
		return false
	}
	rest := base[strings.IndexByte(base, '-')+1:]
	return strings.HasPrefix(rest, "l-") && isUUID(strings.TrimSuffix(rest[2:], ".parquet"))
}

// isUUID reports whether s has the 8-4-4-4-12 hex form DataFileName writes.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
