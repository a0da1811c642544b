package results

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"unsafe"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/models"
)

// This file holds the message table of a bundle. Every distinct
// chat message of the requests (a system prompt, a rendered user prompt,
// an assistant answer replayed, a replay notice) is stored once in
// messages.jsonl, one line {"ref","message"}, and so is every distinct run
// of prompt messages (the leading system and user messages of a request:
// the rendered prompt), one line {"ref","refs"} listing its messages' refs.
// Call lines name the messages of their request by ref
// (request.messages_ref: the prompt's run, then each later message)
// instead of repeating them: the same rendered prompt serves every
// replicate and model, so calls.jsonl shrinks about fivefold.
//
// A ref is the first 16 hex digits of the sha256 of the message's JSON
// encoding (the exact bytes stored after "message":), or all 64 when those
// 16 are already taken by another message (the writer checks, so refs are
// unique within a bundle). A reader checks each line's ref against the
// sha256 of its bytes.
//
// messages.jsonl is append-only and written with calls.jsonl: a batch's
// messages are written and fsynced before the call lines that refer to
// them, and manifest.json records how much of each file is durable. A
// crash can therefore leave a message without its call lines (harmless)
// but never a durable call line without its messages; a resume checks the
// refs of the call lines it keeps past the durable point.

// MessagesFile is the name of the message table inside a bundle.
const MessagesFile = "messages.jsonl"

// Format is the bundle format this version writes and reads: 3, call
// lines refer to messages.jsonl and leave out what defaults.json holds
// (see Defaults). Bundles of the two earlier formats (2: call lines refer
// to messages.jsonl but carry every field; 1, no format in manifest.json:
// every call line holds its request's messages inline) are refused by
// ReadRecord and converted by Upgrade.
const Format = 3

// shortRef is the length of a ref in hex digits when it is unique.
const shortRef = 16

// messageLine is one line of messages.jsonl: a message, or a run of
// messages by their refs.
type messageLine struct {
	Ref     string          `json:"ref"`
	Message json.RawMessage `json:"message,omitempty"`
	Refs    json.RawMessage `json:"refs,omitempty"`
}

// MessageLog appends distinct messages to messages.jsonl and gives each
// its ref. Its batches are written by the CallLog it is attached to
// (CallLog.SetMessages), before the call lines.
type MessageLog struct {
	appendFile
	enc *json.Encoder
	msg bytes.Buffer // one message's encoding
	// short maps the first 8 bytes of a stored message's sha256 to the
	// whole sha256; long holds the messages stored under a 64-digit ref
	// (their 16-digit ref was taken).
	short map[uint64][32]byte
	long  map[[32]byte]bool
	// seen remembers the refs of recent prompt messages (RefRun) by the
	// address of their text: a prompt rendered once
	// (conditions.Prompt.InitialOnce) is the same strings in every
	// request, so it is encoded and hashed once. At most maxSeen entries.
	seen map[textKey]string
}

// textKey names a message by the addresses and lengths of its strings;
// holding the addresses keeps the strings alive, so they cannot be reused
// for other text.
type textKey struct {
	role, content *byte
	nr, nc        int
}

// maxSeen bounds the prompt messages whose refs a MessageLog remembers,
// and so the rendered texts it keeps alive: as many as the prompts
// conditions.Prompt keeps (4,096, each with the system message every
// prompt shares). A message forgotten is encoded and hashed again, and
// gets the same ref.
// Note: it was 32k, which kept alive eight times the prompts the
// renderer's cache holds: 10 MB of a run's live heap on a corpus of
// 16,667 scenarios.
const maxSeen = 1 << 12

// OpenMessageLog opens file for appending after its first size bytes,
// which must be whole lines of the messages t holds (as LoadMessages read
// them): anything after them is cut off. The file is created when missing.
// t may be nil for an empty file.
func OpenMessageLog(file string, size int64, t *Messages) (*MessageLog, error) {
	f, err := openAppend(file, size)
	if err != nil {
		return nil, err
	}
	l := &MessageLog{appendFile: appendFile{f: f, name: file, size: size, synced: true}, short: map[uint64][32]byte{}, long: map[[32]byte]bool{}}
	l.enc = json.NewEncoder(&l.msg)
	l.enc.SetEscapeHTML(false)
	if t != nil {
		for ref, s := range t.sums {
			if len(ref) == shortRef {
				l.short[binary.BigEndian.Uint64(s[:8])] = s
			} else {
				l.long[s] = true
			}
		}
	}
	return l, nil
}

// openAppend opens file for writing after its first size bytes, cutting
// off the rest and making the file durable as it is then: the appendFile
// it opens starts synced, so closing it with nothing written costs no
// second fsync.
func openAppend(file string, size int64) (*os.File, error) {
	f, err := input.OpenWrite(file, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() < size {
		err = fmt.Errorf("%s: has %d bytes, fewer than the %d to keep", file, st.Size(), size)
	}
	cut := err == nil && st.Size() > size
	if cut {
		err = f.Truncate(size)
	}
	if err == nil && (size > 0 || cut) {
		// What a killed session wrote may not be on stable storage yet;
		// after this sync the first size bytes are durable, and so is the
		// cut. A new or empty file has nothing to sync (its name is the
		// directory's fsync).
		err = f.Sync()
	}
	if err == nil {
		_, err = f.Seek(size, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Ref returns the ref of message m, adding m to the batch when it is new.
func (l *MessageLog) Ref(m *models.Message) (string, error) {
	l.msg.Reset()
	if err := l.enc.Encode(m); err != nil {
		return "", err
	}
	raw := bytes.TrimSuffix(l.msg.Bytes(), []byte("\n"))
	return l.add(raw), nil
}

// promptRef is Ref for a message of a rendered prompt, remembered by the
// address of its text.
func (l *MessageLog) promptRef(m *models.Message) (string, error) {
	k := textKey{unsafe.StringData(m.Role), unsafe.StringData(m.Content), len(m.Role), len(m.Content)}
	if ref, ok := l.seen[k]; ok {
		return ref, nil
	}
	ref, err := l.Ref(m)
	if err != nil {
		return "", err
	}
	if l.seen == nil || len(l.seen) >= maxSeen {
		l.seen = map[textKey]string{}
	}
	l.seen[k] = ref
	return ref, nil
}

// RefRun returns the ref of the run of messages ms, stored as one entry
// listing their refs, adding what is new to the batch.
func (l *MessageLog) RefRun(ms []models.Message) (string, error) {
	run := []byte{'['}
	for i := range ms {
		ref, err := l.promptRef(&ms[i])
		if err != nil {
			return "", err
		}
		if i > 0 {
			run = append(run, ',')
		}
		run = append(append(append(run, '"'), ref...), '"')
	}
	return l.add(append(run, ']')), nil
}

// add stores raw, the JSON of a message, unless it is there, and returns
// its ref.
func (l *MessageLog) add(raw []byte) string {
	s := sha256.Sum256(raw)
	k := binary.BigEndian.Uint64(s[:8])
	have, ok := l.short[k]
	switch {
	case ok && have == s:
		return hex.EncodeToString(s[:8])
	case !ok:
		l.short[k] = s
		ref := hex.EncodeToString(s[:8])
		l.write(ref, raw)
		return ref
	}
	// Note: another message has the same first 64 bits (never seen in
	// practice, but checked): this one gets the whole sha256 as its ref.
	ref := hex.EncodeToString(s[:])
	if !l.long[s] {
		l.long[s] = true
		l.write(ref, raw)
	}
	return ref
}

func (l *MessageLog) write(ref string, raw []byte) {
	n := l.buf.Len()
	l.buf.WriteString(`{"ref":"`)
	l.buf.WriteString(ref)
	if raw[0] == '[' {
		l.buf.WriteString(`","refs":`)
	} else {
		l.buf.WriteString(`","message":`)
	}
	l.buf.Write(raw)
	l.buf.WriteString("}\n")
	l.size += int64(l.buf.Len() - n)
}

// AddRaw adds an entry (a message, or a run's refs) read from another
// bundle's messages.jsonl (merge), unless it is there.
func (l *MessageLog) AddRaw(raw json.RawMessage) { l.add(raw) }

// Close syncs and closes the file.
func (l *MessageLog) Close() error {
	err := l.Sync()
	return errors.Join(err, l.f.Close())
}

// Messages is a bundle's message table, read from messages.jsonl: each
// message by its ref.
type Messages struct {
	raw  map[string]json.RawMessage
	sums map[string][32]byte
	// Size is the length of the whole lines read, in bytes.
	Size int64
	// Torn is the length of the damaged or unfinished tail after them
	// that a crash left (past the durable point), in bytes.
	Torn int64
}

// Has reports whether the table holds ref.
func (t *Messages) Has(ref string) bool {
	_, ok := t.raw[ref]
	return ok
}

// Len returns the number of messages in the table.
func (t *Messages) Len() int { return len(t.raw) }

// Each calls fn with each entry's JSON (a message, or a run's refs), in
// no particular order.
func (t *Messages) Each(fn func(raw json.RawMessage)) {
	for _, r := range t.raw {
		fn(r)
	}
}

// Expand returns the messages refs name, in order (a ref of a run of
// messages gives them all).
func (t *Messages) Expand(refs []string) ([]models.Message, error) {
	out := make([]models.Message, 0, len(refs)+1)
	for _, ref := range refs {
		var err error
		if out, err = t.expand(out, ref, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Leaves returns the refs of the single messages refs name, in order (a
// ref of a run of messages gives its messages' refs): Expand's messages,
// by ref.
func (t *Messages) Leaves(refs []string) ([]string, error) {
	out := make([]string, 0, len(refs)+1)
	for _, ref := range refs {
		raw, ok := t.raw[ref]
		if !ok {
			return nil, fmt.Errorf("message %s is not in %s", ref, MessagesFile)
		}
		if len(raw) == 0 || raw[0] != '[' {
			out = append(out, ref)
			continue
		}
		var run []string
		if err := json.Unmarshal(raw, &run); err != nil {
			return nil, fmt.Errorf("message %s: %w", ref, err)
		}
		for _, r := range run {
			if m, ok := t.raw[r]; !ok || len(m) == 0 || m[0] == '[' {
				return nil, fmt.Errorf("run %s: message %s is not a message of %s", ref, r, MessagesFile)
			}
		}
		out = append(out, run...)
	}
	return out, nil
}

// Message returns the single message ref names.
func (t *Messages) Message(ref string) (models.Message, error) {
	out, err := t.expand(nil, ref, true)
	if err != nil {
		return models.Message{}, err
	}
	return out[0], nil
}

// expand appends the messages ref names to out; inRun says ref is listed
// by a run, which may not hold another.
func (t *Messages) expand(out []models.Message, ref string, inRun bool) ([]models.Message, error) {
	raw, ok := t.raw[ref]
	if !ok {
		return nil, fmt.Errorf("message %s is not in %s", ref, MessagesFile)
	}
	if len(raw) == 0 || raw[0] != '[' {
		var m models.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("message %s: %w", ref, err)
		}
		return append(out, m), nil
	}
	if inRun {
		return nil, fmt.Errorf("message %s is a run inside a run", ref)
	}
	var run []string
	if err := json.Unmarshal(raw, &run); err != nil {
		return nil, fmt.Errorf("message %s: %w", ref, err)
	}
	for _, r := range run {
		var err error
		if out, err = t.expand(out, r, true); err != nil {
			return nil, fmt.Errorf("run %s: %w", ref, err)
		}
	}
	return out, nil
}

// LoadMessages reads a messages.jsonl file. durable is how many of its
// bytes were known to be on stable storage (-1: unknown): a damaged line
// past it ends the table (it and what follows are a torn tail, t.Torn),
// one within it is an error, as for calls.jsonl. Without a durable point
// only the last line may be damaged. A line whose ref does not match its
// message's sha256 is damaged.
func LoadMessages(file string, durable int64) (*Messages, error) {
	t := &Messages{raw: map[string]json.RawMessage{}, sums: map[string][32]byte{}}
	f, err := input.OpenStream(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if durable > st.Size() {
		return nil, fmt.Errorf("%s has %d bytes, fewer than the %d known durable: data that was on stable storage is missing", file, st.Size(), durable)
	}
	errTorn := errors.New("torn tail") // ends the table
	err = eachLineOf(f, file, func(b []byte, line int, last bool) error {
		err := t.add(b, b[len(b)-1] != '\n')
		switch {
		case err == nil:
			t.Size += int64(len(b))
			return nil
		case durable >= 0 && t.Size >= durable, durable < 0 && last:
			t.Torn = st.Size() - t.Size
			return errTorn
		}
		return fmt.Errorf("%s:%d: %w (a damaged line within the bytes known durable: the file was changed after it was written)", file, line, err)
	})
	if err != nil && err != errTorn {
		return nil, err
	}
	return t, nil
}

// eachLine calls fn with each line of file (its newline included, if it
// has one), its number and whether it is the last.
func eachLine(file string, fn func(b []byte, line int, last bool) error) error {
	f, err := input.OpenStream(file)
	if err != nil {
		return err
	}
	defer f.Close()
	return eachLineOf(f, file, fn)
}

// eachLineOf is eachLine of f, opened, which is named file.
func eachLineOf(f io.Reader, file string, fn func(b []byte, line int, last bool) error) error {
	r := bufio.NewReaderSize(f, 1<<20)
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", file, err)
		}
		_, perr := r.Peek(1)
		if err := fn(b, line, perr == io.EOF); err != nil {
			return err
		}
	}
}

// add checks and keeps one line; eof says it has no newline.
func (t *Messages) add(b []byte, eof bool) error {
	if eof {
		return errors.New("line has no newline")
	}
	var ml messageLine
	if err := json.Unmarshal(b, &ml); err != nil {
		return err
	}
	body := ml.Message
	if (len(ml.Message) == 0) == (len(ml.Refs) == 0) {
		return errors.New(`want one of "message" and "refs"`)
	}
	if len(ml.Refs) > 0 {
		if ml.Refs[0] != '[' {
			return errors.New(`"refs" is not an array`)
		}
		body = ml.Refs
	} else if ml.Message[0] != '{' {
		return errors.New(`"message" is not an object`)
	}
	s := sha256.Sum256(body)
	full := hex.EncodeToString(s[:])
	if (len(ml.Ref) != shortRef && len(ml.Ref) != len(full)) || full[:len(ml.Ref)] != ml.Ref {
		return fmt.Errorf("ref %q does not match the message's sha256 %s", ml.Ref, full)
	}
	if _, dup := t.raw[ml.Ref]; dup {
		// Note: the writer stores a message once (it knows the table it
		// appends to, a resume's too), so a second line is not its doing.
		return fmt.Errorf("ref %s is stored twice", ml.Ref)
	}
	t.raw[ml.Ref] = body
	t.sums[ml.Ref] = s
	return nil
}

// RefSet collects the message refs that call lines name, with the first
// line naming each, to check them against messages.jsonl (Check).
type RefSet struct {
	first map[string]int
}

// Add adds the refs of the lines of group g.
func (s *RefSet) Add(g *Group) {
	for i := range g.Heads {
		for _, r := range g.Heads[i].Request.Refs {
			if _, ok := s.first[r]; !ok {
				if s.first == nil {
					s.first = map[string]int{}
				}
				s.first[r] = g.Line + i
			}
		}
	}
}

// Check checks every ref collected against the messages.jsonl beside
// the calls.jsonl named name: the file reads without damage (a torn last
// line, which a crash can leave, only when no line names its message),
// every message matches its ref's sha256, no ref is stored twice, and
// every ref (and each message of a run) is there. It returns the first
// problem, naming the file and the call line.
func (s *RefSet) Check(name string) error {
	if len(s.first) == 0 {
		return nil
	}
	file := filepath.Join(filepath.Dir(name), MessagesFile)
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("%s: the call lines refer to messages by ref, but %s cannot be read: %w", name, file, err)
	}
	t, err := LoadMessages(file, -1)
	if err != nil {
		return err
	}
	refs := slices.Collect(maps.Keys(s.first))
	slices.SortFunc(refs, func(a, b string) int { return s.first[a] - s.first[b] })
	for _, r := range refs {
		if _, err := t.Expand([]string{r}); err != nil {
			return fmt.Errorf("%s:%d: %w (%s is damaged or incomplete)", name, s.first[r], err, file)
		}
	}
	return nil
}

// messagesBeside returns the message table of the bundle that holds the
// calls.jsonl named name (nil when there is none).
func messagesBeside(name string) (*Messages, error) {
	file := filepath.Join(filepath.Dir(name), MessagesFile)
	if _, err := os.Stat(file); err != nil {
		return nil, nil
	}
	return LoadMessages(file, -1)
}
