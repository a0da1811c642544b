package main

import (
	"flag"
	"fmt"

	"github.com/mcpstress/stress/analysis"
)

// addPartialFlag defines -partial for analyze, compare and report.
//
// Note: unfinished or damaged bundles are never read silently (README,
// "Commands"): a missing or corrupt manifest.json is an error naming the
// file; a partial bundle (unfinished, or holding another number of
// decisions than its manifest.json records) is refused unless -partial is
// given, and then every output says so first.
func addPartialFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("partial", false, "use a partial bundle too: unfinished, or holding another number of decisions than its manifest.json records (the output says so first)")
}

// readBundleInfo reads dir's manifest.json: a missing or corrupt file is
// an error naming it. Unless partial, a bundle that manifest.json records
// as unfinished is refused before any decision is read.
func readBundleInfo(cmd, dir string, partial bool) (*analysis.BundleInfo, error) {
	info, err := analysis.ReadBundleInfo(dir)
	if err != nil {
		return nil, err
	}
	if !partial && info.Unfinished() {
		return nil, refusePartial(cmd, info, info.Partial(-1))
	}
	return info, nil
}

// checkPartial compares the decisions read from the bundle with what its
// manifest.json records. It returns the warning for a partial bundle ("":
// complete), or, unless partial, an error that refuses it.
func checkPartial(cmd string, info *analysis.BundleInfo, read int, partial bool) (string, error) {
	w := info.Partial(read)
	if w != "" && !partial {
		return "", refusePartial(cmd, info, w)
	}
	return w, nil
}

// refusePartial is the error for a partial bundle without -partial.
func refusePartial(cmd string, info *analysis.BundleInfo, warning string) error {
	how := "pass -partial to use the decisions it holds"
	if info.Unfinished() {
		how = fmt.Sprintf("finish it with stress run -resume %s, or %s", info.Dir, how)
	}
	return fmt.Errorf("%s refuses %s; %s", cmd, warning, how)
}

// warningLine is the line printed above the output of a partial bundle;
// what is the output ("the numbers below", "the report").
func warningLine(warning, what string) string {
	return "warning: " + warning + "; " + what + " cover only the decisions it holds"
}
