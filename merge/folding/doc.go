// Package folding is aggregate folding's stream transform (docs/folding.md): a Fold
// specification bound to a schema (Compile), and the Folder that turns a merged stream of
// records in timestamp order into one row per time bucket and key values, holding one bucket's
// groups at a time. It knows nothing of files or merge paths: merge runs the Folder after its
// merge order on the paths that decode every row (in-memory, k-way).
package folding
