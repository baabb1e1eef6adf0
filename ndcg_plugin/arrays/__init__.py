"""Arrays below everything else: Arrow column helpers (group codes, fingerprints, chunks),
exact sums of doubles, and the optional C loops (``speedups``) with their numpy twins."""
