package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
)

// addPartialFlag defines -partial for analyze, compare and report.
//
// Note: unfinished or damaged bundles are never read silently (docs/commands.md,
// "Partial and damaged bundles"): a missing or corrupt manifest.json is an error naming the
// file; a partial bundle (unfinished, or holding another number of
// decisions than its manifest.json records) is refused unless -partial is
// given, and then every output says so first.
func addPartialFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("partial", false, "use a partial bundle too: unfinished, or holding another number of decisions than its manifest.json records (the output says so first)")
}

// analyzed is a bundle that analyze, report or power read and analyzed.
type analyzed struct {
	info *analysis.BundleInfo
	*analysis.Loaded
	warning string // for a partial bundle, "" for a complete one
	an      *analysis.Analysis
}

// analyzeBundle reads bundle dir for cmd and analyzes it with opt. It
// reads dir's manifest.json: a missing or corrupt file is an error naming
// it; unless partial, a bundle that manifest.json records as unfinished is
// refused before any decision is read, and one holding another number of
// decisions after they are read (checkPartial). The comparisons the
// manifest declared (its comparisons field) are added to opt, as
// predeclared.
func analyzeBundle(ctx context.Context, cmd, dir string, partial bool, opt analysis.Options, log io.Writer) (*analyzed, error) {
	info, err := analysis.ReadBundleInfo(dir)
	if err != nil {
		return nil, err
	}
	if !partial && info.Unfinished() {
		return nil, refusePartial(cmd, info, info.Partial(-1))
	}
	for i, c := range info.Manifest.Comparisons {
		spec, err := analysis.ParsePairSpec(c, simulator.Strict)
		if err != nil {
			return nil, fmt.Errorf("%s: %s/manifest.json: field manifest.comparisons[%d]: %w", cmd, info.Dir, i, err)
		}
		opt.Declared = append(opt.Declared, spec)
	}
	b := &analyzed{info: info}
	if b.Loaded, err = loadBundle(ctx, cmd, dir, info, log); err != nil {
		return nil, err
	}
	if b.warning, err = checkPartial(cmd, info, b.Acc.Decisions(), partial); err != nil {
		return nil, err
	}
	if b.an, err = b.Acc.Analyze(ctx, opt); err != nil {
		return nil, analyzeError(cmd, err)
	}
	return b, nil
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

// loadBundle reads bundle dir for analysis (analysis.LoadBundle). A bundle
// that manifest.json records as unfinished and that has no
// decisions.parquet is one a run was killed in, or one still running: a
// session removes the file when it starts and writes it when it ends or
// is interrupted. That is an error naming the file and saying that stress
// run -resume finishes the bundle. It is reached only with -partial: an
// unfinished bundle is refused before without it.
func loadBundle(ctx context.Context, cmd, dir string, info *analysis.BundleInfo, log io.Writer) (*analysis.Loaded, error) {
	if err := checkParquet(cmd, dir, info); err != nil {
		return nil, err
	}
	return analysis.LoadBundle(ctx, dir, log)
}

// checkParquet returns the error for an unfinished bundle without
// decisions.parquet (see loadBundle), nil otherwise.
func checkParquet(cmd, dir string, info *analysis.BundleInfo) error {
	pq := filepath.Join(dir, results.DecisionsFile)
	if _, err := os.Stat(pq); errors.Is(err, fs.ErrNotExist) && info.Unfinished() {
		return fmt.Errorf("%s -partial: %s is missing: the run was killed before it wrote it (or is still running); "+
			"finish it with stress run -resume %s, which writes it", cmd, pq, info.Dir)
	}
	return nil
}
