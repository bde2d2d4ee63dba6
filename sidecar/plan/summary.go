package plan

// PartitionSummary is what gauges, status pages and `siglake inspect` show
// of one partition.
type PartitionSummary struct {
	Partition string
	// Files and Bytes count live files per level.
	Files [NumLevels]int
	Bytes [NumLevels]int64
	// Capped counts files at or past the generation cap (out of level
	// selection).
	Capped int
	// MaxGeneration is the highest generation present.
	MaxGeneration int
	// Depth is the partition's overlap depth; Clusters its number of
	// overlap clusters.
	Depth    int
	Clusters int
}

// Summarize returns one summary per partition, sorted by partition key.
func Summarize(cfg Config, files []File) []PartitionSummary {
	parts := byPartition(files)
	out := make([]PartitionSummary, 0, len(parts))
	for _, p := range sortedPartitions(parts) {
		fs := parts[p]
		s := PartitionSummary{Partition: p, Clusters: len(Clusters(fs))}
		s.Depth, _ = Depth(fs)
		for _, f := range fs {
			l := cfg.LevelOf(f.SizeBytes)
			s.Files[l]++
			s.Bytes[l] += f.SizeBytes
			s.MaxGeneration = max(s.MaxGeneration, f.Generation)
			if cfg.LevelCapped(f.Generation) {
				s.Capped++
			}
		}
		out = append(out, s)
	}
	return out
}
