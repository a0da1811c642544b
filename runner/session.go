package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// loc is where a decision's lines are: file (an index into the sources
// being read), byte offset and length. size 0 means the decision is not
// done.
type loc struct {
	off  int64
	size uint32
	file int32
}

func (l loc) done() bool { return l.size > 0 }

// session is one run (or resume) of a bundle: it runs the decisions not yet
// done and then rewrites the bundle's derived files.
type session struct {
	p   *Plan
	dir string
	rec *results.Record
	sp  *space
	// idx is, by shard-local index, where each done decision's lines are
	// and, for decisions run in this session, their outcome.
	idx *locTable
	opt Options

	keep   int64 // bytes of calls.jsonl to keep (whole decisions)
	redone int   // interrupted decisions found on resume
	torn   int64 // bytes of torn tail discarded on resume
	// retried counts the error decisions set aside on resume to be run
	// again (Options.RetryErrors).
	retried int
	// resumed counts the decisions found done on resume; 0 spares a new
	// run from reading the index to skip them.
	resumed int
	// afterDurable counts the decisions kept on resume that lie past the
	// recorded durable point (run by a killed session after its last sync).
	afterDurable int
	// durableAt is the byte count of the last checkpoint, ranDurable the
	// session's decisions it held.
	durableAt  int64
	ranDurable int
	// dirSynced says the bundle's directory was fsynced this session:
	// the entries of the files it created are durable.
	dirSynced bool
	// msgs is the message table found on resume (nil for a new run);
	// msgKeep the bytes of messages.jsonl to keep, and msgAt the bytes of
	// it known durable.
	msgs           *results.Messages
	msgKeep, msgAt int64
	// calls is the call log (with its message log) a resume opened, cut
	// to keep and made durable; run appends through it (nil: run opens
	// the logs).
	calls *results.CallLog
	// defaults is the bundle's defaults table (set by run).
	defaults *results.Defaults
}

// checkpoint records in manifest.json that the first n bytes of
// calls.jsonl are durable, with the current session's progress.
func (s *session) checkpoint(n int64) error {
	s.durable(n)
	return s.record(false)
}

// durable sets the record's durable points: the first n bytes of
// calls.jsonl and msgAt of messages.jsonl, with the session's decisions
// they hold.
func (s *session) durable(n int64) {
	s.rec.CallsDurable, s.durableAt = &n, n
	s.ranDurable = s.rec.Sessions[len(s.rec.Sessions)-1].Ran
	m := s.msgAt
	s.rec.MessagesDurable = &m
}

// record writes manifest.json, fsynced: the record a resume starts from.
// The fsyncs a bundle spends, each for what nothing else can restore
// (a one-decision run makes four): messages.jsonl and calls.jsonl at
// each sync (the decisions; messages first, as lines refer to them),
// manifest.json here (the durable point, after the files it vouches for),
// and the directory after the first record and the last (the files'
// names, and the renames before it). The session's opening record is not
// fsynced (before any decision is durable nothing is lost with it), nor
// are the files derived from what the bundle keeps: defaults.json, from
// the study (keepDefaults), decisions.parquet and summary.json, which
// finish rebuilds from calls.jsonl; stress run -resume repairs all three.
func (s *session) record(last bool) error {
	if err := results.WriteJSON(filepath.Join(s.dir, results.ManifestFile), s.rec); err != nil {
		return err
	}
	if s.dirSynced && !last {
		return nil
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	s.dirSynced = true
	return nil
}

// keepDefaults makes the bundle's defaults.json hold the study's table
// (results.KeepDefaults) without an fsync: the table is derived from the
// study, so a crash that tears it loses nothing; the resume, which loads
// the same study, writes it again before reading a line. wrote says it
// wrote the file.
func (s *session) keepDefaults() (wrote bool, err error) {
	s.defaults = results.NewDefaults(s.p.m.Seed, s.p.m.Corpus.Scenarios, s.p.m.Conditions)
	return results.KeepDefaults(filepath.Join(s.dir, results.DefaultsFile), s.defaults, false)
}

// job is one decision to run: its study index and shard-local index.
type job struct{ i, j int }

// finished is a decision that ran.
type finished struct {
	job
	d        simulator.Decision
	endpoint string
}

// maxErrorLines is the number of error decisions a session prints.
const maxErrorLines = 20

// run runs the remaining decisions concurrently, appends them to
// calls.jsonl, then finalizes the bundle: the stages are start (queues
// and workers), graceAfter (the interrupt's grace period), collect (the
// single writer of calls.jsonl) and finish (the bundle and its record).
func (s *session) run(ctx context.Context) (*results.Summary, error) {
	if s.defaults == nil {
		if _, err := s.keepDefaults(); err != nil {
			return nil, err
		}
	}
	calls := s.calls
	s.calls = nil
	if calls == nil {
		msgs, err := results.OpenMessageLog(filepath.Join(s.dir, results.MessagesFile), s.msgKeep, s.msgs)
		if err != nil {
			return nil, err
		}
		if calls, err = results.OpenCallLog(filepath.Join(s.dir, results.CallsFile), s.keep); err != nil {
			msgs.Close()
			return nil, err
		}
		calls.SetMessages(msgs)
	}
	s.msgs = nil // the log holds what it needs of the table
	msgs := calls.Messages()
	calls.SetDefaults(s.defaults)
	s.rec.Format, s.msgAt = results.Format, s.msgKeep
	sess := &s.rec.Sessions[len(s.rec.Sessions)-1]
	sess.Redone, sess.Discarded = s.redone, s.torn
	s.durable(s.keep)
	if err := results.WriteJSONUnsynced(filepath.Join(s.dir, results.ManifestFile), s.rec); err != nil {
		calls.Close()
		return nil, err
	}
	con, err := newConsole(s.opt, s.rec, s.sp, s.idx)
	if err != nil {
		calls.Close()
		return nil, err
	}

	// runCtx stops new decisions (interrupt, or a write failure); callCtx
	// outlives it by the grace period so calls in flight can finish.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	callCtx, cancelCalls := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelCalls()
	restoreProcs := s.fitProcs()
	out := s.start(runCtx, callCtx)
	allDone := make(chan struct{})
	go s.graceAfter(ctx, allDone, cancelCalls)
	c := &collector{s: s, calls: calls, con: con, sess: sess, stop: func() { stopRun(); cancelCalls() }, stopped: map[string]int{}}
	c.collect(ctx, callCtx, out)
	restoreProcs()
	close(allDone)
	con.clear()
	if note := stoppedNote(c.stopped); note != "" {
		con.logf("%s", note)
	}
	if err := calls.Close(); err != nil && c.err == nil {
		c.err = err
	}
	if c.err == nil {
		s.msgAt = msgs.Size()
		return s.finish(ctx, sess)
	}
	// The session ends here: recorded with its error and the decisions it
	// made durable (a resume credits it the rest).
	end := s.opt.Now().UTC()
	sess.Ended, sess.Interrupted, sess.Error, sess.Ran = &end, true, c.err.Error(), s.ranDurable
	err = fmt.Errorf("%w (the bundle keeps every decision written before; fix the cause and resume)", c.err)
	if werr := s.record(true); werr != nil {
		err = errors.Join(err, werr)
	}
	return nil, err
}

// callsPerProc is how many calls in flight to servers one processor
// serves (Options.FitProcs). Note: at 8 calls in flight to a stub that
// answers at once (scripts/floor), the worst case, a run of 9,996
// requests on two cores took 10% less wall time and 27% less CPU time
// with one processor than with two; a server that takes longer leaves a
// processor idler still.
const callsPerProc = 8

// fitProcs lowers GOMAXPROCS to one processor per callsPerProc calls in
// flight for Options.FitProcs and returns what restores it.
func (s *session) fitProcs() (restore func()) {
	m := s.p.m
	procs := runtime.GOMAXPROCS(0)
	want := (m.InFlight() + callsPerProc - 1) / callsPerProc
	if !s.opt.FitProcs || want >= procs {
		return func() {}
	}
	for _, md := range m.Models {
		if b, err := models.Lookup(md.Backend); err != nil || !b.Waits {
			return func() {}
		}
	}
	runtime.GOMAXPROCS(want)
	return func() { runtime.GOMAXPROCS(procs) }
}

// start launches, per model, a queue of the decisions still to do and
// parallel workers per endpoint that run them through the simulator, at
// most the manifest's max_in_flight at once. Decisions come out on the
// returned channel, which is closed when every worker is done. No new
// decision starts once runCtx ends; calls in flight run under callCtx.
func (s *session) start(runCtx, callCtx context.Context) <-chan finished {
	p, m, sp := s.p, s.p.m, s.sp
	inFlight := m.InFlight()
	sem := make(chan struct{}, inFlight)
	out := make(chan finished, inFlight)
	var workers sync.WaitGroup
	for mi := range m.Models {
		md := &m.Models[mi]
		cfg := simulator.Config{StudySeed: m.Seed, Temperature: m.Temperature, ReplayCap: m.Cap(), Options: md.Options, Task: simulator.Label}
		if m.Live() {
			cfg.Env = s.opt.Env
			if m.Act() {
				cfg.Task, cfg.NativeTools = simulator.Act, m.NativeTools()
			}
		}
		if p.coder != nil {
			cfg.Task, cfg.Coder = simulator.Coding, p.coder
		}
		q := s.queue(mi)
		for e, host := range md.Hosts() {
			model := p.endpoints[mi][e]
			label := ""
			if len(md.Endpoints) > 0 {
				label = host
			}
			for range max(md.Parallel, 1) {
				workers.Go(func() {
					for {
						select {
						case sem <- struct{}{}:
						case <-runCtx.Done():
							return
						}
						jb, ok := q.take()
						if !ok || runCtx.Err() != nil {
							<-sem
							return
						}
						_, pi, _, si, _ := sp.coords(jb.i)
						d := simulator.Run(callCtx, model, p.prompts[pi], &m.Corpus.Scenarios[si], sp.key(jb.i), cfg)
						<-sem
						out <- finished{job: jb, d: d, endpoint: label}
					}
				})
			}
		}
	}
	go func() {
		workers.Wait()
		close(out)
	}()
	return out
}

// queue hands the decisions of one model in the session's shard that are
// not done yet to the model's workers, in canonical order.
// Note: it replaced a producer goroutine sending on a channel, which
// woke one more goroutine a decision; the workers take the next decision
// themselves (2 to 3% less CPU time for 9,996 requests to a local stub,
// within the machine's noise, and one goroutine fewer to stop).
type queue struct {
	mu        sync.Mutex
	s         *session
	next, end int // the next study index to consider, and the model's end
}

// queue returns the queue of model mi's decisions.
func (s *session) queue(mi int) *queue {
	sp := s.sp
	perModel := sp.perModel()
	// The first study index of this model in the shard, then every N-th.
	first := mi * perModel
	first += ((sp.shard.I-1-first)%sp.shard.N + sp.shard.N) % sp.shard.N
	return &queue{s: s, next: first, end: (mi + 1) * perModel}
}

// take returns the next decision not done yet; ok is false when none is
// left.
func (q *queue) take() (jb job, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.s
	for q.next < q.end {
		i := q.next
		q.next += s.sp.shard.N
		j, _ := s.sp.local(i)
		if s.resumed > 0 && s.idx.get(j).done() {
			continue
		}
		return job{i: i, j: j}, true
	}
	return job{}, false
}

// graceAfter gives calls in flight the grace period once ctx ends (an
// interrupt), then cancels them; a second interrupt (Abort) cancels them at
// once. It returns when allDone is closed.
func (s *session) graceAfter(ctx context.Context, allDone <-chan struct{}, cancelCalls func()) {
	select {
	case <-ctx.Done():
	case <-allDone:
		return
	}
	t := time.NewTimer(s.opt.Grace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.opt.Abort:
	case <-allDone:
	}
	cancelCalls()
}

// collector is the single writer of calls.jsonl while a session runs.
type collector struct {
	s        *session
	calls    *results.CallLog
	con      *console
	sess     *results.Session
	stop     func() // stops new decisions and cancels calls in flight
	err      error  // the first write failure
	errLines int    // error decisions printed
	// stopped counts the answers that ended early, by why
	// (models.StoppedEarly).
	stopped map[string]int
}

// fail records the first write failure and stops the run.
func (c *collector) fail(err error) {
	if c.err == nil {
		c.err = err
		c.stop()
	}
}

// collect appends every decision that comes out to calls.jsonl, syncs it
// and records the durable point every SyncEvery, and reports progress,
// until out is closed.
func (c *collector) collect(ctx, callCtx context.Context, out <-chan finished) {
	opt := c.s.opt
	syncTick := time.NewTicker(opt.SyncEvery)
	defer syncTick.Stop()
	var progTick <-chan time.Time
	if opt.Progress != nil {
		t := time.NewTicker(opt.ProgressEvery)
		defer t.Stop()
		progTick = t.C
	}
	interrupted := ctx.Done()
	for {
		select {
		case <-interrupted:
			interrupted = nil
			c.con.logf("interrupt: no new decisions start; calls in flight have %s to finish (interrupt again to cancel them)", opt.Grace)
		case f, ok := <-out:
			if !ok {
				return
			}
			if c.err == nil {
				c.add(callCtx, &f, len(out) == 0)
			}
		case <-syncTick.C:
			if c.err == nil {
				c.sync()
			}
		case <-progTick:
			c.con.progress(time.Now())
		}
	}
}

// add appends one decision's call lines and indexes them; idle says no
// other decision is waiting, so the lines are written out at once (a kill
// then loses at most the decisions still in flight).
func (c *collector) add(callCtx context.Context, f *finished, idle bool) {
	s, sp := c.s, c.s.sp
	d := &f.d
	if d.Err != nil && callCtx.Err() != nil {
		return // cancelled by the interrupt: redone on resume
	}
	if len(d.Turns) == 0 || (d.Err != nil && d.Turns[len(d.Turns)-1].Err == nil) {
		// Not a transport failure: the prompt failed to render, or the
		// environment of a live decision failed. The run stops (a resume
		// redoes the decision once the cause is fixed).
		c.fail(fmt.Errorf("decision %s: %w", d.Key, d.Err))
		return
	}
	_, _, _, si, _ := sp.coords(f.i)
	off, n, err := c.calls.Append(d, &s.p.m.Corpus.Scenarios[si], f.endpoint)
	if err != nil {
		c.fail(err)
		return
	}
	if n > 1<<32-1 {
		c.fail(fmt.Errorf("decision %s: %d bytes of call lines, more than 4 GiB", d.Key, n))
		return
	}
	var o outcome
	if d.Err == nil {
		o = pack(d)
	}
	s.idx.put(f.j, loc{off: off, size: uint32(n)}, o)
	if idle {
		if err := c.calls.Flush(); err != nil {
			c.fail(err)
			return
		}
	}
	for i := range d.Turns {
		if why := models.StoppedEarly(d.Turns[i].Reply.Meta); why != "" {
			c.stopped[why]++
		}
	}
	c.sess.Ran++
	c.con.done1(f.i, d.Err != nil)
	if d.Err != nil {
		if c.errLines < maxErrorLines {
			c.con.logf("error: decision %s: %v", d.Key, d.Err)
		} else if c.errLines == maxErrorLines {
			c.con.logf("error: further error decisions are not printed (stress analyze lists them)")
		}
		c.errLines++
	}
}

// sync makes calls.jsonl durable and, when it grew, records the durable
// point with the session's progress in manifest.json.
func (c *collector) sync() {
	if err := c.calls.Sync(); err != nil {
		c.fail(err)
		return
	}
	c.s.msgAt = c.calls.Messages().Size()
	if n := c.calls.Size(); n != c.s.durableAt {
		if err := c.s.checkpoint(n); err != nil {
			c.fail(err)
		}
	}
}

// finish rewrites the bundle (finalize) and records the session's end in
// manifest.json. When finishing fails, every decision is still in
// calls.jsonl and the session is recorded as interrupted: a resume
// finishes the bundle.
func (s *session) finish(ctx context.Context, sess *results.Session) (*results.Summary, error) {
	sp, opt := s.sp, s.opt
	sum, err := s.finalize()
	if err != nil {
		end := opt.Now().UTC()
		sess.Ended, sess.Interrupted = &end, true
		done, _ := s.idx.done()
		s.rec.Completed, s.rec.Remaining = done, sp.count()-done
		if werr := s.record(true); werr != nil {
			err = errors.Join(err, werr)
		}
		return nil, err
	}
	end := opt.Now().UTC()
	sess.Ended = &end
	s.rec.CallsDurable = &s.durableAt
	msgAt := s.msgAt
	s.rec.MessagesDurable = &msgAt
	s.rec.Completed, s.rec.Remaining = sum.Decisions, sp.count()-sum.Decisions
	sess.Interrupted = s.rec.Remaining > 0
	if s.rec.Remaining == 0 {
		s.rec.Finished = &end
	}
	if err := s.record(true); err != nil {
		return nil, err
	}
	if s.rec.Remaining > 0 {
		if ctx.Err() != nil {
			return sum, fmt.Errorf("%w: %d of %d decisions done, %d remaining", ErrInterrupted, s.rec.Completed, sp.count(), s.rec.Remaining)
		}
		return sum, fmt.Errorf("%d of %d decisions were not done", s.rec.Remaining, sp.count())
	}
	return sum, nil
}

// finalize rewrites the bundle's calls.jsonl in canonical order (unless it
// already is) and rebuilds decisions.parquet and summary.json from it.
func (s *session) finalize() (*results.Summary, error) {
	file := filepath.Join(s.dir, results.CallsFile)
	src, err := openSources([]string{file})
	if err != nil {
		return nil, err
	}
	defer closeSources(src)
	m := s.p.m
	known := func(j int, o outcome) (knownDecision, bool) {
		if !o.ok {
			return knownDecision{}, false
		}
		i := s.sp.global(j)
		_, _, _, si, rep := s.sp.coords(i)
		sc := &m.Corpus.Scenarios[si]
		return knownDecision{o.row(s.sp.key(i), sc.Server, simulator.Seed(m.Seed, sc.ID, rep, 0)), int(o.turns), int(o.events)}, true
	}
	// The canonical file replaces calls.jsonl and may be shorter (it drops
	// superseded and interrupted lines): no more than it holds is durable.
	shrink := func(n int64) error {
		if n < s.durableAt {
			return s.checkpoint(n)
		}
		return nil
	}
	sum, size, err := writeBundle(bundleWrite{dir: s.dir, runID: s.rec.RunID, sp: s.sp, idx: s.idx, src: src, defaults: s.defaults, known: known, beforeRename: shrink})
	if err != nil {
		return nil, err
	}
	s.durableAt = size
	sum.Remaining = s.sp.count() - sum.Decisions
	if err := results.WriteJSONUnsynced(filepath.Join(s.dir, results.SummaryFile), sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// outcome is the row of a decision that ran in this session, in 20
// bytes, so that finalize need not read its lines back (only decisions
// that completed; error decisions, and the rare decision whose numbers do
// not fit, are read back).
type outcome struct {
	ok      bool
	label   uint8 // 1 + index in study.Policies; 0 for none
	status  uint8 // 1 + index in statuses; 0 for none
	turns   uint8
	replays uint8
	flags   results.Flags // the 0/1 columns, and FlagLab when the row has lab outcomes
	events  uint16
	// sums are the row's lab sums (simulator.LabSum columns, in order).
	sums [2]uint32
}

// statuses are the final statuses outcome.status numbers.
var statuses = []study.Status{study.Failed, study.Succeeded}

// pack keeps what the row of completed decision d holds beyond its key.
func pack(d *simulator.Decision) outcome {
	r := results.RowOf(d)
	ev := 0
	for _, t := range d.Turns {
		ev += len(t.Reply.Events)
	}
	if r.Turns > 255 || ev > 65535 {
		return outcome{}
	}
	o := outcome{ok: true, turns: uint8(r.Turns), replays: uint8(r.Replays), events: uint16(ev), flags: results.FlagsOf(&r),
		label:  uint8(slices.Index(study.Policies, study.Policy(r.FinalLabel)) + 1),
		status: uint8(slices.Index(statuses, study.Status(r.FinalStatus)) + 1)}
	k := 0
	for c, col := range simulator.Columns {
		if col.Kind != simulator.LabSum {
			continue
		}
		v, _ := r.Outcome.Get(simulator.Col(c))
		if k == len(o.sums) || v < 0 || v > math.MaxUint32 {
			return outcome{} // not representable: read it back
		}
		o.sums[k] = uint32(v)
		k++
	}
	if (o.label == 0) != (r.FinalLabel == "") || (o.status == 0) != (r.FinalStatus == "") {
		return outcome{} // not representable: read it back
	}
	return o
}

// row rebuilds the decision row of key k.
func (o outcome) row(k simulator.Key, server string, seed int64) results.Row {
	r := results.Row{Model: k.Model, Prompt: k.Prompt, Condition: string(k.Condition), Scenario: k.Scenario,
		Replicate: int64(k.Replicate), Server: server, Seed: seed, Status: results.StatusOK,
		Turns: int64(o.turns), Replays: int64(o.replays)}
	if o.label > 0 {
		r.FinalLabel = string(study.Policies[o.label-1])
	}
	if o.status > 0 {
		r.FinalStatus = string(statuses[o.status-1])
	}
	r.SetFlags(o.flags)
	if o.flags&results.FlagLab != 0 {
		n := 0
		for c, col := range simulator.Columns {
			if col.Kind == simulator.LabSum {
				r.Outcome.Set(simulator.Col(c), int64(o.sums[n]))
				n++
			}
		}
	}
	return r
}

// stoppedNote says how many answers of the session ended early and why
// (models.StoppedEarly), or "" when none did. Such an answer is scored
// as its text reads, usually invalid, so the note says what to change.
func stoppedNote(stopped map[string]int) string {
	var parts []string
	total := 0
	for _, r := range []struct{ why, say string }{
		{models.StoppedLength, "at the token limit (raise the model's max_tokens or num_predict)"},
		{models.StoppedFilter, "cut by the provider's content filter"},
		{models.StoppedRefusal, "refused by the model"},
	} {
		if n := stopped[r.why]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r.say))
			total += n
		}
	}
	if total == 0 {
		return ""
	}
	noun := "answers"
	if total == 1 {
		noun = "answer"
	}
	return fmt.Sprintf("note: %d %s of this run ended early, scored as their text reads (an invalid label, most often): %s", total, noun, strings.Join(parts, ", "))
}
