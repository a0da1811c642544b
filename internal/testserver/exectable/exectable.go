// Package exectable compares execution tables (simulator.WriteExecutionTable:
// per scenario, what each policy's canonical recovery did) cell by cell,
// for the tests that hold a checked-in table to a regenerated one (the
// lab's, the reference MCP servers', the database environment's).
package exectable

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// cellSep separates the cells of an execution table's line: the table
// pads its columns with at least two spaces, and no cell holds two.
var cellSep = regexp.MustCompile(`\s{2,}`)

// Diff compares two execution tables as simulator.WriteExecutionTable
// writes them (want checked in, got regenerated) cell
// by cell, whatever their column widths, and returns each difference in
// words ("X09 revise_arguments: want recovered, wrong_value, got
// wrong_value"), a scenario one of them lacks, or a header that differs;
// nil when they hold the same cells.
func Diff(want, got []byte) []string {
	parse := func(b []byte) (header []string, rows map[string][]string, order []string) {
		rows = map[string][]string{}
		for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			cells := cellSep.Split(strings.TrimSpace(line), -1)
			if i == 0 {
				header = cells
				continue
			}
			rows[cells[0]] = cells
			order = append(order, cells[0])
		}
		return header, rows, order
	}
	wh, wr, wo := parse(want)
	gh, gr, gorder := parse(got)
	if !slices.Equal(wh, gh) {
		return []string{fmt.Sprintf("header: want %q, got %q", strings.Join(wh, " | "), strings.Join(gh, " | "))}
	}
	var out []string
	for _, id := range wo {
		g, ok := gr[id]
		if !ok {
			out = append(out, id+": in the checked-in table only")
			continue
		}
		w := wr[id]
		for j := 1; j < max(len(w), len(g)); j++ {
			wc, gc := cellAt(w, j), cellAt(g, j)
			if wc != gc {
				out = append(out, fmt.Sprintf("%s %s: want %s, got %s", id, cellAt(gh, j), wc, gc))
			}
		}
	}
	for _, id := range gorder {
		if _, ok := wr[id]; !ok {
			out = append(out, id+": in the regenerated table only")
		}
	}
	return out
}

func cellAt(cells []string, i int) string {
	if i < len(cells) {
		return cells[i]
	}
	return "(none)"
}
