package capture

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// Stderr keeps the first bytes a server writes to its standard error,
// up to a cap, for the messages that say why it failed; it is safe for
// concurrent use.
type Stderr struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

// NewStderr returns a Stderr that keeps at most max bytes.
func NewStderr(max int) *Stderr { return &Stderr{max: max} }

// Write keeps what fits under the cap and reports all of p written.
func (s *Stderr) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if room := s.max - s.b.Len(); room > 0 {
		s.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Reset forgets what was kept (a server kept for another decision).
func (s *Stderr) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

// String returns what was kept, trimmed of surrounding space.
func (s *Stderr) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimSpace(s.b.String())
}

var _ io.Writer = (*Stderr)(nil)
