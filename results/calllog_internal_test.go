package results

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mcpstress/stress/simulator"
)

// openTestLog opens a call log and its message log in a temporary
// directory, closed when tb ends.
func openTestLog(tb testing.TB) *CallLog {
	tb.Helper()
	dir := tb.TempDir()
	msgs, err := OpenMessageLog(filepath.Join(dir, MessagesFile), 0, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { msgs.Close() })
	l, err := OpenCallLog(filepath.Join(dir, CallsFile), 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	l.SetMessages(msgs)
	l.SetDefaults(NewDefaults(1, nil, nil))
	return l
}

// TestEncodeState: a line whose final state is compact is written with the
// state put in place of a mark (encodeState), byte for byte as encoding/json
// writes it whole, also when the mark stands elsewhere in the line or in
// the state; a state that is not compact but said to be is stored as it is
// (which shows the mark was used).
func TestEncodeState(t *testing.T) {
	l := openTestLog(t)
	line := func(c Call, compact bool) []byte {
		env := *c.Env
		env.Compact = compact
		c.Env = &env
		l.buf.Reset()
		if err := l.encode(&c); err != nil {
			t.Fatal(err)
		}
		return bytes.Clone(l.buf.Bytes())
	}
	mark := json.RawMessage(stateMark[len(`"state":`):])
	base := Call{Key: simulator.Key{Model: "m", Scenario: "X01", Replicate: 1}, Response: `{"a":"<b>"}`, Thinking: "after",
		Observation: json.RawMessage(`{"state":"open"}`), Env: &simulator.EnvOutcome{Calls: 2, State: json.RawMessage(`{"orders":{"O-1":{"note":"<&>\u2028"}},"state":"x"}`)}}
	withMeta := base
	withMeta.Meta = map[string]any{"state": "\u0000state\u0000"}
	markInState := base
	markInState.Env = &simulator.EnvOutcome{State: json.RawMessage(`{"state":` + string(mark) + `}`)}
	for name, c := range map[string]Call{"plain": base, "mark in the meta": withMeta, "mark in the state": markInState} {
		t.Run(name, func(t *testing.T) {
			whole, spliced := line(c, false), line(c, true)
			if !bytes.Equal(whole, spliced) {
				t.Errorf("spliced line\n%s\nwant\n%s", spliced, whole)
			}
			var back Call
			if err := json.Unmarshal(spliced, &back); err != nil || !bytes.Equal(back.Env.State, c.Env.State) {
				t.Errorf("the line reads back as state %s (%v)", back.Env.State, err)
			}
		})
	}
	loose := base
	loose.Env = &simulator.EnvOutcome{State: json.RawMessage(`{"a": 1}`)}
	if got := line(loose, true); !bytes.Contains(got, []byte(`"state":{"a": 1}`)) {
		t.Errorf("a state said to be compact was not stored as it is: %s", got)
	}
}
