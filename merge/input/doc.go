// Package input reads the data files of a merge: an input opened for ranged
// reads through FileIO (File), its rows as a stream of batches in file order
// (Source, PQSource, the prefetching and page-index-skipping wrappers, the
// forward reader of repeated columns), the page index of its timestamp
// column, records conformed to the output schema (Conform), and the errors
// that blame one input (InputError, IOError, ErrSchema).
package input
