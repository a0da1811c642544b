package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/study"
)

// compatible lists how the plan differs from the run recorded in rec: a
// resumed or merged bundle must come from the same manifest, corpus and
// prompt templates, byte for byte.
func (p *Plan) compatible(rec *results.Record) error {
	m := p.m
	var errs []error
	if rec.ManifestSHA256 != m.SHA256 {
		errs = append(errs, fmt.Errorf("the manifest changed: sha256 %s when the run started, %s now (%s)", rec.ManifestSHA256, m.SHA256, m.Source))
	}
	errs = append(errs, sameFiles("corpus file", rec.CorpusFiles, m.Corpus.Files)...)
	then := hashesOf(rec.Prompts, func(pr results.PromptRecord) fileHash { return fileHash{pr.Name + " (" + pr.Path + ")", pr.SHA256} })
	now := hashesOf(m.Prompts, func(pf manifests.PromptFile) fileHash { return fileHash{pf.Name + " (" + pf.Path + ")", pf.SHA256} })
	errs = append(errs, sameHashes("prompt template", then, now)...)
	if rec.Scenarios != nil && !slices.Equal(rec.Scenarios, p.scenarioIDs()) {
		errs = append(errs, errors.New("the corpus' scenario ids changed"))
	}
	return errors.Join(errs...)
}

type fileHash struct{ name, sha string }

// hashesOf is the file hash fn gives each of xs.
func hashesOf[T any](xs []T, fn func(T) fileHash) []fileHash {
	out := make([]fileHash, len(xs))
	for i, x := range xs {
		out[i] = fn(x)
	}
	return out
}

func sameFiles(what string, then, now []study.File) []error {
	hash := func(f study.File) fileHash { return fileHash{f.Path, f.SHA256} }
	return sameHashes(what, hashesOf(then, hash), hashesOf(now, hash))
}

func sameHashes(what string, then, now []fileHash) []error {
	var errs []error
	old := map[string]string{}
	for _, f := range then {
		old[f.name] = f.sha
	}
	seen := map[string]bool{}
	for _, f := range now {
		seen[f.name] = true
		sha, ok := old[f.name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s %s was added", what, f.name))
		case sha != f.sha:
			errs = append(errs, fmt.Errorf("%s %s changed: sha256 %s when the run started, %s now", what, f.name, sha, f.sha))
		}
	}
	for _, f := range then {
		if !seen[f.name] {
			errs = append(errs, fmt.Errorf("%s %s was removed", what, f.name))
		}
	}
	return errs
}

// Resume continues the run whose bundle is dir: it keeps every decision
// calls.jsonl holds whole, cuts off a torn tail (a partial line, or the
// first lines of a decision interrupted mid-trajectory, which is redone
// from its first turn), runs the remaining decisions and rewrites the
// bundle. It refuses, saying why, when the plan's manifest, corpus or
// prompts differ from the recorded ones, or when opt.Shard names another
// shard. Resuming a finished bundle only rewrites its derived files.
func (p *Plan) Resume(ctx context.Context, dir string, opt Options) (*results.Summary, error) {
	opt = opt.withDefaults()
	if err := p.checkEnv(opt); err != nil {
		return nil, err
	}
	if _, err := results.ReadRecord(dir); err != nil {
		return nil, err
	}
	lock, err := results.LockBundle(dir, "stress run -resume")
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	rec, err := results.ReadRecord(dir) // again, now that no one else writes it
	if err != nil {
		return nil, err
	}
	if err := p.compatible(rec); err != nil {
		return nil, fmt.Errorf("cannot resume %s:\n%w", dir, err)
	}
	shard := shardOf(rec)
	if opt.Shard.N != 0 && opt.Shard != shard {
		return nil, fmt.Errorf("cannot resume %s: it runs shard %s, not %s", dir, shard, opt.Shard)
	}
	if err := p.preflight(ctx, opt.Log); err != nil {
		return nil, err
	}
	sp := newSpace(&p.m.Manifest, p.scenarioIDs(), shard)
	idx, err := newLocTable(dir, sp.count())
	if err != nil {
		return nil, err
	}
	defer idx.Close()
	s := &session{p: p, dir: dir, rec: rec, sp: sp, idx: idx, opt: opt}
	// The lines are read with the study's defaults.json, written again
	// when a crash tore it (p.compatible checked the study is the one
	// recorded).
	rewrote, err := s.keepDefaults()
	if err != nil {
		return nil, err
	}
	if err := s.recover(); err != nil {
		return nil, fmt.Errorf("cannot resume %s: %w", dir, err)
	}
	if last := &rec.Sessions[len(rec.Sessions)-1]; len(rec.Sessions) > 0 && (last.Ended == nil || last.Error != "") {
		// The killed session (or the one an error stopped) recorded what
		// it ran up to its last sync; the decisions kept after that point
		// were run by it too.
		last.Ran += s.afterDurable
	}
	// Cut calls.jsonl to the decisions kept and make them durable before
	// the new session is recorded, so that the durable point and the
	// sessions' counts always change together. The session appends
	// through the logs opened here (s.calls): opening them again, or
	// closing them with nothing written, would fsync each file again.
	msgs, err := results.OpenMessageLog(filepath.Join(dir, results.MessagesFile), s.msgKeep, s.msgs)
	if err != nil {
		return nil, err
	}
	calls, err := results.OpenCallLog(filepath.Join(dir, results.CallsFile), s.keep)
	if err != nil {
		msgs.Close()
		return nil, err
	}
	calls.SetMessages(msgs)
	s.calls = calls
	defer func() {
		if s.calls != nil { // run did not take them
			s.calls.Close()
		}
	}()
	rec.CallsDurable, rec.MessagesDurable = &s.keep, &s.msgKeep
	s.msgAt = s.msgKeep
	// The derived files are stale until the session ends; remove them so
	// that nobody reads them meanwhile.
	for _, f := range []string{results.DecisionsFile, results.SummaryFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	started := opt.Now().UTC()
	rec.Sessions = append(rec.Sessions, results.Session{Started: started, Binary: results.BinaryInfo()})
	rec.Finished = nil
	// Not fsynced: until the session's first record, a crash leaves the
	// previous session's, from which a resume starts as well.
	if err := results.WriteJSONUnsynced(filepath.Join(dir, results.ManifestFile), rec); err != nil {
		return nil, err
	}
	done, err := s.idx.done()
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("resume %s: %d of %d decisions done, %d to run", rec.RunID, done, sp.count(), sp.count()-done)
	if s.redone > 0 {
		msg += fmt.Sprintf(", %d interrupted mid-trajectory (redone from turn 0)", s.redone)
	}
	if s.torn > 0 {
		msg += fmt.Sprintf(", torn tail of %d bytes discarded", s.torn)
	}
	if s.retried > 0 {
		msg += fmt.Sprintf(", %d error decisions to retry", s.retried)
	}
	if rewrote {
		msg += fmt.Sprintf(", %s written again from the study (it was missing or torn)", results.DefaultsFile)
	}
	fmt.Fprintln(opt.Log, msg)
	if b := results.BinaryInfo(); b.Revision != rec.Binary.Revision && rec.Binary.Revision != "" {
		fmt.Fprintf(opt.Log, "note: this binary (revision %s) differs from the one that started the run (%s)\n", b.Revision, rec.Binary.Revision)
	} else if b.SHA256 != rec.Binary.SHA256 && rec.Binary.SHA256 != "" && b.Revision == "" {
		fmt.Fprintf(opt.Log, "note: this binary (sha256 %.12s) differs from the one that started the run (%.12s)\n", b.SHA256, rec.Binary.SHA256)
	}
	return s.run(ctx)
}

// recover reads calls.jsonl: it locates every whole decision, counts the
// decisions interrupted mid-trajectory and the torn tail, and sets keep to
// the end of the last whole decision. A decision that is not in the
// bundle's slice of the study, a decision written twice, or a damaged line
// that is not at the end is an error: the file was not left that way by a
// crash.
func (s *session) recover() error {
	file := filepath.Join(s.dir, results.CallsFile)
	f, err := input.OpenStream(file)
	if errors.Is(err, os.ErrNotExist) {
		if d := s.rec.CallsDurable; d != nil && *d > 0 {
			return fmt.Errorf("%s is missing, but its first %d bytes were known durable: data that was on stable storage is missing", file, *d)
		}
		return nil // killed before the first write
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	msgs, err := results.LoadMessages(filepath.Join(s.dir, results.MessagesFile), durableOr(s.rec.MessagesDurable))
	if err != nil {
		return err
	}
	s.msgs, s.msgKeep = msgs, msgs.Size
	gr := results.NewGroupReader(f, file)
	durable := int64(-1)
	if d := s.rec.CallsDurable; d != nil {
		durable = *d
		if st.Size() < durable {
			return fmt.Errorf("%s has %d bytes, fewer than the %d known durable: data that was on stable storage is missing", file, st.Size(), durable)
		}
		gr.SetDurable(durable)
	}
	failedAt := map[int]bool{} // error decisions kept so far, by local index
	var end int64
	incomplete := 0
	for gr.Next() {
		g := gr.Group()
		i, ok := s.sp.index(g.Key)
		if !ok {
			return fmt.Errorf("%s:%d: decision %s is not one of the manifest's decisions", file, g.Line, g.Key)
		}
		j, ok := s.sp.local(i)
		if !ok {
			return fmt.Errorf("%s:%d: decision %s belongs to another shard than %s", file, g.Line, g.Key, s.sp.shard)
		}
		if !g.Complete(s.p.m.Cap()) {
			incomplete++
			continue
		}
		if ref := missingRef(g, msgs); ref != "" {
			if durable >= 0 && g.Offset < durable {
				return fmt.Errorf("%s:%d: decision %s refers to message %s, which is not in %s (a line within the bytes known durable: the files were changed after they were written)", file, g.Line, g.Key, ref, results.MessagesFile)
			}
			// Its messages were lost with the tail of messages.jsonl: this
			// decision and everything after it are a torn tail.
			break
		}
		failed := g.Failed()
		if failed && s.opt.RetryErrors {
			s.retried++
			continue
		}
		prev := s.idx.get(j)
		// Note: an error decision followed by the same decision again is
		// what a -retry-errors session cut short leaves: the later one
		// wins. Any other repeat is not a crash's doing.
		if prev.done() && !failedAt[j] {
			return fmt.Errorf("%s:%d: decision %s appears twice (first at byte %d)", file, g.Line, g.Key, prev.off)
		}
		if failed {
			failedAt[j] = true
		} else {
			delete(failedAt, j)
		}
		if g.Size > 1<<32-1 {
			return fmt.Errorf("%s:%d: decision %s has more than 4 GiB of lines", file, g.Line, g.Key)
		}
		if !prev.done() {
			s.resumed++
		}
		if durable >= 0 && g.Offset >= durable {
			s.afterDurable++
		}
		s.idx.put(j, loc{off: g.Offset, size: uint32(g.Size)}, outcome{})
		end = g.Offset + g.Size
	}
	if err := gr.Err(); err != nil {
		return err
	}
	if err := s.idx.Err(); err != nil {
		return err
	}
	s.keep = end
	s.torn = st.Size() - end
	s.redone = incomplete
	return nil
}

// missingRef returns the first message ref of g's lines that t lacks, or
// "".
func missingRef(g *results.Group, t *results.Messages) string {
	for i := range g.Heads {
		for _, ref := range g.Heads[i].Request.Refs {
			if !t.Has(ref) {
				return ref
			}
		}
	}
	return ""
}
