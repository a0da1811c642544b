package models

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// UnreachableError is the error of a model server that could not be
// reached: nothing listens at its address, its name does not resolve, or
// connecting timed out. Callers branch on it to report each server once,
// with every model on it (JoinErrors).
type UnreachableError struct {
	Server string   // what was tried, e.g. "Ollama"
	Host   string   // the URL tried, any password masked
	Note   string   // where the host came from, e.g. "from OLLAMA_HOST"; may be ""
	Models []string // the manifest's models on the server, if known
	Reason string   // why it could not be reached, e.g. "connection refused"
	Hint   string   // what to do about it
	Err    error    // the failure
}

// Error says which server could not be reached, why, and what to do.
func (e *UnreachableError) Error() string {
	var about []string
	if e.Note != "" {
		about = append(about, e.Note)
	}
	if len(e.Models) > 0 {
		q := make([]string, len(e.Models))
		for i, m := range e.Models {
			q[i] = fmt.Sprintf("%q", m)
		}
		word := "model "
		if len(q) > 1 {
			word = "models "
		}
		about = append(about, word+strings.Join(q, ", "))
	}
	s := fmt.Sprintf("cannot reach %s at %s", e.Server, e.Host)
	if len(about) > 0 {
		s += " (" + strings.Join(about, "; ") + ")"
	}
	return s + ": " + e.Reason + ": " + e.Hint
}

// Unwrap returns the failure.
func (e *UnreachableError) Unwrap() error { return e.Err }

// JoinErrors joins errs like errors.Join, except that the errors of one
// unreachable server (the same Server and Host) become one, naming every
// model on it: a server that is down is reported once, not once per model.
// An error wrapping an UnreachableError is replaced by it, which names its
// server and models.
func JoinErrors(errs ...error) error {
	var out []error
	var down []*UnreachableError // merged copies, in out
	for _, err := range errs {
		var ue *UnreachableError
		if err == nil {
			continue
		}
		if !errors.As(err, &ue) {
			out = append(out, err)
			continue
		}
		i := slices.IndexFunc(down, func(d *UnreachableError) bool { return d.Server == ue.Server && d.Host == ue.Host })
		if i < 0 {
			c := *ue
			c.Models = slices.Clone(ue.Models)
			down = append(down, &c)
			out = append(out, &c)
			continue
		}
		for _, m := range ue.Models {
			if !slices.Contains(down[i].Models, m) {
				down[i].Models = append(down[i].Models, m)
			}
		}
	}
	return errors.Join(out...)
}
