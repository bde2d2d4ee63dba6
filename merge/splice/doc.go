// Package splice is the row-group splice merge path: it plans which input row
// groups overlap no other input (Plan) and copies those byte for byte while
// the rows around them are merged and re-encoded, checking each copy against
// its chunk sums or, without them, by reading its pages.
package splice
