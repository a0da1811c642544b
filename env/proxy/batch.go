package proxy

import (
	"encoding/json"
	"strings"
)

// cutBatch cuts a string that is a batch of SQL statements (separated by
// semicolons outside quotes, as a database MCP server's execute_sql takes
// them) to its first at statements, and returns the number it had; ok is
// false when it has no more than at.
func cutBatch(raw json.RawMessage, at int) (out json.RawMessage, n int, ok bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, 0, false
	}
	stmts := statements(s)
	if len(stmts) <= at {
		return nil, 0, false
	}
	b, err := json.Marshal(strings.Join(stmts[:at], "; "))
	return b, len(stmts), err == nil
}

// statements splits a SQL batch at the semicolons outside '…', "…" and
// `…` quotes and -- comments, dropping empty statements.
func statements(s string) []string {
	var out []string
	var quote byte
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == ';':
			if t := strings.TrimSpace(s[start:i]); t != "" {
				out = append(out, t)
			}
			start = i + 1
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}
