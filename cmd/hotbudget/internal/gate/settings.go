package gate

import "encoding/json"

// ShardSettings are what a shard was recorded with that decides what was
// measured and how merge judges it, typed (shard.json v2's "settings"):
// every shard of a record holds the same.
type ShardSettings struct {
	Runs         int      `json:"runs"`      // --runs
	Count        int      `json:"count"`     // --count
	Bench        string   `json:"bench"`     // --bench
	Benchtime    string   `json:"benchtime"` // --benchtime, as record took it
	Instructions bool     `json:"instructions"`
	Cycles       bool     `json:"cycles,omitempty"` // counted with the cache simulation (--instrument cycles)
	NoAllocs     bool     `json:"no_allocs"`
	Packages     []string `json:"packages"`
	// Judge are the judgement's flags given to record (--alpha, --gate,
	// --rename...), each as given, sorted by name (a repeated flag's in
	// the order given): merge sets each of them, as if given to it.
	Judge []JudgeFlag `json:"judge,omitempty"`
}

// JudgeFlag is a judgement's flag given to record: --Flag=Value.
type JudgeFlag struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
}

// Text is the settings as JSON, the same for equal settings: what the
// shards of a record must agree on.
func (s *ShardSettings) Text() string {
	b, _ := json.Marshal(s) // of strings, numbers and a map: no error
	return string(b)
}
