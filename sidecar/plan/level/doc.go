// Package level is the planner's picker: the levels of a table's files, their
// overlap (depth and clusters), and the candidates each level check proposes
// (level, depth, terminal-overlap, absorb and legacy rewrites), each scored,
// with a reason and a builder of its bins. It decides what is worth
// rewriting; the planner (package plan) decides when each check runs and how
// far the pass's budgets go. Pure: no I/O, no clock.
package level
