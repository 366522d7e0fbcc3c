/* Inlined into its callers at -O2: callgrind marks its code with fi=/fe=. */
static inline unsigned mix(unsigned h, unsigned v) {
	h ^= v;
	h *= 16777619u;
	return h ^ (h >> 13);
}
