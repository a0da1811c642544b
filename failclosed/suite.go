package failclosed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/mcpstress/stress/study"
)

// Kind is the family a conformance case belongs to.
type Kind string

// The case families of STUDY.md section 6.
const (
	KindControl   Kind = "control"   // a counterfactual control envelope of a corpus scenario
	KindTransient Kind = "transient" // a synthetic transient failure with a safe replay
	KindMalformed Kind = "malformed" // a malformed or unsafe input that must fail closed
)

// Valid reports whether k is one of the three case families.
func (k Kind) Valid() bool { return k == KindControl || k == KindTransient || k == KindMalformed }

// Case is one conformance case: an input and the decision expected in each
// listed mode. It is stored as one JSON file (see LoadSuite).
type Case struct {
	ID         string          `json:"id"`                   // unique case id
	Kind       Kind            `json:"kind"`                 // case family
	Note       string          `json:"note,omitempty"`       // what the case exercises, for people
	Modes      []Mode          `json:"modes"`                // modes the expectation holds in; at least one
	WantPolicy study.Policy    `json:"want_policy"`          // expected policy
	WantReason Reason          `json:"want_reason"`          // expected reason; "" for an actionable policy
	WantDelay  int64           `json:"want_delay_ms"`        // expected Decision.Delay, in milliseconds (≥ 0)
	Input      json.RawMessage `json:"input,omitempty"`      // the input as raw JSON
	InputText  string          `json:"input_text,omitempty"` // the input as text, for inputs that are not JSON objects
}

// Raw returns the bytes handed to Decide: Input if set, else InputText.
func (c Case) Raw() []byte {
	if c.Input != nil {
		return c.Input
	}
	return []byte(c.InputText)
}

// check reports the first inconsistency of a loaded case, or nil.
func (c Case) check() error {
	switch {
	case c.ID == "":
		return fmt.Errorf("id is empty")
	case !c.Kind.Valid():
		return fmt.Errorf("kind %q is not control, transient or malformed", c.Kind)
	case len(c.Modes) == 0:
		return fmt.Errorf("modes is empty")
	case !c.WantPolicy.Valid():
		return fmt.Errorf("want_policy %q is not a policy label", c.WantPolicy)
	case c.WantReason != "" && !c.WantReason.Valid():
		return fmt.Errorf("want_reason %q is not a reason", c.WantReason)
	case (c.WantReason == "") != (c.WantPolicy != study.StopOrEscalate):
		return fmt.Errorf("want_policy %q and want_reason %q disagree: a reason goes with stop_or_escalate only", c.WantPolicy, c.WantReason)
	case c.Kind == KindMalformed && c.WantReason == "":
		return fmt.Errorf("a malformed case needs a want_reason")
	case c.WantDelay < 0:
		return fmt.Errorf("want_delay_ms %d is negative", c.WantDelay)
	case (c.Input != nil) == (c.InputText != ""):
		return fmt.Errorf("exactly one of input and input_text must be given")
	}
	for _, m := range c.Modes {
		if !m.Valid() {
			return fmt.Errorf("mode %q is not registry or explicit_action", m)
		}
	}
	return nil
}

// LoadSuite reads every *.json file in dir of fsys, one Case per file, in
// file-name order, and checks ids are unique and expectations consistent.
func LoadSuite(fsys fs.FS, dir string) ([]Case, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	var cases []Case
	seen := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		name := path.Join(dir, e.Name())
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("suite: %w", err)
		}
		var c Case
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("suite: %s: %w", name, err)
		}
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("suite: %s: %w", name, err)
		}
		if prev, ok := seen[c.ID]; ok {
			return nil, fmt.Errorf("suite: %s: id %q already used by %s", name, c.ID, prev)
		}
		seen[c.ID] = name
		cases = append(cases, c)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("suite: no *.json cases in %s", dir)
	}
	return cases, nil
}

// CaseResult is the outcome of one case in one mode.
type CaseResult struct {
	ID   string   // case id
	Kind Kind     // case family
	Mode Mode     // mode Decide ran in
	Got  Decision // what Decide returned
	Pass bool     // Got matches the expected policy, reason and delay
	Diff string   // what differs when Pass is false, else ""
}

// Run decides every case in each of its modes and compares the decision
// with the expectation; results follow the order of cases and their modes.
func Run(cases []Case) []CaseResult {
	var out []CaseResult
	for _, c := range cases {
		for _, m := range c.Modes {
			got := Decide(c.Raw(), m)
			var diffs []string
			if got.Policy != c.WantPolicy {
				diffs = append(diffs, fmt.Sprintf("policy %s, want %s", got.Policy, c.WantPolicy))
			}
			if got.Reason != c.WantReason {
				diffs = append(diffs, fmt.Sprintf("reason %q, want %q", got.Reason, c.WantReason))
			}
			if want := time.Duration(c.WantDelay) * time.Millisecond; got.Delay != want {
				diffs = append(diffs, fmt.Sprintf("delay %v, want %v", got.Delay, want))
			}
			out = append(out, CaseResult{
				ID: c.ID, Kind: c.Kind, Mode: m, Got: got,
				Pass: len(diffs) == 0, Diff: strings.Join(diffs, "; "),
			})
		}
	}
	return out
}
