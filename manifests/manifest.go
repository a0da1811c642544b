// Package manifests reads and validates study manifests: which corpus,
// prompt templates, conditions and models a run uses, with how many
// replicates, which study seed and which sampling settings. It also embeds
// the manifests, prompts and corpus shipped with the project, so the default
// study runs from any directory.
package manifests

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/study"
)

// Builtin holds the files shipped in this directory: baselines.yaml,
// paper.yaml, failclosed.yaml, conditions.yaml, prompts/ and corpus/.
//
//go:embed *.yaml prompts corpus
var Builtin embed.FS

// DefaultName is the built-in manifest a bare `stress run` uses.
const DefaultName = "baselines.yaml"

// maxBytes is the largest manifest file, 1 MiB, input.Manifest's cap (a
// study's manifest is a few kilobytes; the cap bounds the decoder's time
// and memory on a wrong file).
const maxBytes = 1 << 20

// defaultReplayCap is the replay cap when a manifest sets none
// (docs/specification.md section 4).
const defaultReplayCap = 3

// Manifest is a study manifest as written by its author.
type Manifest struct {
	// Name labels the study; it becomes part of the run id.
	Name string `yaml:"name" json:"name"`
	// Corpus is the corpus file or directory, relative to the manifest.
	Corpus string `yaml:"corpus" json:"corpus"`
	// Prompts are the prompt templates to run; each is a separate arm.
	Prompts []Prompt `yaml:"prompts" json:"prompts"`
	// Conditions are the renderings to run, from study.AllConditions (the
	// paper's four paired conditions, envelope and category).
	Conditions []study.Condition `yaml:"conditions" json:"conditions"`
	// Replicates is the number of seeded replicates per scenario, ≥ 1.
	Replicates int `yaml:"replicates" json:"replicates"`
	// Seed is the study seed from which every turn's seed is derived.
	Seed uint64 `yaml:"seed" json:"seed"`
	// Temperature is the sampling temperature, 0 to 2.
	Temperature float64 `yaml:"temperature" json:"temperature"`
	// ReplayCap is the most replays per decision (default 3; 0 to 10).
	ReplayCap *int `yaml:"replay_cap" json:"replay_cap"`
	// Replay is how a replay is made: ReplayStored (the default when
	// absent) or ReplayLive.
	Replay string `yaml:"replay,omitempty" json:"replay,omitempty"`
	// Environment names the registered environment (package env) that
	// answers the calls of live replay: "lab" (the recovery lab, in
	// process), "mcp" (the reference MCP servers), or DefaultEnvironment
	// when absent (stored replay, no environment; replay: live then needs
	// one named).
	Environment string `yaml:"environment,omitempty" json:"environment,omitempty"`
	// ProtocolVersion is the MCP protocol version the harness's client
	// asks the environment's servers for (one of protocolVersions; the
	// server may negotiate another, which each decision records); ""
	// asks for the Go SDK's latest. Only an environment that speaks MCP
	// (mcp) takes it: the lab runs in process.
	ProtocolVersion string `yaml:"protocol_version,omitempty" json:"protocol_version,omitempty"`
	// Task is what the model is asked: TaskLabel (the default when
	// absent: name a policy) or TaskAct (name a policy and write the call
	// it needs, which runs on the live environment; needs replay: live).
	Task string `yaml:"task,omitempty" json:"task,omitempty"`
	// ToolCalls is the channel of the call under task: act: ToolCallsText
	// (the default when absent: "tool" and "arguments" in the answer's
	// JSON) or ToolCallsNative (the tools are also offered as the
	// backend's native tools, and a native tool call counts).
	ToolCalls string `yaml:"tool_calls,omitempty" json:"tool_calls,omitempty"`
	// ExternalServer is the streamable-HTTP URL (http or https, no
	// credentials in it) of an MCP server the harness did not start, for
	// task: act on the reference scenarios: every decision connects to it
	// instead of starting the scenario's server, and only read-only tools
	// (annotations and capture's rules) may be called on it.
	ExternalServer string `yaml:"external_server,omitempty" json:"external_server,omitempty"`
	// Database is the engine the database environment runs its scenarios
	// on: "sqlite" (the default, embedded: nothing to install) or
	// "postgres" (a PostgreSQL cluster the environment starts in a
	// temporary directory from the machine's PostgreSQL binaries).
	Database string `yaml:"database,omitempty" json:"database,omitempty"`
	// DatabaseURL is, for database: postgres, a database of a PostgreSQL
	// server you run (postgres://user@host:port/db, no password: a
	// manifest is stored in every bundle), on which each decision's
	// database is created; DatabaseURLEnv names the environment variable
	// that holds such a URL instead, password and all (scrubbed from
	// every message, never stored). Neither: the environment starts a
	// cluster of its own.
	DatabaseURL    string `yaml:"database_url,omitempty" json:"database_url,omitempty"`
	DatabaseURLEnv string `yaml:"database_url_env,omitempty" json:"database_url_env,omitempty"`
	// Scenarios is a scenario set file of the database environment
	// (relative to the manifest): your own tables, tools, server and
	// scenarios instead of the shipped shop set
	// (docs/bring-your-own-server.md).
	Scenarios string `yaml:"scenarios,omitempty" json:"scenarios,omitempty"`
	// EnvTimeout bounds, under live replay on MCP servers, a server's
	// start (process, initialize, tools/list, the scenario's setup and
	// first call) and each call made on it, as a Go duration from 1s to
	// 10m (default defaultEnvTimeout). A server that misses it, or dies,
	// makes that decision an error decision; the run goes on.
	EnvTimeout string `yaml:"env_timeout,omitempty" json:"env_timeout,omitempty"`
	// Models are the systems under test.
	Models []Model `yaml:"models" json:"models"`
	// Comparisons declare paired comparisons before the run, beyond the
	// predeclared ones of docs/specification.md section 4, as
	// "FACTOR:A,B[,COLUMN]" with FACTOR condition, prompt or model and A, B
	// conditions, prompts or models of this manifest (see stress analyze
	// -pair). analyze and report compute them as predeclared: they join the
	// family whose p-values are adjusted together.
	Comparisons []string `yaml:"comparisons,omitempty" json:"comparisons,omitempty"`
	// MaxInFlight caps the model calls in flight across all models and
	// endpoints, 1 to 4096. Absent from the manifest (0 here), it is the
	// sum of every model's slots, parallel × endpoints, so only the
	// per-model limits apply; an explicit 0 is an error.
	MaxInFlight int `yaml:"max_in_flight,omitempty" json:"max_in_flight,omitempty"`
}

// maxParallel is the largest per-endpoint parallelism a manifest may ask for.
const maxParallel = 1024

// Slots returns the calls model md may have in flight: its parallelism
// (default 1) times its endpoints (at least one).
func (md *Model) Slots() int { return max(md.Parallel, 1) * max(len(md.Endpoints), 1) }

// Hosts returns the servers model md's decisions are spread over: its
// endpoints, or else its single host ("" for the backend's default).
func (md *Model) Hosts() []string {
	if len(md.Endpoints) > 0 {
		return md.Endpoints
	}
	return []string{md.Host}
}

// InFlight returns the effective global cap on calls in flight.
func (m *Manifest) InFlight() int {
	if m.MaxInFlight > 0 {
		return m.MaxInFlight
	}
	n := 0
	for i := range m.Models {
		n += m.Models[i].Slots()
	}
	return max(n, 1)
}

// Prompt names one prompt template file.
type Prompt struct {
	Name string `yaml:"name" json:"name"` // label in results
	Path string `yaml:"path" json:"path"` // template file, relative to the manifest
}

// Model is one system under test.
type Model struct {
	Name    string         `yaml:"name" json:"name"`                           // label in results, unique
	Backend string         `yaml:"backend" json:"backend"`                     // registered backend, e.g. baseline, ollama
	Model   string         `yaml:"model" json:"model"`                         // the backend's model id
	Digest  string         `yaml:"digest,omitempty" json:"digest,omitempty"`   // full digest the server must report
	Host    string         `yaml:"host,omitempty" json:"host,omitempty"`       // server address
	Format  any            `yaml:"format,omitempty" json:"format,omitempty"`   // "", "json", "schema" (the answer schema) or a JSON schema
	Options map[string]any `yaml:"options,omitempty" json:"options,omitempty"` // backend options
	// SeedCheck says what to do when the server does not honour seeds (a
	// probe sent twice with one seed differs): "warn" (default), "error"
	// (refuse to run) or "off" (skip the probe).
	SeedCheck string `yaml:"seed_check,omitempty" json:"seed_check,omitempty"`
	// Transport tunes timeouts, retries and the circuit breaker of HTTP
	// backends; zero fields keep the backend's defaults.
	Transport TransportSpec `yaml:"transport,omitempty" json:"transport,omitempty"`
	// Parallel is the number of calls in flight per endpoint, 1 to
	// maxParallel. Absent from the manifest (0 here), it is 1; an explicit
	// 0 is an error.
	Parallel int `yaml:"parallel,omitempty" json:"parallel,omitempty"`
	// Endpoints are servers (e.g. several Ollama hosts or vLLM replicas)
	// that serve the same model; the run spreads the model's decisions
	// over them. Set either Host or Endpoints.
	Endpoints []string `yaml:"endpoints,omitempty" json:"endpoints,omitempty"`
	// APIKeyEnv names the environment variable holding the API key (the
	// key itself never appears in manifests, results or logs).
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// Pin is what a server without digests must report (OpenAI-compatible
	// servers): the run stops before the first call on a mismatch.
	Pin Pin `yaml:"pin,omitempty" json:"pin,omitempty"`
}

// Pin lists what an OpenAI-compatible server must report for a model; an
// empty field is not checked.
type Pin struct {
	Model             string `yaml:"model,omitempty" json:"model,omitempty"`                           // the response's model id
	SystemFingerprint string `yaml:"system_fingerprint,omitempty" json:"system_fingerprint,omitempty"` // the response's system_fingerprint
}

// Resolved is a validated manifest with every file it names read and hashed.
type Resolved struct {
	Manifest
	Source  string // where the manifest came from: a path, or "builtin:NAME"
	SHA256  string // hex sha256 of the manifest bytes
	Corpus  *study.Corpus
	Prompts []PromptFile // in manifest order
}

// PromptFile is a prompt template's text and hash.
type PromptFile struct {
	Name, Path, SHA256, Text string
}

// defaultEnvTimeout is a live MCP server's deadline when the manifest
// sets no env_timeout: for its start, and for each call.
const defaultEnvTimeout = 20 * time.Second

// EnvDeadline returns the manifest's env_timeout, or defaultEnvTimeout
// (the value was checked at load time).
func (m *Manifest) EnvDeadline() time.Duration {
	if d, err := time.ParseDuration(m.EnvTimeout); err == nil && d > 0 {
		return d
	}
	return defaultEnvTimeout
}

// Replay modes, the values of a manifest's replay field.
const (
	// ReplayStored returns the stored failure again for each immediate
	// replay (the paper's simulator; the default).
	ReplayStored = "stored"
	// ReplayLive executes every policy the model chooses (but
	// stop_or_escalate) in a fresh, seeded environment and shows the model
	// the real result (docs/specification.md section 7).
	ReplayLive = "live"
)

// protocolVersions are the MCP protocol versions a manifest may ask an
// environment's servers for (protocol_version), newest first: those of the
// Go SDK the harness is built with.
var protocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// DefaultEnvironment is the environment of a manifest that names none:
// stored replay's, which is no environment at all.
const DefaultEnvironment = "stored"

// Env returns the name of the manifest's environment, DefaultEnvironment
// when it names none.
func (m *Manifest) Env() string {
	if m.Environment == "" {
		return DefaultEnvironment
	}
	return m.Environment
}

// Tasks and tool-call channels, the values of a manifest's task and
// tool_calls fields.
const (
	TaskLabel = "label" // the model names a policy (the default)
	TaskAct   = "act"   // the model names a policy and writes its call, which is executed
	// TaskCode marks the manifest a coding runs (stress code): the model
	// codes each record's actionability profile. Only the coder sets it,
	// on its copy of a coding manifest; a manifest file cannot.
	TaskCode        = "code"
	ToolCallsText   = "text"   // the call is in the answer's JSON (the default)
	ToolCallsNative = "native" // the tools are offered natively too; a native tool call counts
)

// Act reports whether the manifest asks for the action task.
func (m *Manifest) Act() bool { return m.Task == TaskAct }

// NativeTools reports whether the manifest offers the tools natively.
func (m *Manifest) NativeTools() bool { return m.ToolCalls == ToolCallsNative }

// Live reports whether the manifest asks for live replay.
func (m *Manifest) Live() bool { return m.Replay == ReplayLive }

// Cap returns the effective replay cap.
func (m *Manifest) Cap() int {
	if m.ReplayCap == nil {
		return defaultReplayCap
	}
	return *m.ReplayCap
}

// Option changes how Load and LoadBuiltin read a manifest.
type Option func(*loadConfig)

type loadConfig struct {
	withoutCodings bool
	briefRecords   bool
}

// WithoutCodings loads the corpus without its records' profile codings
// (study.LoadCorpusWithout), for a run, which reads none: they were more
// than half of what a large corpus held in memory.
func WithoutCodings() Option { return func(c *loadConfig) { c.withoutCodings = true } }

// BriefRecords loads the corpus' records unchecked, each with only its
// id, cause, surface and observation (study.LoadCorpusBrief), for an
// export, which shows no more and uses them only when the corpus' files
// are the ones its run read and checked (their sha256 in the bundle).
func BriefRecords() Option { return func(c *loadConfig) { c.briefRecords = true } }

// Load reads the manifest at file from disk and resolves the files it names
// relative to the manifest's directory.
func Load(file string, opts ...Option) (*Resolved, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	// Note: os.DirFS("/") with a rooted, slash-separated path lets corpus and
	// prompt paths climb out of the manifest's directory with "..".
	return load(os.DirFS("/"), strings.TrimPrefix(filepath.ToSlash(abs), "/"), file, true, opts)
}

// LoadBuiltin reads one of the embedded manifests, e.g. "baselines.yaml".
func LoadBuiltin(name string, opts ...Option) (*Resolved, error) {
	if _, err := fs.Stat(Builtin, name); err != nil || path.Dir(name) != "." {
		return nil, fmt.Errorf("manifest builtin:%s: no such built-in manifest (built in: %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	return load(Builtin, name, "builtin:"+name, false, opts)
}

// BuiltinNames lists the built-in manifests (manifests/*.yaml), sorted.
func BuiltinNames() []string {
	names, _ := fs.Glob(Builtin, "*.yaml")
	return names
}

// load reads manifest name from fsys; rooted says fsys is the file system
// root, so absolute paths in the manifest are allowed.
func load(fsys fs.FS, name, source string, rooted bool, opts []Option) (*Resolved, error) {
	var cfg loadConfig
	for _, o := range opts {
		o(&cfg)
	}
	data, err := input.ReadFS(fsys, name, source, input.Manifest)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", source, input.WithPath(err, source))
	}
	m, err := Parse(source, data)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	r := &Resolved{Manifest: *m, Source: source, SHA256: hex.EncodeToString(sum[:])}
	dir := path.Dir(name)
	resolve := func(field, p string) (string, error) {
		p = filepath.ToSlash(p)
		if !path.IsAbs(p) {
			return path.Join(dir, p), nil
		}
		if !rooted {
			return "", fmt.Errorf("manifest %s: field %s: an embedded manifest cannot name the absolute path %s", source, field, p)
		}
		return strings.TrimPrefix(path.Clean(p), "/"), nil
	}
	// looked says where a relative path that is not there was looked for.
	looked := func(p, file string, err error) string {
		if !rooted || path.IsAbs(filepath.ToSlash(p)) || !errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		return fmt.Sprintf(" (looked for %s: a relative path is taken from the manifest's directory)", filepath.FromSlash("/"+file))
	}
	corpusPath, err := resolve("corpus", m.Corpus)
	if err != nil {
		return nil, err
	}
	loadCorpus := study.LoadCorpusAs
	switch {
	case cfg.briefRecords:
		loadCorpus = study.LoadCorpusBrief
	case cfg.withoutCodings:
		loadCorpus = study.LoadCorpusWithout
	}
	r.Corpus, err = loadCorpus(fsys, corpusPath, m.Corpus)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: field corpus: %w%s", source, err, looked(m.Corpus, corpusPath, err))
	}
	for i := range r.Corpus.Files {
		r.Corpus.Files[i].Path = relTo(dir, r.Corpus.Files[i].Path)
	}
	for i, p := range m.Prompts {
		field := fmt.Sprintf("prompts[%d].path", i)
		file, err := resolve(field, p.Path)
		if err != nil {
			return nil, err
		}
		raw, err := input.ReadFS(fsys, file, p.Path, input.Prompt)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: field %s: %w%s", source, field, err, looked(p.Path, file, err))
		}
		text, err := input.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: field %s: %s: %w", source, field, p.Path, err)
		}
		sum := sha256.Sum256(raw) // the file as it is on disk
		r.Prompts = append(r.Prompts, PromptFile{Name: p.Name, Path: p.Path, SHA256: hex.EncodeToString(sum[:]), Text: string(text)})
	}
	return r, nil
}

func relTo(dir, p string) string {
	if dir == "." {
		return p
	}
	if rel, err := filepath.Rel("/"+dir, "/"+p); err == nil {
		return filepath.ToSlash(rel)
	}
	return p
}

var (
	namePattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)
	digestPattern = regexp.MustCompile(`^(sha256:)?[0-9a-f]{64}$`)
	shortDigest   = regexp.MustCompile(`^(sha256:)?[0-9a-f]{12}$`) // the prefix ollama list prints
	envPattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// parseYAML parses data, which must hold one YAML document, and returns
// the document's body (nil for an empty one). Note: the YAML library
// panics on some malformed inputs (found by FuzzParse, kept in
// testdata/fuzz); the panic becomes an error here, as in decodeYAML.
func parseYAML(data []byte) (body ast.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed YAML (the decoder failed: %s)", input.Snippet(fmt.Sprint(r)))
		}
	}()
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, errors.New(input.Snippet(yaml.FormatError(err, false, true)))
	}
	if len(f.Docs) > 1 {
		return nil, fmt.Errorf("%d YAML documents (separated by ---); a manifest is one", len(f.Docs))
	}
	if len(f.Docs) == 0 {
		return nil, nil
	}
	return f.Docs[0].Body, nil
}

// decodeYAML decodes the document body (parseYAML) into v with the
// decoder's options (yaml.Strict: unknown fields and duplicate keys are
// errors), then checks that every value reads as it is written
// (asWritten); the message quotes the source lines at fault, bounded by
// input.Snippet. A whole-number field is read as written (whole), and a
// value that is not one is reported with its line and field by asWritten.
func decodeYAML(body ast.Node, v any, opts ...yaml.DecodeOption) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed YAML (the decoder failed: %s)", input.Snippet(fmt.Sprint(r)))
		}
	}()
	if body == nil {
		return nil
	}
	opts = append(opts, whole[int](), whole[int64](), whole[uint64]())
	derr := yaml.NodeToValue(body, v, opts...)
	var nw *notWhole
	if derr != nil && !errors.As(derr, &nw) {
		return errors.New(input.Snippet(yaml.FormatError(derr, false, true)))
	}
	if err := asWritten(body, reflect.TypeOf(v), ""); err != nil {
		return errors.New(input.Snippet(err.Error()))
	}
	return derr // a whole-number error asWritten did not place (none known)
}

// asWritten checks that each value node sets in a field of type t reads
// as it is written: a whole-number field holds decimal digits that fit
// (parseWhole), and a text field holds no unquoted value that YAML takes
// for other text (1.10 is the number 1.1, True is true, 0x1F is 31, so
// such a name would be stored as other text). field is the path of node.
func asWritten(node ast.Node, t reflect.Type, field string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if a, ok := node.(*ast.AnchorNode); ok {
		node = a.Value
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint64:
		if _, null := node.(*ast.NullNode); null || node.GetToken() == nil {
			return nil
		}
		text := strings.TrimSpace(node.String())
		var err error
		switch t.Kind() {
		case reflect.Int:
			_, err = parseWhole[int](text)
		case reflect.Int64:
			_, err = parseWhole[int64](text)
		default:
			_, err = parseWhole[uint64](text)
		}
		if err != nil {
			return fmt.Errorf("line %d: field %s: %w", node.GetToken().Position.Line, field, err)
		}
	case reflect.String:
		switch node.(type) {
		case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
			tok := node.GetToken()
			var read string
			if yaml.NodeToValue(node, &read) == nil && tok != nil && read != tok.Value {
				return fmt.Errorf("line %d: field %s: %s is read as %q (YAML takes it for a number or a boolean); write it in quotes: %q", tok.Position.Line, field, tok.Value, read, tok.Value)
			}
		}
	case reflect.Slice:
		if seq, ok := node.(*ast.SequenceNode); ok {
			for i, n := range seq.Values {
				if err := asWritten(n, t.Elem(), fmt.Sprintf("%s[%d]", field, i)); err != nil {
					return err
				}
			}
		}
	case reflect.Map, reflect.Struct:
		m, ok := node.(ast.MapNode)
		if !ok {
			return nil
		}
		for it := m.MapRange(); it.Next(); {
			key := it.Key().GetToken().Value
			ft := t.Elem
			if t.Kind() == reflect.Struct {
				sf, found := yamlField(t, key)
				if !found {
					continue
				}
				ft = func() reflect.Type { return sf.Type }
			}
			if field != "" {
				key = field + "." + key
			}
			if err := asWritten(it.Value(), ft(), key); err != nil {
				return err
			}
		}
	}
	return nil
}

// yamlField is the field of struct t that the YAML key name sets. Note:
// the manifest's structs embed none (TestManifestEmbedsNothing), so t's
// own fields are all there is (reflect.VisibleFields, which allocates,
// was a fifth of Parse's time).
func yamlField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlName is the YAML key of a struct field.
func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

// whole reads an integer field as it is written (parseWhole). Without
// it goccy/go-yaml reads 2.5 as 2, "2" as 2 and 2^64 as 2^63 (a float
// converted to an integer).
func whole[T int | int64 | uint64]() yaml.DecodeOption {
	return yaml.CustomUnmarshaler[T](func(v *T, b []byte) error {
		n, err := parseWhole[T](strings.TrimSpace(string(b)))
		if err != nil {
			return &notWhole{err}
		}
		*v = n
		return nil
	})
}

// parseWhole reads s as a whole number of type T: decimal digits with an
// optional sign, in T's range.
func parseWhole[T int | int64 | uint64](s string) (T, error) {
	var n T
	var err error
	switch any(n).(type) {
	case uint64:
		var u uint64
		u, err = strconv.ParseUint(s, 10, 64)
		n = T(u)
	default:
		var i int64
		i, err = strconv.ParseInt(s, 10, int(unsafe.Sizeof(n))*8)
		n = T(i)
	}
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("the whole number %s is out of range", s)
	case err != nil:
		return 0, fmt.Errorf("want a whole number, got %s", s)
	}
	return n, nil
}

// notWhole is the error of a value written where a whole number belongs.
type notWhole struct{ err error }

func (e *notWhole) Error() string { return e.err.Error() }
func (e *notWhole) Unwrap() error { return e.err }

// setFields records which optional numbers a manifest sets, to tell an
// explicit 0 (out of range) from an absent field (the default).
type setFields struct {
	MaxInFlight *int `yaml:"max_in_flight"`
	Models      []struct {
		Parallel *int `yaml:"parallel"`
	} `yaml:"models"`
}

// Parse decodes and validates manifest bytes (YAML or JSON). Unknown fields
// and invalid values are errors naming the source and the field.
func Parse(source string, data []byte) (*Manifest, error) {
	if len(data) > maxBytes {
		return nil, fmt.Errorf("manifest %s: %d bytes; a manifest holds at most %d (1 MiB)", source, len(data), maxBytes)
	}
	data, err := input.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", source, err)
	}
	if err := input.CheckYAML(data); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", source, err)
	}
	body, err := parseYAML(data)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %s", source, err)
	}
	var m Manifest
	if err := decodeYAML(body, &m, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("manifest %s: %s", source, err)
	}
	var set setFields
	if err := decodeYAML(body, &set); err != nil {
		return nil, fmt.Errorf("manifest %s: %s", source, err)
	}
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("manifest %s: field %s: %s", source, field, fmt.Sprintf(format, a...)))
	}
	if !namePattern.MatchString(m.Name) {
		bad("name", "want letters, digits, _ . : -, got %s", input.Quote(m.Name))
	}
	if m.Corpus == "" {
		bad("corpus", "missing")
	}
	if len(m.Prompts) == 0 {
		bad("prompts", "want at least one prompt template")
	}
	seen := map[string]bool{}
	for i, p := range m.Prompts {
		if !namePattern.MatchString(p.Name) {
			bad(fmt.Sprintf("prompts[%d].name", i), "want letters, digits, _ . : -, got %s", input.Quote(p.Name))
		} else if seen[p.Name] {
			bad(fmt.Sprintf("prompts[%d].name", i), "duplicate prompt name %s", input.Quote(p.Name))
		}
		seen[p.Name] = true
		if p.Path == "" {
			bad(fmt.Sprintf("prompts[%d].path", i), "missing")
		}
	}
	if len(m.Conditions) == 0 {
		bad("conditions", "want at least one of %v", study.AllConditions)
	}
	seenC := map[study.Condition]bool{}
	for i, c := range m.Conditions {
		if !c.Valid() {
			bad(fmt.Sprintf("conditions[%d]", i), "unknown condition %s (want one of %v)", input.Quote(string(c)), study.AllConditions)
		} else if seenC[c] {
			bad(fmt.Sprintf("conditions[%d]", i), "duplicate condition %s", input.Quote(string(c)))
		}
		seenC[c] = true
	}
	if m.Replicates < 1 || m.Replicates > 100000 {
		bad("replicates", "want 1 to 100000, got %d", m.Replicates)
	}
	for i, c := range m.Comparisons {
		if why := m.checkComparison(c); why != "" {
			bad(fmt.Sprintf("comparisons[%d]", i), "%s: %s", input.Quote(c), why)
		}
	}
	if !(m.Temperature >= 0 && m.Temperature <= 2) { // NaN too
		bad("temperature", "want 0 to 2, got %v", m.Temperature)
	}
	if m.ReplayCap != nil && (*m.ReplayCap < 0 || *m.ReplayCap > 10) {
		bad("replay_cap", "want 0 to 10, got %d", *m.ReplayCap)
	}
	if m.Replay != "" && m.Replay != ReplayStored && m.Replay != ReplayLive {
		bad("replay", "want %q (the default) or %q, got %s", ReplayStored, ReplayLive, input.Quote(m.Replay))
	}
	// Note: whether the name is registered is checked where the registry
	// is (env.Open), which lists the registered names.
	switch {
	case m.Environment == "":
	case !namePattern.MatchString(m.Environment):
		bad("environment", "want the name of a registered environment (letters, digits, _ . : -), got %s", input.Quote(m.Environment))
	case m.Environment != DefaultEnvironment && !m.Live():
		bad("environment", "%s needs replay: %q (stored replay runs no environment)", input.Quote(m.Environment), ReplayLive)
	}
	switch {
	case m.ProtocolVersion == "":
	case !slices.Contains(protocolVersions, m.ProtocolVersion):
		bad("protocol_version", "want one of %s, got %s", strings.Join(protocolVersions, ", "), input.Quote(m.ProtocolVersion))
	case m.Env() != "mcp" && m.Env() != "database":
		bad("protocol_version", "only environments mcp and database speak MCP to their servers (environment %s runs without a protocol)", m.Env())
	}
	switch m.Task {
	case "", TaskLabel:
	case TaskAct:
		if !m.Live() {
			bad("task", "%q needs replay: %q (the calls run on a live environment), got replay %s", TaskAct, ReplayLive, input.Quote(m.Replay))
		}
	default:
		bad("task", "want %q (the default) or %q, got %s", TaskLabel, TaskAct, input.Quote(m.Task))
	}
	switch m.ToolCalls {
	case "", ToolCallsText:
	case ToolCallsNative:
		if !m.Act() {
			bad("tool_calls", "%q needs task: %q", ToolCallsNative, TaskAct)
		}
	default:
		bad("tool_calls", "want %q (the default) or %q, got %s", ToolCallsText, ToolCallsNative, input.Quote(m.ToolCalls))
	}
	if m.ExternalServer != "" {
		u, err := url.Parse(m.ExternalServer)
		switch why := credentialIn(m.ExternalServer); {
		case why != "":
			bad("external_server", "%s; it would be stored in every bundle (put the server behind a local proxy that adds the credential instead)", why)
		case !m.Act():
			bad("external_server", "needs task: %q (only the action task calls a server)", TaskAct)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			bad("external_server", "want an http or https URL of a streamable-HTTP MCP endpoint, got %s", input.Quote(m.ExternalServer))
		}
	}
	switch m.Database {
	case "", "sqlite", "postgres":
	default:
		bad("database", "want sqlite (the default) or postgres, got %s (a database of your own is named in a scenario set: docs/bring-your-own-server.md)", input.Quote(m.Database))
	}
	if m.DatabaseURL != "" || m.DatabaseURLEnv != "" {
		u, err := url.Parse(m.DatabaseURL)
		switch why := credentialIn(m.DatabaseURL); {
		case m.Database != "postgres":
			bad("database_url", "needs database: postgres")
		case m.DatabaseURL != "" && m.DatabaseURLEnv != "":
			bad("database_url", "give database_url or database_url_env, not both")
		case why != "":
			bad("database_url", "%s; it would be stored in every bundle (name the environment variable that holds the URL in database_url_env instead)", why)
		case m.DatabaseURL != "" && (err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == ""):
			bad("database_url", "want a postgres:// URL of a database on your server, got %s", input.Quote(m.DatabaseURL))
		case m.DatabaseURLEnv != "" && !envPattern.MatchString(m.DatabaseURLEnv):
			bad("database_url_env", "want the name of an environment variable (letters, digits, _), not its value, which is not repeated here")
		}
	}
	if (m.Database != "" || m.Scenarios != "") && m.Environment != "database" {
		bad("database", "database, database_url and scenarios configure environment: database, and the manifest names %s", input.Quote(m.Env()))
	}
	if m.EnvTimeout != "" {
		d, err := time.ParseDuration(m.EnvTimeout)
		switch {
		case !m.Live():
			bad("env_timeout", "needs replay: %q (only a live environment has a deadline)", ReplayLive)
		case err != nil || d < time.Second || d > 10*time.Minute:
			bad("env_timeout", "want a duration from 1s to 10m (such as 20s or 2m), got %s", input.Quote(m.EnvTimeout))
		}
	}
	if len(m.Models) == 0 {
		bad("models", "want at least one model")
	}
	if m.MaxInFlight < 0 || m.MaxInFlight > 4096 || m.MaxInFlight == 0 && set.MaxInFlight != nil {
		bad("max_in_flight", "want 1 to 4096 calls in flight, got %d", m.MaxInFlight)
	}
	seenM := map[string]bool{}
	for i, md := range m.Models {
		f := fmt.Sprintf("models[%d]", i)
		if !namePattern.MatchString(md.Name) {
			bad(f+".name", "want letters, digits, _ . : -, got %s", input.Quote(md.Name))
		} else if seenM[md.Name] {
			bad(f+".name", "duplicate model name %s", input.Quote(md.Name))
		}
		seenM[md.Name] = true
		if md.Backend == "" {
			bad(f+".backend", "missing")
		}
		if md.Model == "" {
			bad(f+".model", "missing")
		}
		if md.Digest != "" && !digestPattern.MatchString(md.Digest) {
			hint := ""
			if shortDigest.MatchString(md.Digest) {
				hint = " (ollama list shows only the first 12 digits; stress models lists the whole digest)"
			}
			bad(f+".digest", "want 64 lower-case hex digits, optionally after sha256:, got %s%s", input.Quote(md.Digest), hint)
		}
		if md.Parallel < 0 || md.Parallel > maxParallel || md.Parallel == 0 && i < len(set.Models) && set.Models[i].Parallel != nil {
			bad(f+".parallel", "want 1 to %d calls in flight per endpoint, got %d", maxParallel, md.Parallel)
		}
		if len(md.Endpoints) > 0 && md.Host != "" {
			bad(f+".endpoints", "set either host or endpoints, not both")
		}
		if why := credentialIn(md.Host); md.Host != "" && why != "" {
			bad(f+".host", "%s; it would be stored in every bundle (give the key with api_key_env)", why)
		}
		seenE := map[string]bool{}
		for j, e := range md.Endpoints {
			switch why := credentialIn(e); {
			case why != "":
				bad(fmt.Sprintf("%s.endpoints[%d]", f, j), "%s; it would be stored in every bundle (give the key with api_key_env)", why)
			case strings.TrimSpace(e) == "":
				bad(fmt.Sprintf("%s.endpoints[%d]", f, j), "empty endpoint")
			case seenE[e]:
				bad(fmt.Sprintf("%s.endpoints[%d]", f, j), "duplicate endpoint %s", input.Quote(e))
			}
			seenE[e] = true
		}
		if md.APIKeyEnv != "" && !envPattern.MatchString(md.APIKeyEnv) {
			bad(f+".api_key_env", "want the name of an environment variable (letters, digits, _), got %s", input.Quote(md.APIKeyEnv))
		}
		if err := md.Transport.Check(); err != nil {
			bad(f+".transport", "%v", err)
		}
		switch md.SeedCheck {
		case "", "warn", "error", "off":
		default:
			bad(f+".seed_check", `want "warn", "error" or "off", got %s`, input.Quote(md.SeedCheck))
		}
		switch v := md.Format.(type) {
		case nil, map[string]any:
		case string:
			if v != "" && v != "json" && v != "schema" {
				bad(f+".format", `want "", "json", "schema" (the answer's JSON schema) or a JSON schema object, got %s`, input.Quote(v))
			}
		default:
			bad(f+".format", `want "", "json", "schema" or a JSON schema object, got %T`, v)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &m, nil
}

// TransportSpec tunes the HTTP layer of a backend; a zero field keeps the
// backend's default (see models/transport.Options).
type TransportSpec struct {
	TimeoutS      float64 `yaml:"timeout_s,omitempty" json:"timeout_s,omitempty"`             // one attempt, seconds
	Attempts      int     `yaml:"attempts,omitempty" json:"attempts,omitempty"`               // most attempts per call
	BackoffMS     float64 `yaml:"backoff_ms,omitempty" json:"backoff_ms,omitempty"`           // first backoff ceiling, ms
	MaxBackoffMS  float64 `yaml:"max_backoff_ms,omitempty" json:"max_backoff_ms,omitempty"`   // backoff and Retry-After cap, ms
	MaxBodyBytes  int64   `yaml:"max_body_bytes,omitempty" json:"max_body_bytes,omitempty"`   // response body cap
	BreakerAfter  int     `yaml:"breaker_after,omitempty" json:"breaker_after,omitempty"`     // failed attempts that pause the endpoint
	BreakerPauseS float64 `yaml:"breaker_pause_s,omitempty" json:"breaker_pause_s,omitempty"` // pause length, seconds
}

// Check reports the first out-of-range field. The ranges are written so
// that NaN is out of every one.
func (t TransportSpec) Check() error {
	switch {
	case !(t.TimeoutS >= 0 && t.TimeoutS <= 86400):
		return fmt.Errorf("timeout_s: want 0 to 86400, got %v", t.TimeoutS)
	case t.Attempts < 0 || t.Attempts > 100:
		return fmt.Errorf("attempts: want 0 to 100, got %d", t.Attempts)
	case !(t.BackoffMS >= 0 && t.BackoffMS <= 86_400_000):
		return fmt.Errorf("backoff_ms: want 0 to 86400000 (a day), got %v", t.BackoffMS)
	case !(t.MaxBackoffMS >= 0 && t.MaxBackoffMS <= 86_400_000):
		return fmt.Errorf("max_backoff_ms: want 0 to 86400000 (a day), got %v", t.MaxBackoffMS)
	case t.MaxBodyBytes < 0:
		return fmt.Errorf("max_body_bytes must not be negative")
	case t.BreakerAfter < 0:
		return fmt.Errorf("breaker_after must not be negative")
	case !(t.BreakerPauseS >= 0 && t.BreakerPauseS <= 86400):
		return fmt.Errorf("breaker_pause_s: want 0 to 86400, got %v", t.BreakerPauseS)
	}
	return nil
}

// checkComparison returns why comparison c (FACTOR:A,B[,COLUMN]) is not
// one the manifest can run, or "". The column is checked by the analysis.
func (m *Manifest) checkComparison(c string) string {
	factor, rest, ok := strings.Cut(c, ":")
	if !ok {
		return "want FACTOR:A,B[,COLUMN] with FACTOR condition, prompt or model"
	}
	parts := strings.Split(rest, ",")
	if len(parts) < 2 || len(parts) > 3 {
		return "want FACTOR:A,B[,COLUMN]"
	}
	a, b := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
	if a == b {
		return "the two levels are the same"
	}
	var levels []string
	switch strings.TrimSpace(factor) {
	case "condition":
		for _, x := range m.Conditions {
			levels = append(levels, string(x))
		}
	case "prompt":
		for _, x := range m.Prompts {
			levels = append(levels, x.Name)
		}
	case "model":
		for _, x := range m.Models {
			levels = append(levels, x.Name)
		}
	default:
		return fmt.Sprintf("unknown factor %s (want condition, prompt or model)", input.Quote(factor))
	}
	for _, l := range []string{a, b} {
		if !slices.Contains(levels, l) {
			return fmt.Sprintf("%s is not one of the manifest's %ss %v", input.Quote(l), strings.TrimSpace(factor), levels)
		}
	}
	return ""
}
