package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
)

// Loaded is a bundle read for analysis: its decisions re-scored from
// calls.jsonl and checked against decisions.parquet, and its transport
// events, from one pass over calls.jsonl.
type Loaded struct {
	Acc       *Accumulator
	Transport *TransportSummary
	// Problems counts the damaged lines and broken trajectories met (each
	// written to the log).
	Problems int
}

// LoadBundle reads bundle dir for analysis: one streaming pass over
// calls.jsonl re-scores every decision and summarizes transport events,
// one over decisions.parquet fingerprints its rows; only when the two
// disagree are both read whole, to name the decisions that differ (an
// error). Problems and disagreements are written to log, one a line. A
// cancelled ctx stops both passes.
func LoadBundle(ctx context.Context, dir string, log io.Writer) (*Loaded, error) {
	return LoadBundleEach(ctx, dir, log, nil)
}

// LoadBundleEach is LoadBundle that also hands each decision, in the
// order of calls.jsonl, to each (when not nil): its call lines (their
// heads, with their place in the file) and its row, valid until each
// returns; an error from each stops the pass and is returned. It does
// not regroup: a bundle whose calls.jsonl and decisions.parquet disagree
// is an error even when a decision's lines only stood in more than one
// place, since each has seen those lines apart.
func LoadBundleEach(ctx context.Context, dir string, log io.Writer, each func(*results.Group, *results.Row) error) (*Loaded, error) {
	callsPath := filepath.Join(dir, results.CallsFile)
	pqPath := filepath.Join(dir, results.DecisionsFile)
	f, err := input.OpenStream(callsPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The defaults table says which conditions express each scenario
	// (like-for-like contrasts). Read loads it again for the lines and
	// reports a table it cannot read, as it did before the table held
	// more than what lines leave out; without one, nothing is restricted.
	defaults, _ := results.LoadDefaults(filepath.Join(dir, results.DefaultsFile))
	ld := &Loaded{Acc: NewAccumulator()}
	ld.Acc.NoteCoverage(defaults)
	// A file written before some outcome columns existed is compared
	// without them; the counts are the calls' (they have every column).
	// An unreadable file is reported by the Parquet pass.
	missing, _ := results.MissingColumns(pqPath)
	var fromCalls, fromParquet results.Fingerprint
	// The two passes are independent: the Parquet one runs beside.
	pqDone := make(chan error, 1)
	go func() {
		var err error
		fromParquet, err = parquetFingerprint(ctx, dir, missing)
		pqDone <- err
	}()
	n := 0
	ts, problems, err := readCalls(f, callsPath, func(g *results.Group, r *results.Row) error {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if each != nil {
			if err := each(g, r); err != nil {
				return err
			}
		}
		ld.Acc.Add(r)
		ld.Acc.NoteProvenSet(g.Heads[0].PreferredSet)
		if len(missing) > 0 {
			m := r.Without(missing)
			r = &m
		}
		fromCalls.Add(r)
		return nil
	})
	pqErr := <-pqDone
	if err != nil {
		return nil, err
	}
	ld.Transport, ld.Problems = ts, len(problems)
	for _, p := range problems {
		fmt.Fprintln(log, "problem:", p)
	}
	if pqErr != nil {
		return nil, fmt.Errorf("%w (%s)", pqErr, rebuildHint(dir))
	}
	if fromCalls == fromParquet {
		return ld, nil
	}
	rows, err := agreeInMemory(dir, callsPath, pqPath, missing, log)
	if err != nil {
		return nil, err
	}
	if each != nil {
		return nil, fmt.Errorf("%s: the lines of some decisions stand in more than one place (stress analyze %s reads them; a finished run writes each decision's lines together)", callsPath, dir)
	}
	// The files agree once calls.jsonl is grouped by decision key: a
	// decision's lines stood in more than one place.
	wide := ld.Acc.provenWide
	ld.Acc = NewAccumulator()
	ld.Acc.provenWide = wide
	ld.Acc.NoteCoverage(defaults)
	for i := range rows {
		ld.Acc.Add(&rows[i])
	}
	return ld, nil
}

// parquetFingerprint is the fingerprint of the rows of dir's
// decisions.parquet: the one summary.json recorded when the file was
// written, while the file is byte for byte that one (its sha256), else
// read from the file's rows, without the columns missing from it.
func parquetFingerprint(ctx context.Context, dir string, missing []simulator.Col) (results.Fingerprint, error) {
	pqPath := filepath.Join(dir, results.DecisionsFile)
	var sum results.Summary
	b, err := input.ReadFile(filepath.Join(dir, results.SummaryFile), input.BundleJSON)
	if err == nil && len(missing) == 0 && json.Unmarshal(b, &sum) == nil && sum.Parquet.SHA256 != "" {
		if fp, err := sum.Parquet.Fingerprint(); err == nil {
			if h, err := results.FileSHA256(pqPath); err == nil && h == sum.Parquet.SHA256 {
				return fp, nil
			}
		}
	}
	var fp results.Fingerprint
	n := 0
	err = results.ScanRows(pqPath, func(r *results.Row) error {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		m := r.Without(missing)
		fp.Add(&m)
		return nil
	})
	return fp, err
}

// agreeInMemory reads both files whole, grouping call lines by decision
// key wherever they stand, and reports the decisions on which calls.jsonl
// and decisions.parquet disagree (without the columns missing from the
// latter).
func agreeInMemory(dir, callsPath, pqPath string, missing []simulator.Col, log io.Writer) ([]results.Row, error) {
	f, err := input.OpenStream(callsPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, _, err := Rescore(f, callsPath)
	if err != nil {
		return nil, err
	}
	pq, err := results.ReadRows(pqPath)
	if err != nil {
		return nil, err
	}
	cmp := rows
	if len(missing) > 0 {
		cmp = make([]results.Row, len(rows))
		for i := range rows {
			cmp[i] = rows[i].Without(missing)
		}
		for i := range pq {
			pq[i] = pq[i].Without(missing)
		}
	}
	errs := Agree(cmp, pq, 20)
	for _, e := range errs {
		fmt.Fprintln(log, "disagreement:", e)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %s and %s disagree (%d reported; %s)", dir, results.CallsFile, results.DecisionsFile, len(errs), rebuildHint(dir))
	}
	return rows, nil
}

// rebuildHint says how a bundle's derived Parquet file is rebuilt: it is
// not fsynced, so a crash can leave it empty or stale.
func rebuildHint(dir string) string {
	return fmt.Sprintf("%s is derived from %s: stress run -resume %s rebuilds it", results.DecisionsFile, results.CallsFile, dir)
}
