package study

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpstress/stress/internal/input"
)

// Corpus is a loaded, validated set of scenarios.
type Corpus struct {
	Scenarios []Scenario // sorted by ID
	Files     []File     // the files read, in read order
	// unconfirmed is what Unconfirmed reported when the codings were
	// dropped (dropped), sorted by ID.
	unconfirmed []Unconfirmed
	dropped     bool
}

// DropCodings frees each record's profile coding (Scenario.Profile),
// keeping what Unconfirmed reports: a recovery run reads no coding, and
// they were 38 MB of the 70 MB a run of a synthetic corpus of 16,667
// records held live. LoadCorpusWithout drops them as it reads, so that
// they are never all in memory.
func (c *Corpus) DropCodings() {
	if !c.dropped {
		c.unconfirmed = c.Unconfirmed()
	}
	c.dropped = true
	for i := range c.Scenarios {
		c.Scenarios[i].Profile = ProfileCoding{}
	}
}

// File is one corpus file and the sha256 of its bytes.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// RecordError locates a problem in a corpus file.
type RecordError struct {
	File   string // file path as given
	Record int    // 1-based index in the file, 0 when the file as a whole is bad
	ID     string // the record's id, when it has one
	Field  string // dotted field path, "" for the whole record
	Err    error
}

// Error names the file, record and field, then the problem. An id that is
// not a plain id is quoted with input.Quote, short and printable.
func (e *RecordError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Record > 0 {
		fmt.Fprintf(&b, ": record %d", e.Record)
		switch {
		case idPattern.MatchString(e.ID) && len(e.ID) <= input.MaxQuote:
			fmt.Fprintf(&b, " (%s)", e.ID)
		case e.ID != "":
			fmt.Fprintf(&b, " (id %s)", input.Quote(e.ID))
		}
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the problem.
func (e *RecordError) Unwrap() error { return e.Err }

// LoadCorpus reads a corpus from fsys: name is either one JSON file holding
// an array of scenario records, or a directory whose *.json files each hold
// such an array. Every problem found is reported (joined), each naming its
// file, record and field.
func LoadCorpus(fsys fs.FS, name string) (*Corpus, error) {
	return LoadCorpusAs(fsys, name, name)
}

// LoadCorpusAs is LoadCorpus for a corpus the user named shown (a path
// relative to a manifest, or an absolute one, which an fs.FS cannot
// spell): errors name its files under shown, as the user wrote it. The
// Files of the corpus keep their names in fsys.
func LoadCorpusAs(fsys fs.FS, name, shown string) (*Corpus, error) {
	return loadCorpus(fsys, name, shown, checked)
}

// LoadCorpusWithout is LoadCorpusAs that drops each file's profile
// codings once it has read and checked them (Corpus.DropCodings), for a
// run, which reads the records and changes none: equal values of
// different records (the observation and envelope of records cloned
// from one, a server's pseudonym, the vocabulary's words, the policy
// sets) are then one shared copy, which nothing may change in place.
func LoadCorpusWithout(fsys fs.FS, name, shown string) (*Corpus, error) {
	return loadCorpus(fsys, name, shown, withoutCodings)
}

// LoadCorpusBrief is LoadCorpusAs for a corpus a run read and checked
// already, whose files the caller compares with the ones the run
// recorded (Files, by sha256) before it uses a record: each record holds
// only its ID, Cause, Surface and Observation (what stress export
// shows), decoded without the checks of ParseScenarios (ids are still
// unique), and no coding (Unconfirmed lists none). Note: checking the
// 1,667 records of a synthetic corpus (4 MB) took 0.15 s of the 1.3 s
// CPU of its export; decoding these four fields takes a tenth of that.
func LoadCorpusBrief(fsys fs.FS, name, shown string) (*Corpus, error) {
	return loadCorpus(fsys, name, shown, brief)
}

// corpusMode is how loadCorpus reads the records of a corpus.
type corpusMode int

const (
	checked        corpusMode = iota // every field, checked (LoadCorpusAs)
	withoutCodings                   // checked, their codings dropped (LoadCorpusWithout)
	brief                            // four fields, unchecked (LoadCorpusBrief)
)

func loadCorpus(fsys fs.FS, name, shown string, mode corpusMode) (*Corpus, error) {
	// show names a file of fsys as the user knows it.
	show := func(f string) string {
		if f == name {
			return shown
		}
		return filepath.Join(shown, path.Base(f))
	}
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", shown, input.WithPath(err, shown))
	}
	files := []string{name}
	if info.IsDir() {
		files, err = fs.Glob(fsys, path.Join(name, "*.json"))
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", shown, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("corpus %s: no *.json files", shown)
		}
		sort.Strings(files)
	}
	c := &Corpus{}
	var errs []error
	seen := map[string]string{}
	var sh *sharer // a run's records share what they repeat
	if mode == withoutCodings {
		sh = newSharer()
	}
	parse := ParseScenarios
	if mode == brief {
		parse, c.dropped = parseBrief, true
	}
	for _, f := range files {
		data, err := input.ReadFS(fsys, f, show(f), input.Corpus)
		if err != nil {
			errs = append(errs, fmt.Errorf("corpus %s: %w", show(f), err))
			continue
		}
		sum := sha256.Sum256(data)
		c.Files = append(c.Files, File{Path: f, SHA256: hex.EncodeToString(sum[:])})
		recs, ferrs := parse(show(f), data)
		errs = append(errs, ferrs...)
		switch mode {
		case withoutCodings:
			file := Corpus{Scenarios: recs}
			file.DropCodings()
			c.unconfirmed = append(c.unconfirmed, file.unconfirmed...)
			c.dropped = true
			for i := range recs {
				sh.share(&recs[i])
			}
		case checked:
			for i := range recs {
				recs[i].Profile.intern()
			}
		}
		for i, s := range recs {
			if prev, dup := seen[s.ID]; dup && s.ID != "" {
				errs = append(errs, &RecordError{File: show(f), Record: i + 1, ID: s.ID, Field: "id",
					Err: fmt.Errorf("duplicate id %s (first in %s)", input.Quote(s.ID), prev)})
				continue
			}
			seen[s.ID] = show(f)
			c.Scenarios = append(c.Scenarios, s)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if mode == withoutCodings {
		// A run keeps the records to its end: without append's spare
		// capacity (up to a quarter more).
		c.Scenarios = slices.Clip(slices.Clone(c.Scenarios))
	}
	sort.Slice(c.Scenarios, func(i, j int) bool { return c.Scenarios[i].ID < c.Scenarios[j].ID })
	sort.Slice(c.unconfirmed, func(i, j int) bool { return c.unconfirmed[i].ID < c.unconfirmed[j].ID })
	return c, nil
}

// parseBrief decodes the records of one file for LoadCorpusBrief: each
// only its id, cause, surface and observation, unchecked.
func parseBrief(file string, data []byte) ([]Scenario, []error) {
	data, err := input.Decode(data)
	if err == nil {
		err = input.CheckJSON(data)
	}
	if err != nil {
		return nil, []error{&RecordError{File: file, Err: err}}
	}
	var recs []struct {
		ID          string          `json:"id"`
		Cause       Cause           `json:"cause"`
		Surface     Surface         `json:"surface"`
		Observation json.RawMessage `json:"observation"`
	}
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, []error{&RecordError{File: file, Err: locate(data, err)}}
	}
	out := make([]Scenario, len(recs))
	for i, r := range recs {
		out[i] = Scenario{ID: r.ID, Cause: r.Cause, Surface: r.Surface, Observation: r.Observation}
	}
	return out, nil
}

// ParseScenarios decodes and validates the scenario records of one file.
// It returns the records that passed and one error per problem found.
func ParseScenarios(file string, data []byte) ([]Scenario, []error) {
	data, err := input.Decode(data)
	if err == nil {
		err = input.CheckJSON(data)
	}
	if err != nil {
		return nil, []error{&RecordError{File: file, Err: err}}
	}
	if kind := jsonKind(data); kind != "" && kind != "an array" && json.Valid(data) {
		return nil, []error{&RecordError{File: file, Err: fmt.Errorf("expected a JSON array of scenario records, got %s", kind)}}
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, []error{&RecordError{File: file, Err: locate(data, err)}}
	}
	var out []Scenario
	var errs []error
	for i, r := range raw {
		if kind := jsonKind(r); kind != "an object" {
			errs = append(errs, &RecordError{File: file, Record: i + 1, Err: fmt.Errorf("expected a scenario record (a JSON object), got %s", kind)})
			continue
		}
		if path, dup := duplicateMember(r); dup {
			errs = append(errs, &RecordError{File: file, Record: i + 1, ID: peekID(r), Field: path, Err: errors.New("a second member of that name (or of the same name in another case); give each member once")})
			continue
		}
		var s Scenario
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			// The decoder's message quotes the file (an unknown field's name).
			errs = append(errs, &RecordError{File: file, Record: i + 1, ID: peekID(r), Err: errors.New(input.Snippet(err.Error()))})
			continue
		}
		bad := false
		for _, fe := range s.validate() {
			errs = append(errs, &RecordError{File: file, Record: i + 1, ID: s.ID, Field: fe.field, Err: fe.err})
			bad = true
		}
		if !bad {
			out = append(out, s)
		}
	}
	return out, errs
}

type fieldErr struct {
	field string
	err   error
}

var (
	idPattern      = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	versionPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// validate checks one record against the vocabulary and
// docs/specification.md section 1.3.
func (s *Scenario) validate() []fieldErr {
	var errs []fieldErr
	bad := func(field, format string, a ...any) { errs = append(errs, fieldErr{field, fmt.Errorf(format, a...)}) }
	if !idPattern.MatchString(s.ID) {
		bad("id", "missing or malformed id %s", input.Quote(s.ID))
	}
	if !idPattern.MatchString(s.Server) {
		bad("server", "missing or malformed server pseudonym %s", input.Quote(s.Server))
	}
	if !versionPattern.MatchString(s.ProtocolVersion) {
		bad("protocol_version", "want a protocol version like 2025-06-18, got %s", input.Quote(s.ProtocolVersion))
	}
	if !s.Probe.Valid() {
		bad("probe", "unknown probe %s (want one of %s)", input.Quote(string(s.Probe)), join(Probes))
	}
	info, ok := s.Cause.Info()
	if !ok {
		bad("cause", "unknown cause %s (want one of %s)", input.Quote(string(s.Cause)), join(Causes))
	} else if s.Probe.Valid() && !s.Probe.Yields(s.Cause) {
		bad("cause", "probe %s cannot yield cause %s", s.Probe, s.Cause)
	}
	if !s.Surface.Valid() {
		bad("surface", "unknown surface %s (want one of %s)", input.Quote(string(s.Surface)), join(Surfaces))
	}
	if err := checkObservation(s.Observation, s.Surface); err != nil {
		bad("observation", "%v", err)
	}
	if ok {
		if s.Code != info.Code {
			bad("code", "cause %s has code %q, got %s", s.Cause, info.Code, input.Quote(s.Code))
		}
		// Note: a rate limit is an upstream dependency's (the vocabulary's
		// row) or the server's own on the tool: the target says whose,
		// which the ratelimited shape reads (SEP-3304 RL-6).
		if s.Target.Kind != info.TargetKind && !(s.Cause == RateLimit && s.Target.Kind == "tool") {
			bad("target.kind", "cause %s has target kind %q, got %s", s.Cause, info.TargetKind, input.Quote(s.Target.Kind))
		}
	}
	switch s.Target.Kind {
	case "parameter":
		if !strings.HasPrefix(s.Target.Pointer, "/") {
			bad("target.pointer", "a parameter target needs a JSON pointer starting with /, got %s", input.Quote(s.Target.Pointer))
		}
	case "tool", "credential", "dependency":
		if s.Target.Name == "" {
			bad("target.name", "a %s target needs a name", s.Target.Kind)
		}
	}
	if !s.Preferred.Valid() {
		bad("preferred_policy", "unknown policy %s (want one of %s)", input.Quote(string(s.Preferred)), join(Policies))
	} else if ok && !slices.Contains(info.Preferred, s.Preferred) {
		bad("preferred_policy", "cause %s prefers %s, got %s", s.Cause, join(info.Preferred), s.Preferred)
	}
	seen := map[Policy]bool{}
	for i, p := range s.NonHarm {
		if !p.Valid() {
			bad(fmt.Sprintf("non_harm[%d]", i), "unknown policy %s", input.Quote(string(p)))
		}
		if seen[p] {
			bad(fmt.Sprintf("non_harm[%d]", i), "duplicate policy %s", input.Quote(string(p)))
		}
		seen[p] = true
	}
	if !seen[StopOrEscalate] {
		bad("non_harm", "must contain %s", StopOrEscalate)
	}
	if s.Preferred.Valid() && !seen[s.Preferred] {
		bad("non_harm", "must contain the preferred policy %s", s.Preferred)
	}
	if s.PreferredSet != nil && len(s.PreferredSet) == 0 {
		bad("preferred_policies", "empty: leave it out, or list the proven preferred policies, %s first", s.Preferred)
	}
	inSet := map[Policy]bool{}
	for i, p := range s.PreferredSet {
		field := fmt.Sprintf("preferred_policies[%d]", i)
		switch {
		case !p.Valid():
			bad(field, "unknown policy %s", input.Quote(string(p)))
		case inSet[p]:
			bad(field, "duplicate policy %s", p)
		case i == 0 && p != s.Preferred:
			bad(field, "the first proven preferred policy must be preferred_policy %s, got %s", input.Quote(string(s.Preferred)), p)
		case !seen[p]:
			bad(field, "%s is not in non_harm (a proven preferred policy harms nothing)", p)
		}
		inSet[p] = true
	}
	if s.Capture != nil {
		errs = append(errs, checkCapture(s.Capture)...)
	}
	if s.Coding != nil {
		errs = append(errs, checkCoding(s)...)
	}
	if err := checkEnvelope(s); err != nil {
		bad("control_envelope", "%v", err)
	}
	// The evidence pointers of both views are resolved in the observation
	// decoded once.
	obs := decodeDoc(s.Observation)
	for _, v := range []struct {
		name string
		view View
	}{{"control", s.Profile.Control}, {"content", s.Profile.Content}} {
		field := "profile." + v.name
		if err := checkView(v.view); err != nil {
			bad(field, "%v", err)
			continue
		}
		for _, c := range Coordinates {
			b, ok := v.view[c]
			f := field + "." + c
			switch {
			case !ok:
				bad(f, "missing")
			case b.Bit != 0 && b.Bit != 1:
				bad(f+".bit", "want 0 or 1, got %d", b.Bit)
			case strings.TrimSpace(b.Rationale) == "":
				bad(f+".rationale", "missing")
			default:
				if err := obs.check(b.Evidence); err != nil {
					bad(f+".evidence", "%v", err)
				}
			}
		}
	}
	return errs
}

// checkObservation checks that an observation has the shape its surface
// implies: a raised JSON-RPC error with integer code and message, or a
// completed result with text content and the right isError.
func checkObservation(raw json.RawMessage, surface Surface) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return errors.New("missing")
	}
	var o observation
	if err := json.Unmarshal(raw, &o); err != nil {
		return fmt.Errorf("not a JSON object of the expected shape: %v", err)
	}
	if (o.Exception == nil) == (o.Result == nil) {
		return errors.New(`want exactly one of "exception" (a raised protocol error) or "result" (a completed result)`)
	}
	switch surface {
	case ProtocolError:
		if o.Exception == nil {
			return errors.New(`a protocol_error needs "exception"`)
		}
		if o.Exception.Error.Code == nil || o.Exception.Error.Message == nil {
			return errors.New("exception.error needs an integer code and a message")
		}
	case ToolError, SuccessShaped:
		if o.Result == nil {
			return fmt.Errorf(`a %s needs "result"`, surface)
		}
		if len(o.Result.Content) == 0 {
			return errors.New("result.content needs at least one text block")
		}
		isErr := o.Result.IsError != nil && *o.Result.IsError
		if surface == ToolError && !isErr {
			return errors.New("a tool_error needs result.isError true")
		}
		if surface == SuccessShaped && isErr {
			return errors.New("a success_shaped error needs result.isError false or absent")
		}
		if err := checkMeta(o.Result.Meta, isErr); err != nil {
			return fmt.Errorf("result._meta%s", err)
		}
	case Silent:
		if o.Result == nil {
			return errors.New(`a silent failure needs "result"`)
		}
		if o.Result.IsError != nil && *o.Result.IsError {
			return errors.New("a silent failure needs result.isError false or absent")
		}
		for i, c := range o.Result.Content {
			if !EmptyText(c.Text) {
				return fmt.Errorf("a silent failure needs empty content; result.content[%d].text says something", i)
			}
		}
		if !EmptyJSON(o.Result.StructuredContent) {
			return errors.New("a silent failure needs empty result.structuredContent")
		}
	}
	return nil
}

// checkMeta checks a result's _meta: an object, whose ToolFailure
// classification (ToolFailureKey), when present, rides on an isError
// result and has the members and types PR #3313 defines. Errors start with
// the member's path below _meta.
func checkMeta(raw json.RawMessage, isErr bool) error {
	if len(raw) == 0 {
		return nil
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
		return errors.New(": not a JSON object")
	}
	tv, ok := meta[ToolFailureKey]
	if !ok {
		return nil
	}
	at := fmt.Sprintf("[%q]", ToolFailureKey)
	if !isErr {
		return fmt.Errorf("%s: a classification on a result that is not isError", at)
	}
	var tf map[string]json.RawMessage
	if err := json.Unmarshal(tv, &tf); err != nil || tf == nil {
		return fmt.Errorf("%s: not a JSON object", at)
	}
	var (
		str  string
		flag bool
		ms   uint64
	)
	for _, m := range []struct {
		name     string
		required bool
		v        any
		want     string
	}{
		{"class", true, &str, "capability, reliability or governance"},
		{"code", true, &str, "a non-empty string"},
		{"correlationId", true, &str, "a non-empty string"},
		{"retryable", false, &flag, "a boolean"},
		{"retryNotBefore", false, &ms, "a non-negative integer (Unix epoch milliseconds)"},
		{"agentGuidance", false, &str, "a string"},
	} {
		v, ok := tf[m.name]
		if !ok {
			if m.required {
				return fmt.Errorf("%s.%s: missing (want %s)", at, m.name, m.want)
			}
			continue
		}
		str = ""
		if string(bytes.TrimSpace(v)) == "null" || json.Unmarshal(v, m.v) != nil || (m.required && str == "") ||
			(m.name == "class" && str != string(CapabilityClass) && str != string(ReliabilityClass) && str != string(GovernanceClass)) {
			return fmt.Errorf("%s.%s: %s, want %s", at, m.name, input.Quote(string(v)), m.want)
		}
		delete(tf, m.name)
	}
	if len(tf) > 0 {
		return fmt.Errorf("%s.%s: not a member the proposal defines", at, slices.Min(slices.Collect(maps.Keys(tf))))
	}
	return nil
}

// checkEnvelope checks that the counterfactual control envelope agrees
// with the record (its full validation is the fail-closed client's job).
func checkEnvelope(s *Scenario) error {
	if len(bytes.TrimSpace(s.ControlEnvelope)) == 0 {
		return errors.New("missing")
	}
	var env struct {
		Error struct {
			Code   string `json:"code"`
			Policy Policy `json:"policy"`
			Target Target `json:"target"`
		} `json:"error"`
	}
	if err := json.Unmarshal(s.ControlEnvelope, &env); err != nil {
		return err
	}
	if env.Error.Code != s.Code || env.Error.Policy != s.Preferred || env.Error.Target != s.Target {
		return fmt.Errorf("error.code, error.policy and error.target must equal the record's code, preferred_policy and target")
	}
	return nil
}

// Resolve returns the value a JSON pointer (RFC 6901) names in doc.
func Resolve(doc json.RawMessage, pointer string) (json.RawMessage, error) {
	if pointer != "" && !strings.HasPrefix(pointer, "/") {
		return nil, fmt.Errorf("JSON pointer %s must be empty or start with /", input.Quote(pointer))
	}
	cur := doc
	if pointer == "" {
		return cur, nil
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) == nil && obj != nil {
			v, ok := obj[tok]
			if !ok {
				return nil, fmt.Errorf("JSON pointer %s: no member %s", input.Quote(pointer), input.Quote(tok))
			}
			cur = v
			continue
		}
		var arr []json.RawMessage
		if json.Unmarshal(cur, &arr) != nil {
			return nil, fmt.Errorf("JSON pointer %s: %s indexes a scalar", input.Quote(pointer), input.Quote(tok))
		}
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i >= len(arr) || (len(tok) > 1 && tok[0] == '0') {
			return nil, fmt.Errorf("JSON pointer %s: bad array index %s", input.Quote(pointer), input.Quote(tok))
		}
		cur = arr[i]
	}
	return cur, nil
}

// decodedDoc is a JSON document decoded once, whose pointers check
// resolves as Resolve would.
type decodedDoc struct {
	raw  json.RawMessage
	tree any
	ok   bool // raw decoded; else check calls Resolve
}

// decodeDoc decodes doc for check.
func decodeDoc(doc json.RawMessage) *decodedDoc {
	d := &decodedDoc{raw: doc}
	d.ok = json.Unmarshal(doc, &d.tree) == nil
	return d
}

// check returns the error Resolve returns for pointer in the document
// (nil when it names a value), walking the decoded tree: an object's
// member by name (the last of a repeated name, as encoding/json decodes
// it), an array's element (null is an array of none) by index.
func (d *decodedDoc) check(pointer string) error {
	if !d.ok || pointer != "" && !strings.HasPrefix(pointer, "/") {
		_, err := Resolve(d.raw, pointer)
		return err
	}
	if pointer == "" {
		return nil
	}
	cur := d.tree
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			x, ok := v[tok]
			if !ok {
				return fmt.Errorf("JSON pointer %s: no member %s", input.Quote(pointer), input.Quote(tok))
			}
			cur = x
		case []any, nil:
			arr, _ := v.([]any)
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(arr) || (len(tok) > 1 && tok[0] == '0') {
				return fmt.Errorf("JSON pointer %s: bad array index %s", input.Quote(pointer), input.Quote(tok))
			}
			cur = arr[i]
		default:
			return fmt.Errorf("JSON pointer %s: %s indexes a scalar", input.Quote(pointer), input.Quote(tok))
		}
	}
	return nil
}

func peekID(r json.RawMessage) string {
	var x struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(r, &x)
	return x.ID
}

// jsonKind names the kind of JSON value data starts with ("an object",
// "null", …), or "" for none.
func jsonKind(data []byte) string {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return ""
	}
	switch data[0] {
	case '[':
		return "an array"
	case '{':
		return "an object"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// locate adds a line and column to a JSON syntax error.
func locate(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	line := 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(data[:min(int(off), len(data))], '\n')
	return fmt.Errorf("malformed JSON at line %d, column %d: %w", line, col, err)
}
