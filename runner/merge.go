package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/results"
)

// MergeOptions tunes Merge.
type MergeOptions struct {
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// Log receives messages (default io.Discard).
	Log io.Writer
}

// Merge combines the finished shard bundles dirs (stress run -shard i/n,
// one per shard) into one bundle at out: calls.jsonl in canonical order,
// decisions.parquet and summary.json rebuilt from it, and manifest.json
// listing the shards. It refuses shards of different manifests, corpora or
// prompts, unfinished shards, a shard given twice or missing, decisions in
// the wrong shard or in two shards, and missing decisions. The bundle is
// written under a temporary name and renamed into place once complete
// (internal/outdir): a merge stopped by ctx, or failing, leaves nothing
// at out.
func Merge(ctx context.Context, out string, dirs []string, opt MergeOptions) (*results.Record, *results.Summary, error) {
	if err := outdir.Check(out, mergeOwned); err != nil {
		return nil, nil, err
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	if len(dirs) == 0 {
		return nil, nil, errors.New("merge: no shard bundles given")
	}
	// The shards are locked too, so that no resume writes one meanwhile;
	// one that is not a bundle of this format is refused first (and not
	// given a lock file).
	locked := map[string]bool{}
	for _, d := range dirs {
		if _, err := results.ReadRecord(d); err != nil {
			return nil, nil, err
		}
		abs, err := filepath.Abs(d)
		if err != nil || locked[abs] {
			continue // given twice (said below)
		}
		locked[abs] = true
		lock, err := results.LockBundle(d, "stress merge")
		if err != nil {
			return nil, nil, err
		}
		defer lock.Unlock()
	}
	recs := make([]*results.Record, len(dirs))
	for k, d := range dirs {
		r, err := results.ReadRecord(d)
		if err != nil {
			return nil, nil, err
		}
		if r.Coding() {
			return nil, nil, results.CodingError(d)
		}
		recs[k] = r
	}
	base := recs[0]
	var errs []error
	byShard := map[int]int{}
	n := 0
	for k, r := range recs {
		sh := shardOf(r)
		if k == 0 {
			n = sh.N
		}
		if err := sameStudy(base, r); err != nil {
			errs = append(errs, fmt.Errorf("%s and %s are not shards of one study: %w", dirs[0], dirs[k], err))
			continue
		}
		if sh.N != n {
			errs = append(errs, fmt.Errorf("%s is shard %s but %s is shard %s: the shard counts differ", dirs[k], sh, dirs[0], results.Shard{I: 1, N: n}))
			continue
		}
		if prev, dup := byShard[sh.I]; dup {
			errs = append(errs, fmt.Errorf("%s and %s both hold shard %s", dirs[prev], dirs[k], sh))
			continue
		}
		byShard[sh.I] = k
		if a, b := submission(base), submission(r); a != b {
			errs = append(errs, fmt.Errorf("%s and %s are shards of different submissions (%s %q and %q): merge the shards of one submission", dirs[0], dirs[k], submissionVar, a, b))
			continue
		}
		if r.Remaining != 0 || r.Finished == nil {
			errs = append(errs, fmt.Errorf("%s: shard %s is not finished (%d decisions remain); resume it with: stress run -resume %s", dirs[k], sh, r.Remaining, dirs[k]))
		}
	}
	if len(errs) == 0 {
		for i := 1; i <= n; i++ {
			if _, ok := byShard[i]; !ok {
				errs = append(errs, fmt.Errorf("shard %d/%d is missing", i, n))
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}

	sp := newSpace(&base.Manifest, base.Scenarios, results.Shard{I: 1, N: 1})
	idx, err := newLocTable(os.TempDir(), sp.total())
	if err != nil {
		return nil, nil, err
	}
	defer idx.Close()
	files := make([]string, len(dirs))
	tables := make([]*results.Messages, len(dirs))
	defaults, err := mergeDefaults(dirs)
	if err != nil {
		return nil, nil, err
	}
	for k, d := range dirs {
		files[k] = filepath.Join(d, results.CallsFile)
		t, err := results.LoadMessages(filepath.Join(d, results.MessagesFile), durableOr(recs[k].MessagesDurable))
		if err == nil && t.Torn > 0 {
			err = fmt.Errorf("%s: %d bytes of torn tail; resume the shard first", filepath.Join(d, results.MessagesFile), t.Torn)
		}
		if err != nil {
			return nil, nil, err
		}
		tables[k] = t
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if err := indexShard(files[k], int32(k), recs[k], sp, idx, base.ReplayCap, dirs, t, defaults); err != nil {
			return nil, nil, err
		}
	}
	var missing []string
	count := 0
	if err := idx.each(func(i int, l loc, _ outcome) error {
		if !l.done() {
			if len(missing) < 5 {
				missing = append(missing, sp.key(i).String())
			}
			count++
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	if count > 0 {
		return nil, nil, fmt.Errorf("merge: %d decisions are in no shard, e.g. %v", count, missing)
	}

	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	now := opt.Now().UTC()
	od, err := outdir.Create(out, mergeOwned)
	if err != nil {
		return nil, nil, err
	}
	defer od.Abort()
	od.ReportSwept(opt.Log)
	final := out
	out, runID, lock, err := createBundle(od.Path(), "", "", now, base.Manifest.Name+"-merged", "stress merge")
	if err != nil {
		return nil, nil, err
	}
	defer lock.Unlock()
	rec := *base
	rec.RunID = runID
	rec.Binary = results.BinaryInfo()
	rec.Models, rec.Shard, rec.Sessions = nil, nil, nil
	rec.Decisions, rec.Completed, rec.Remaining = sp.total(), sp.total(), 0
	rec.Finished = &now
	for k, r := range recs {
		if r.Started.Before(rec.Started) {
			rec.Started = r.Started
		}
		sh := shardOf(r)
		rec.MergedFrom = append(rec.MergedFrom, results.MergedShard{Dir: dirs[k], RunID: r.RunID, Shard: sh, Binary: r.Binary, Models: r.Models, Sessions: r.Sessions})
	}
	slices.SortFunc(rec.MergedFrom, func(a, b results.MergedShard) int { return a.Shard.I - b.Shard.I })
	// The shards' messages, each once, are written (and synced) before
	// the call lines that refer to them.
	ml, err := results.OpenMessageLog(filepath.Join(out, results.MessagesFile), 0, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range tables {
		t.Each(ml.AddRaw)
		if err := ml.Flush(); err != nil {
			ml.Close()
			return nil, nil, err
		}
	}
	if err := ml.Close(); err != nil {
		return nil, nil, err
	}
	msgSize := ml.Size()
	rec.MessagesDurable = &msgSize
	if _, err := results.KeepDefaults(filepath.Join(out, results.DefaultsFile), defaults, true); err != nil {
		return nil, nil, err
	}
	src, err := openSources(files)
	if err != nil {
		return nil, nil, err
	}
	defer closeSources(src)
	sum, size, err := writeBundle(bundleWrite{dir: out, runID: rec.RunID, sp: sp, idx: idx, src: src, defaults: defaults})
	if err != nil {
		return nil, nil, err
	}
	rec.CallsDurable = &size
	if err := results.WriteJSONUnsynced(filepath.Join(out, results.SummaryFile), sum); err != nil {
		return nil, nil, err
	}
	if err := results.WriteJSON(filepath.Join(out, results.ManifestFile), &rec); err != nil {
		return nil, nil, err
	}
	if err := syncDir(out); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	lock.Unlock()
	if err := od.Commit(); err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(opt.Log, "merged %d shards into %s: %d decisions, %d calls, %d errors\n", len(dirs), final, sum.Decisions, sum.Calls, sum.Errors)
	return &rec, sum, nil
}

// mergeOwned: a merge's output directory may exist empty, or holding
// only the lock file a failed start left.
var mergeOwned = outdir.Names(results.LockFile)

// mergeDefaults is the defaults table of the shards in dirs, which must
// all have the same (results.Defaults.Same). It records which conditions
// express each scenario only when every shard's does: a shard written
// before tables recorded it leaves the merged bundle without it, as that
// shard is.
func mergeDefaults(dirs []string) (*results.Defaults, error) {
	var d *results.Defaults
	coverage := true
	for _, dir := range dirs {
		file := filepath.Join(dir, results.DefaultsFile)
		e, err := results.LoadDefaults(file)
		if err != nil {
			return nil, err
		}
		coverage = coverage && e.Coverage()
		if d == nil {
			d = e
		} else if err := e.Same(d, file); err != nil {
			return nil, err
		}
	}
	if d != nil && !coverage {
		d = d.WithoutCoverage()
	}
	return d, nil
}

// sameStudy reports how two bundles' studies differ.
func sameStudy(a, b *results.Record) error {
	var errs []error
	if a.ManifestSHA256 != b.ManifestSHA256 {
		errs = append(errs, fmt.Errorf("manifest sha256 %s and %s differ", a.ManifestSHA256, b.ManifestSHA256))
	}
	errs = append(errs, sameFiles("corpus file", a.CorpusFiles, b.CorpusFiles)...)
	hash := func(p results.PromptRecord) fileHash { return fileHash{p.Name, p.SHA256} }
	errs = append(errs, sameHashes("prompt template", hashesOf(a.Prompts, hash), hashesOf(b.Prompts, hash))...)
	if !slices.Equal(a.Scenarios, b.Scenarios) || a.ReplayCap != b.ReplayCap {
		errs = append(errs, errors.New("scenario lists or replay caps differ"))
	}
	return errors.Join(errs...)
}

// indexShard locates every decision of one shard's calls.jsonl in idx.
// Every message its lines refer to must be in t, the shard's messages;
// d (the shards' one defaults table, mergeDefaults) fills what its lines
// leave out.
func indexShard(file string, k int32, rec *results.Record, sp *space, idx *locTable, replayCap int, dirs []string, t *results.Messages, d *results.Defaults) error {
	f, err := input.OpenStream(file)
	if err != nil {
		return err
	}
	defer f.Close()
	sh := shardOf(rec)
	gr := results.NewGroupReader(f, file)
	gr.SetDefaults(d)
	for gr.Next() {
		g := gr.Group()
		i, ok := sp.index(g.Key)
		switch {
		case !ok:
			return fmt.Errorf("%s:%d: decision %s is not one of the manifest's decisions", file, g.Line, g.Key)
		case i%sh.N != sh.I-1:
			return fmt.Errorf("%s:%d: decision %s belongs to shard %d/%d, not %s", file, g.Line, g.Key, i%sh.N+1, sh.N, sh)
		case !g.Complete(replayCap):
			return fmt.Errorf("%s:%d: decision %s is incomplete; resume the shard first", file, g.Line, g.Key)
		case idx.get(i).done():
			return fmt.Errorf("%s:%d: decision %s is also in %s (shards overlap)", file, g.Line, g.Key, dirs[idx.get(i).file])
		case g.Size > 1<<32-1:
			return fmt.Errorf("%s:%d: decision %s has more than 4 GiB of lines", file, g.Line, g.Key)
		}
		if ref := missingRef(g, t); ref != "" {
			return fmt.Errorf("%s:%d: decision %s refers to message %s, which is not in the shard's %s", file, g.Line, g.Key, ref, results.MessagesFile)
		}
		idx.put(i, loc{off: g.Offset, size: uint32(g.Size), file: k}, outcome{})
	}
	if err := gr.Err(); err != nil {
		return err
	}
	if err := idx.Err(); err != nil {
		return err
	}
	if t := gr.Torn(); t != nil {
		return fmt.Errorf("%s:%d: %s; resume the shard first", file, t.Line, t.Reason)
	}
	return nil
}

// shardOf returns the shard the bundle of rec runs: 1/1 for a whole
// study.
// submission is the scheduler submission rec was created in, "" for none.
func submission(rec *results.Record) string {
	if rec.Scheduler == nil {
		return ""
	}
	return rec.Scheduler.Submission
}

func shardOf(rec *results.Record) results.Shard {
	if rec.Shard != nil {
		return *rec.Shard
	}
	return results.Shard{I: 1, N: 1}
}

// durableOr returns *n, or -1 (unknown) when n is nil.
func durableOr(n *int64) int64 {
	if n == nil {
		return -1
	}
	return *n
}
