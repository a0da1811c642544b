package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcpstress/stress/failclosed"
	"github.com/mcpstress/stress/study"
)

// conformRow is one line of the conformance report: one case in one mode.
type conformRow struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Mode   string `json:"mode"`
	Want   string `json:"want"`   // expected decision, in decisionText form
	Got    string `json:"got"`    // actual decision, in decisionText form
	Reason string `json:"reason"` // actual reason, "" for an actionable policy
	Pass   bool   `json:"pass"`
}

// decisionText writes a decision as "policy", then ":reason" for a stop
// and "+Nms" for a delay, so that a case passes exactly when its want and
// got texts are equal.
func decisionText(p study.Policy, r failclosed.Reason, delayMS int64) string {
	s := string(p)
	if r != "" {
		s += ":" + string(r)
	}
	if delayMS != 0 {
		s += fmt.Sprintf("+%dms", delayMS)
	}
	return s
}

// cmdConform defines conform's flags on fs and returns the action that
// runs the fail-closed client's conformance suite: the control
// envelopes of the manifest's corpus, then the embedded transient,
// malformed and category-contract cases, each in both modes.
func cmdConform(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, `print {"cases":[…],"passed":N,"failed":N} instead of the table`)
	manifest := fs.String("manifest", "", "manifest `M` whose corpus supplies the control envelopes (default: the built-in study)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) > 0 {
			return usageError("conform takes no arguments, got %q", args)
		}
		m, err := loadManifest(*manifest)
		if err != nil {
			return err
		}
		suite, err := failclosed.BuiltinSuite()
		if err != nil {
			return err
		}
		cases := append(failclosed.Controls(m.Corpus.Scenarios), suite...)
		slices.SortStableFunc(cases, func(a, b failclosed.Case) int {
			return cmp.Compare(slices.Index(failclosed.Kinds, a.Kind), slices.Index(failclosed.Kinds, b.Kind))
		})
		want := map[string]string{}
		inputs := map[failclosed.Kind]int{}
		paper := 0
		for _, c := range cases {
			want[c.ID] = decisionText(c.WantPolicy, c.WantReason, c.WantDelay)
			inputs[c.Kind]++
			if c.Kind.Paper() {
				paper++
			}
		}

		var rows []conformRow
		var failures []string
		for _, r := range failclosed.Run(cases) {
			rows = append(rows, conformRow{
				ID: r.ID, Kind: string(r.Kind), Mode: string(r.Mode), Want: want[r.ID],
				Got:    decisionText(r.Got.Policy, r.Got.Reason, r.Got.Delay.Milliseconds()),
				Reason: string(r.Got.Reason), Pass: r.Pass,
			})
			if !r.Pass {
				failures = append(failures, fmt.Sprintf("FAIL %s/%s: %s (%s)", r.ID, r.Mode, r.Diff, r.Got.Message))
			}
		}
		failed := len(failures)
		passed := len(rows) - failed

		if *asJSON {
			if err := writeJSON(stdout, struct {
				Cases  []conformRow `json:"cases"`
				Passed int          `json:"passed"`
				Failed int          `json:"failed"`
			}{rows, passed, failed}); err != nil {
				return err
			}
		} else {
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "id\tkind\tmode\twant\tgot\treason\tpass")
			for _, r := range rows {
				pass := "FAIL"
				if r.Pass {
					pass = "ok"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Kind, r.Mode, r.Want, r.Got, r.Reason, pass)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, f := range failures {
				fmt.Fprintln(stdout, f)
			}
			fmt.Fprintf(stdout, "inputs: %d of the paper's suite (%d control, %d transient, %d malformed) + %d of the error-category contract + %d of the error shapes = %d; decisions: %d (one per input and mode)\n",
				paper, inputs[failclosed.KindControl], inputs[failclosed.KindTransient], inputs[failclosed.KindMalformed],
				inputs[failclosed.KindCategory], inputs[failclosed.KindShape], len(cases), len(rows))
			fmt.Fprintf(stdout, "passed %d, failed %d\n", passed, failed)
		}
		if failed > 0 {
			if *asJSON {
				fmt.Fprintln(stderr, strings.Join(failures, "\n"))
			}
			return fmt.Errorf("conform: %d of %d decisions failed", failed, len(rows))
		}
		return nil
	}
}
