package runner

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpstress/stress/results"
)

// console prints a session's messages and progress. On a terminal the
// progress is one live line, redrawn in place (messages clear it first);
// otherwise it is a plain line every Options.ProgressEvery. Only the
// session's writer goroutine uses it.
type console struct {
	log      io.Writer
	prog     io.Writer
	terminal bool
	width    int // terminal columns, 0 when unknown

	models     []string
	modelTotal []int // decisions per model in the bundle
	modelDone  []int
	total      int
	done       int
	errors     int
	perModel   int // decisions per model in the study
	start      time.Time
	startDone  int
	live       bool // a progress line is on the terminal
}

func newConsole(opt Options, rec *results.Record, sp *space, idx *locTable) (*console, error) {
	c := &console{log: opt.Log, prog: opt.Progress, terminal: opt.Terminal, width: opt.Width,
		models: sp.models, modelTotal: make([]int, len(sp.models)), modelDone: make([]int, len(sp.models)),
		total: idx.Len(), perModel: max(sp.perModel(), 1), start: time.Now()}
	err := idx.each(func(j int, l loc, _ outcome) error {
		mi := sp.global(j) / c.perModel
		c.modelTotal[mi]++
		if l.done() {
			c.modelDone[mi]++
			c.done++
		}
		return nil
	})
	c.startDone = c.done
	return c, err
}

// done counts one finished decision of study index i.
func (c *console) done1(i int, failed bool) {
	c.modelDone[i/c.perModel]++
	c.done++
	if failed {
		c.errors++
	}
}

// log prints a message line.
func (c *console) logf(format string, a ...any) {
	c.clear()
	fmt.Fprintf(c.log, format+"\n", a...)
}

// clear clears the live line.
func (c *console) clear() {
	if c.live {
		fmt.Fprint(c.prog, "\r\x1b[K")
		c.live = false
	}
}

// line formats the progress: done/total, rate, ETA, errors, per model.
func (c *console) line(now time.Time) string {
	var b strings.Builder
	pct := 100.0
	if c.total > 0 {
		pct = 100 * float64(c.done) / float64(c.total)
	}
	fmt.Fprintf(&b, "%d/%d decisions (%.1f%%)", c.done, c.total, pct)
	el := now.Sub(c.start).Seconds()
	ran := c.done - c.startDone
	if el > 0 && ran > 0 {
		rate := float64(ran) / el
		fmt.Fprintf(&b, ", %s/s", fmtRate(rate))
		if rem := c.total - c.done; rem > 0 {
			fmt.Fprintf(&b, ", ETA %s", fmtDur(time.Duration(float64(rem)/rate*float64(time.Second))))
		}
	}
	fmt.Fprintf(&b, ", %d errors", c.errors)
	if len(c.models) > 1 {
		b.WriteString(" |")
		for mi, name := range c.models {
			fmt.Fprintf(&b, " %s %d/%d", name, c.modelDone[mi], c.modelTotal[mi])
		}
	}
	return b.String()
}

// progress prints a progress report.
func (c *console) progress(now time.Time) {
	if c.prog == nil {
		return
	}
	s := c.line(now)
	if !c.terminal {
		fmt.Fprintln(c.prog, "progress: "+s)
		return
	}
	if c.width > 1 && len([]rune(s)) > c.width-1 {
		s = string([]rune(s)[:c.width-2]) + "…"
	}
	fmt.Fprint(c.prog, "\r\x1b[K"+s)
	c.live = true
}

func fmtRate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	default:
		return fmt.Sprintf("%.2f", r)
	}
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 24*time.Hour:
		return d.Round(time.Minute).String()
	default:
		return fmt.Sprintf("%.1fd", d.Hours()/24)
	}
}
