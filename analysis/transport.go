package analysis

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
)

// TransportSummary is what calls.jsonl records about transport faults,
// reported apart from the counts: the events per model and kind (faults a
// backend met and retried, or that ended a call), and the error decisions,
// whose call failed for good and which the counts exclude.
type TransportSummary struct {
	Calls  int          `json:"calls"`  // call lines read
	Events []eventCount `json:"events"` // sorted by model, then kind
	// Failed lists the error decisions in file order, at most maxFailed.
	Failed []failedDecision `json:"failed"`
	// FailedTotal is the number of error decisions.
	FailedTotal int `json:"failed_total"`
	// EnvFailedTotal is how many of them failed in their live environment
	// (it did not start, died, or its state could not be read).
	EnvFailedTotal int `json:"env_failed_total,omitempty"`
}

// eventCount counts the transport events of one kind for one model.
type eventCount struct {
	Model  string `json:"model"`
	Kind   string `json:"kind"`   // e.g. http_status, timeout, connect, truncated, malformed, too_large, breaker
	Events int    `json:"events"` // events of this kind
	Calls  int    `json:"calls"`  // calls that met at least one
}

// failedDecision is one error decision: its key, the turn whose call
// failed, the final error and the kinds of the events of that call.
type failedDecision struct {
	Key         simulator.Key `json:"key"`
	Turn        int           `json:"turn"`
	Error       string        `json:"error"`
	Events      []string      `json:"events,omitempty"`
	Environment bool          `json:"environment,omitempty"` // the live environment failed, not the model call
}

// maxFailed is the most error decisions a TransportSummary lists.
const maxFailed = 100

// Transport reads calls.jsonl as a stream and summarizes its transport
// events and error decisions (Read without the rows).
func Transport(r io.Reader, name string) (ts *TransportSummary, problems []error, err error) {
	return readCalls(r, name, nil)
}

// transportTally builds a TransportSummary decision by decision.
type transportTally struct {
	ts     TransportSummary
	counts map[[2]string]*eventCount // by model and kind
}

func newTransportTally() *transportTally {
	return &transportTally{counts: map[[2]string]*eventCount{}}
}

// add counts the calls of one decision.
func (t *transportTally) add(g *results.Group) {
	for _, h := range g.Heads {
		t.ts.Calls++
		seen := map[string]bool{}
		var kinds []string
		for _, e := range h.Events {
			k := [2]string{g.Key.Model, e.Kind}
			ec := t.counts[k]
			if ec == nil {
				ec = &eventCount{Model: strings.Clone(k[0]), Kind: strings.Clone(k[1])}
				t.counts[k] = ec
			}
			ec.Events++
			if !seen[e.Kind] {
				seen[e.Kind] = true
				ec.Calls++
			}
			kinds = append(kinds, e.Kind)
		}
		if h.Error != "" {
			t.ts.FailedTotal++
			if h.EnvError {
				t.ts.EnvFailedTotal++
			}
			if len(t.ts.Failed) < maxFailed {
				t.ts.Failed = append(t.ts.Failed, failedDecision{Key: h.Key, Turn: h.Turn, Error: h.Error, Events: kinds, Environment: h.EnvError})
			}
		}
	}
}

// summary returns the summary, events sorted by model and kind.
func (t *transportTally) summary() *TransportSummary {
	ts := t.ts
	ts.Events = make([]eventCount, 0, len(t.counts))
	for _, ec := range t.counts {
		ts.Events = append(ts.Events, *ec)
	}
	slices.SortFunc(ts.Events, func(a, b eventCount) int {
		return cmp.Or(strings.Compare(a.Model, b.Model), strings.Compare(a.Kind, b.Kind))
	})
	return &ts
}

// Empty reports whether there is nothing to report: no event and no
// error decision.
func (ts *TransportSummary) Empty() bool { return len(ts.Events) == 0 && ts.FailedTotal == 0 }

// WriteTransport prints the transport events per model and kind, then the
// error decisions with their final error. It prints nothing when the
// summary is empty.
func WriteTransport(w io.Writer, ts *TransportSummary) error {
	if ts.Empty() {
		return nil
	}
	calls := ts.FailedTotal - ts.EnvFailedTotal
	if len(ts.Events) > 0 || calls > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "\nTransport events (faults met by %d calls, retried unless the call failed; never counted as answers):\n", ts.Calls)
		if len(ts.Events) == 0 {
			fmt.Fprintln(tw, "none")
		} else {
			fmt.Fprintln(tw, "model\tkind\tevents\tcalls")
			for _, e := range ts.Events {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", e.Model, e.Kind, e.Events, e.Calls)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nError decisions (a call failed for good; excluded from the counts): %d\n", calls)
		writeFailed(w, ts.Failed, false, calls)
	}
	if ts.EnvFailedTotal > 0 {
		fmt.Fprintf(w, "\nEnvironment failures (the live environment did not start, died or could not be read; excluded from the counts; stress run -resume DIR -retry-errors runs them again): %d\n", ts.EnvFailedTotal)
		writeFailed(w, ts.Failed, true, ts.EnvFailedTotal)
	}
	return nil
}

// writeFailed lists the error decisions of failed whose environment
// failed (env) or whose call did, and how many of their total it leaves
// out.
func writeFailed(w io.Writer, failed []failedDecision, env bool, total int) {
	listed := 0
	for _, f := range failed {
		if f.Environment != env {
			continue
		}
		listed++
		ev := ""
		if len(f.Events) > 0 {
			ev = " [" + strings.Join(f.Events, ",") + "]"
		}
		fmt.Fprintf(w, "  %s turn %d: %s%s\n", f.Key, f.Turn, f.Error, ev)
	}
	if more := total - listed; more > 0 {
		fmt.Fprintf(w, "  … and %d more\n", more)
	}
}
