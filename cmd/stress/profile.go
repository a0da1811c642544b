package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mcpstress/stress/study"
)

var coordinateNames = map[string]string{
	"D": "failure detection", "P": "coarse policy", "C": "cause/subtype",
	"T": "repair target", "E": "executable repair", "R": "replay constraints",
}

// cmdProfile defines profile's flags on fs and returns the action that
// prints the actionability profile table of the manifest's corpus.
func cmdProfile(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, "print the table as JSON")
	manifest := fs.String("manifest", "", "manifest `M` whose corpus to read (default: the built-in one)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		m, err := loadManifest(*manifest)
		if err != nil {
			return err
		}
		ctrl := study.Summarize(m.Corpus.Scenarios, study.ControlView)
		cont := study.Summarize(m.Corpus.Scenarios, study.ContentView)
		if *asJSON {
			return writeJSON(stdout, map[string]any{
				"control":      ctrl.Counts,
				"content":      cont.Counts,
				"profiles":     map[string]any{"control": ctrl.Profiles, "content": cont.Profiles},
				"incomparable": map[string]int{"control": ctrl.Incomparable, "content": cont.Incomparable},
			})
		}
		n := len(m.Corpus.Scenarios)
		fmt.Fprintf(stdout, "Separately coded capabilities for %d observations (coordinates are not cumulative).\n\n", n)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "Capability\tControl\tContent-assisted")
		for _, c := range study.Coordinates {
			fmt.Fprintf(tw, "%s %s\t%d\t%d\n", c, coordinateNames[c], ctrl.Counts[c], cont.Counts[c])
		}
		tw.Flush()
		fmt.Fprintln(stdout, "\nProfiles (bits D/P/C/T/E/R):")
		for _, v := range []struct {
			name string
			s    study.ViewSummary
		}{{"control", ctrl}, {"content", cont}} {
			var parts []string
			for _, p := range v.s.SortedProfiles() {
				parts = append(parts, fmt.Sprintf("%s x%d", p, v.s.Profiles[p]))
			}
			fmt.Fprintf(stdout, "  %-8s %s\n", v.name, strings.Join(parts, ", "))
		}
		fmt.Fprintf(stdout, "\nIncomparable pairs: control %d, content %d\n", ctrl.Incomparable, cont.Incomparable)
		return nil
	}
}
