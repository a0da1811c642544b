package simulator

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/mcpstress/stress/study"

	"github.com/mcpstress/stress/statediff"
)

// Environment is the world a decision acts on when replays are live
// (manifest replay: live): instead of returning the stored failure again,
// the simulator asks the environment to execute each policy the model
// chooses and shows the model what came back. Stored replay (the default)
// uses no Environment.
//
// An Environment serves one decision; it is made fresh, and seeded, for
// each (scenario, replicate) by an EnvFactory. If it also implements
// io.Closer, Run closes it when the decision ends (whatever the outcome).
type Environment interface {
	// Start makes the scenario's first, failing call and returns its
	// client-normalized observation ({"exception": …} or {"result": …},
	// see study.Scenario). Turn 0 is rendered from the corpus record, as
	// in stored replay (so every condition applies unchanged); the lab
	// corpus records exactly this call, so the two agree.
	Start(ctx context.Context) (json.RawMessage, error)
	// Execute carries out the policy of answer a, a valid answer the model
	// gave at turn t, other than stop_or_escalate: it repeats, delays,
	// revises, redirects or authenticates the call as the scenario
	// defines, and returns the observation of the call it made (shown to
	// the model at turn t+1) and whether the trajectory goes on (false:
	// the call settled the decision, e.g. it succeeded, or the
	// environment ends it; the observation is then recorded but no
	// further turn shows it). An error is a failure of the environment
	// itself, not of the call.
	//
	// A retry_later waits a.DelayMS on the environment's clock when the
	// answer gives a delay, else the delay the failure's contract gives
	// (a retry-after), else DefaultRetryDelayMS.
	Execute(ctx context.Context, t int, a Answer) (obs json.RawMessage, more bool, err error)
	// Final returns the outcome read from the environment's state at the
	// end of the decision.
	Final(ctx context.Context) (EnvOutcome, error)
}

// DefaultRetryDelayMS is the delay, in milliseconds of the environment's
// clock, before a retry_later replay whose answer and failure give none.
const DefaultRetryDelayMS = 1000

// EnvOutcome is the ground truth of a decision read from the state of its
// environment, which the model never sees. In calls.jsonl it is the "env"
// member of a live decision's last line.
type EnvOutcome struct {
	Recovered bool `json:"recovered"` // the goal effect is present exactly as the goal says
	Harm      bool `json:"harm"`      // some change is harm (Harms is not empty)
	// Harms are the harmful changes the diff of the initial and the final
	// state found (and any extra check of the scenario), each with its
	// kind.
	Harms   []statediff.Harm `json:"harms,omitempty"`
	Missing []string         `json:"missing,omitempty"` // the goal effects not present (their why)
	Calls   int              `json:"calls"`             // tool calls made, the first failing call included (≥ 1)
	ClockMS int64            `json:"clock_ms"`          // environment-clock milliseconds from the first call to the final state (≥ 0)
	State   json.RawMessage  `json:"state"`             // the final state, as JSON
	// Compact says State is valid JSON as json.Compact writes it (as
	// json.Marshal writes a value): the call log then stores it as it
	// is. An environment that cannot vouch for that leaves it false, and
	// the simulator compacts the state (refusing one that is not JSON).
	Compact bool `json:"-"`
	// Protocol is the MCP protocol version the environment's server
	// negotiated for the decision; "" for an environment that speaks no
	// protocol (the lab runs in process).
	Protocol string `json:"protocol,omitempty"`
}

// EnvFactory makes the environment of one decision of scenario, seeded
// from the study seed and the replicate (EnvSeed), so that paired
// conditions and models meet the same environment. NewEnv may be called
// from several goroutines at once.
type EnvFactory interface {
	NewEnv(ctx context.Context, scenario string, seed int64) (Environment, error)
}

// ShapedEnvFactory is an EnvFactory that can serve every failure in an
// error shape proposed for MCP (study.ShapeConditions): a live decision
// under such a condition gets its environment from NewShapedEnv. A live
// study of a shape condition on an environment without it is refused.
type ShapedEnvFactory interface {
	EnvFactory
	NewShapedEnv(ctx context.Context, scenario string, seed int64, shape study.Condition) (Environment, error)
}

// EnvSeed is the seed of the environment of (scenario, replicate): a
// stable hash of the study seed, the scenario and the replicate,
// independent of the condition, the model and the turn, in [0, 2^63).
// Its hash domain differs from Seed's, so it is not a sampling seed.
func EnvSeed(studySeed uint64, scenario string, replicate int) int64 {
	h := sha256.New()
	fmt.Fprintf(h, "stress-env/v1\x00%d\x00%s\x00%d", studySeed, scenario, replicate)
	return int64(binary.BigEndian.Uint64(h.Sum(nil)[:8]) & (1<<63 - 1))
}
