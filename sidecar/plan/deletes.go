package plan

import "fmt"

// DeleteCandidate is a live file that may hold rows of pending deletion requests: its manifest
// bounds overlap a request's time range and column conditions.
type DeleteCandidate struct {
	Path  string
	Bytes int64
	// Open are the requests the file may still hold rows of: pending, and not already found
	// clean in this file.
	Open []string
}

// DeleteCaps bound one delete sweep of a table, so a big request cannot starve the drain
// (SIGLAKE_DELETE_SWEEP_MAX_FILES, SIGLAKE_DELETE_SWEEP_MAX_MB). The first file is always
// examined, so a sweep always makes progress. NoCaps lifts both (`siglake delete-sweep`).
type DeleteCaps struct {
	MaxFiles int
	MaxBytes int64
	NoCaps   bool
}

// DeleteAction is what a sweep does with one candidate.
type DeleteAction uint8

const (
	// DeleteExamine: count the file's matching rows and, if any, rewrite it without them.
	DeleteExamine DeleteAction = iota
	// DeleteClean: every pending request was already found clean in this file.
	DeleteClean
	// DeleteCapped: left for a later sweep; this one reached its file or byte cap.
	DeleteCapped
)

// DeletePick is the decision for one candidate, with a reason for /debug/status.
type DeletePick struct {
	Path     string
	Action   DeleteAction
	Requests []string // the requests to examine the file for (DeleteExamine)
	Reason   string
}

// DeletePlan is one sweep's decisions, in candidate order.
type DeletePlan struct {
	Picks  []DeletePick
	Capped bool // some candidate waits for a later sweep
	// Files and Bytes are what the examined candidates add up to.
	Files int
	Bytes int64
}

// PlanDeletes decides which candidates one delete sweep examines (and, where rows match,
// rewrites as KindDeleteTask): candidates in the given order, skipping those already clean for
// every request, until the caps are reached. Pure: the same candidates give the same plan.
func PlanDeletes(cands []DeleteCandidate, caps DeleteCaps) DeletePlan {
	var p DeletePlan
	for _, c := range cands {
		pick := DeletePick{Path: c.Path}
		switch {
		case len(c.Open) == 0:
			pick.Action, pick.Reason = DeleteClean, "clean (examined before)"
		case !caps.NoCaps && p.Files > 0 && (p.Files >= caps.MaxFiles || p.Bytes+c.Bytes > caps.MaxBytes):
			pick.Action, pick.Reason = DeleteCapped, "not examined: sweep cap reached"
			if p.Files >= caps.MaxFiles {
				pick.Reason += fmt.Sprintf(" (%d files)", caps.MaxFiles)
			} else {
				pick.Reason += fmt.Sprintf(" (%d of %d bytes)", p.Bytes, caps.MaxBytes)
			}
			p.Capped = true
		default:
			p.Files++
			p.Bytes += c.Bytes
			pick.Action, pick.Requests = DeleteExamine, append([]string(nil), c.Open...)
			pick.Reason = fmt.Sprintf("may hold rows of %d pending request(s)", len(c.Open))
		}
		p.Picks = append(p.Picks, pick)
	}
	return p
}
