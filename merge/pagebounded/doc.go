// Package pagebounded is the page-bounded merge path: a timestamp-only pass
// plans each output chunk and a second, seeking pass reads exactly its rows,
// so decoded memory depends on the chunk size, not on the inputs' sizes or
// their number.
package pagebounded
