package stats

import "encoding/json"

// WarningKind classifies a statistical caveat, so that callers branch on
// the kind instead of matching the message.
type WarningKind string

// The kinds of caveats a statistic can carry.
const (
	FewClusters WarningKind = "few-clusters" // fewer than MinClusters clusters: the percentile interval is unreliable
	Degenerate  WarningKind = "degenerate"   // every resample gave the same value: the interval has no width
	Skipped     WarningKind = "skipped"      // resamples with an empty denominator were skipped
	SmallB      WarningKind = "small-B"      // too few resamples for the confidence level
	NoPairs     WarningKind = "no-pairs"     // no decision pairs to compare
	Undefined   WarningKind = "undefined"    // no estimate or no interval (empty denominator, invalid input)
	Coarse      WarningKind = "coarse"       // too few informative clusters for a randomization test to reach the level
	Dropped     WarningKind = "dropped"      // some units were left out of the estimate (scenarios with fewer replicates than pass^k's k)
)

// Warning is a statistical caveat attached to a value (never an error): its
// kind and a message for people. In JSON it is the message.
type Warning struct {
	Kind    WarningKind
	Message string
}

// String returns the message.
func (w Warning) String() string { return w.Message }

// MarshalJSON implements json.Marshaler: the message, as a JSON string.
func (w Warning) MarshalJSON() ([]byte, error) { return json.Marshal(w.Message) }
