// Package csvcell keeps the cells of the CSV ledgers people open in
// spreadsheets inert: Escape prefixes an apostrophe to a cell a
// spreadsheet would take for a formula (one starting with =, +, -, @, a
// tab or a carriage return, as the OWASP guidance on CSV injection
// recommends), and Unescape takes exactly that apostrophe off again, so
// that every value round-trips unchanged. A cell that itself starts with
// an apostrophe is escaped too: Unescape(Escape(s)) == s for every s.
package csvcell

// Note: the guidance lists these leading characters; a cell holding
// them anywhere else is not a formula.
const triggers = "=+-@\t\r"

// escape returns s as a ledger cell: with an apostrophe in front when s
// starts with =, +, -, @, a tab, a carriage return or an apostrophe,
// else s itself.
func escape(s string) string {
	if s == "" {
		return s
	}
	c := s[0]
	if c == '\'' {
		return "'" + s
	}
	for i := 0; i < len(triggers); i++ {
		if c == triggers[i] {
			return "'" + s
		}
	}
	return s
}

// unescape returns the value of a ledger cell: cell without its first
// apostrophe, if it starts with one, else cell itself. A person filling
// in a ledger may write '=x for =x, as a spreadsheet would.
func unescape(cell string) string {
	if len(cell) > 0 && cell[0] == '\'' {
		return cell[1:]
	}
	return cell
}

// EscapeRow returns the cells of a row escaped (Escape), in a new slice.
func EscapeRow(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = escape(v)
	}
	return out
}

// UnescapeRow unescapes the cells of a row read (Unescape), in place,
// and returns it.
func UnescapeRow(cells []string) []string {
	for i, c := range cells {
		cells[i] = unescape(c)
	}
	return cells
}
