// Package instrument turns the outcomes of the protocol packages (merge, lake, claim) into
// metrics and log fields. Those packages import neither prometheus nor zap (DESIGN.md section 2;
// internal/house tests it): they return what they measured, or report it to an observer
// interface of plain Go types, and the loops that call them (drain, the rewrite executor,
// maintenance, the process) record it through this package. It lives apart from the loops
// because several of them share these collectors (the drain and the rewrites count skipped
// footer indexes on the same metric).
package instrument
