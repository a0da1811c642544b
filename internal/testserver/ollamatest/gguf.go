// Package ollamatest runs a real Ollama server (built by
// scripts/ollama-install.sh) with a tiny, deterministic llama model that the
// tests generate themselves, so no model weights are ever downloaded.
//
// The model (writeTinyGGUFFile) is a ~0.5 MB GGUF v3 file: architecture llama,
// 2 layers, embedding 64, 4 heads, feed-forward 128, F32 tensors and a GPT-2
// style BPE vocabulary of the 256 byte tokens, BOS/EOS control tokens and a
// few whole-word tokens for the keys and enum values of the answer schema
// (AnswerSchema). Its weights are random from a fixed seed, except for hidden
// dimension 0, which is held constant (embedding value, zero in the block
// norms, zero rows in the residual projections) and whose output weights act
// as a per-token bias: structural JSON tokens, the whole-word schema tokens
// and EOS are pushed up, whitespace down. Under Ollama's JSON-schema grammar
// the model therefore answers with short, schema-valid JSON whose labels
// depend on the sampling seed.
package ollamatest

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/ollama/ollama/fs/ggml"
)

// Model shape.
const (
	nEmbd    = 64
	nLayer   = 2
	nHead    = 4
	nHeadKV  = 4
	nFF      = 128
	headDim  = nEmbd / nHead
	rmsEps   = 1e-5
	ropeBase = 10000
)

// Vocabulary ids of the special tokens.
const (
	bosToken = 256
	eosToken = 257
)

// operationStatuses are the enum values of the answer's "operation_status".
var operationStatuses = []string{"failed", "succeeded"}

// recoveryPolicies are the enum values of the answer's "recovery_policy".
var recoveryPolicies = []string{
	"revise_arguments",
	"select_tool",
	"authenticate",
	"retry_later",
	"retry_now",
	"stop_or_escalate",
}

// AnswerSchema is the JSON schema (for the "format" field of /api/chat) of
// the answers the tiny model is built to produce. Property order matters:
// llama.cpp's schema-to-grammar keeps it.
const AnswerSchema = `{"type":"object","properties":{` +
	`"operation_status":{"type":"string","enum":["failed","succeeded"]},` +
	`"recovery_policy":{"type":"string","enum":["revise_arguments","select_tool","authenticate","retry_later","retry_now","stop_or_escalate"]}},` +
	`"required":["operation_status","recovery_policy"]}`

// ChatTemplate is the Go template (Modelfile TEMPLATE) used for the tiny
// model; it renders the conversation as plain "role: content" lines.
const ChatTemplate = `{{- if .System }}system: {{ .System }}
{{ end }}{{- range .Messages }}{{ .Role }}: {{ .Content }}
{{ end }}assistant: `

// ToolsTemplate is ChatTemplate for a model with native tool calls: it
// names the tools (so Ollama gives the model the tools capability) and
// renders a message's tool calls as {"name": …, "arguments": …}, the shape
// Ollama then parses from the model's output into message.tool_calls.
// With a format that forces that shape (ToolCallSchema), the tiny model
// calls a tool on every turn.
const ToolsTemplate = `{{- if .System }}system: {{ .System }}
{{ end }}{{- if .Tools }}tools:{{ range .Tools }} {{ .Function.Name }}{{ end }}
{{ end }}{{- range .Messages }}{{ .Role }}: {{ if .ToolCalls }}{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}{{ end }}{{ else }}{{ .Content }}{{ end }}
{{ end }}assistant: `

// ToolCallSchema is a format (JSON schema) that makes the answer a call of
// the tool name with the answer's fields (AnswerSchema) as arguments.
func ToolCallSchema(name string) string {
	return `{"type":"object","properties":{"name":{"type":"string","enum":["` + name + `"]},"arguments":` + AnswerSchema + `},"required":["name","arguments"]}`
}

// ThinkingTemplate is ChatTemplate for a thinking model, in the shape
// Ollama (v0.9 and later) infers the thinking capability and its tags from:
// a message's thinking rendered between <think> and </think> inside the
// range over the messages. With think on, the prompt ends in "<think>", so
// the server reads everything the model writes as thinking until it writes
// "</think>" (give the model that token: WithWords("</think>")); with a
// format, the server then constrains only the answer after it.
const ThinkingTemplate = `{{- if .System }}system: {{ .System }}
{{ end }}{{- range .Messages }}{{ .Role }}: {{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}
{{ end }}assistant: {{ if .Think }}<think>{{ end }}`

// TinyOption configures writeTinyGGUFFile.
type TinyOption func(*tinyConfig)

type tinyConfig struct {
	seed   uint64
	ctxLen uint32
	bias   float64  // logit bias of favoured tokens (whitespace gets -bias)
	noise  float64  // amplitude of the random output weights
	words  []string // extra favoured whole-word tokens (WithWords)
}

// defaultSeed is the weight seed of the tiny model (tests vary it with withSeed).
const defaultSeed = 0x5eed_0001

// WithWords adds whole-word tokens to the vocabulary, favoured like the
// schema's (default none, which leaves the file as it was): "</think>"
// lets a thinking template's model end its thinking.
func WithWords(words ...string) TinyOption {
	return func(c *tinyConfig) { c.words = append(c.words, words...) }
}

// schemaWords are the whole-word tokens added to the byte vocabulary; the
// quoted forms are the ones the model is biased towards.
func schemaWords() []string {
	words := append([]string{"operation_status", "recovery_policy"}, operationStatuses...)
	words = append(words, recoveryPolicies...)
	return words
}

// byteToUnicode is GPT-2's reversible byte -> printable rune mapping.
func byteToUnicode() [256]rune {
	var m [256]rune
	var printable [256]bool
	for b := '!'; b <= '~'; b++ {
		printable[b] = true
	}
	for b := 0xA1; b <= 0xAC; b++ {
		printable[b] = true
	}
	for b := 0xAE; b <= 0xFF; b++ {
		printable[b] = true
	}
	n := 0
	for b := 0; b < 256; b++ {
		if printable[b] {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}

// Token types (llama.cpp LLAMA_TOKEN_TYPE_*).
const (
	tokNormal  = 1
	tokControl = 3
)

type vocab struct {
	tokens []string
	types  []int32
	merges []string
	bias   []float64 // per-token logit bias in units of cfg.bias
}

func buildVocab(extra []string) vocab {
	var v vocab
	b2u := byteToUnicode()
	add := func(s string, typ int32, bias float64) {
		v.tokens = append(v.tokens, s)
		v.types = append(v.types, typ)
		v.bias = append(v.bias, bias)
	}
	for b := 0; b < 256; b++ {
		bias := 0.0
		switch b {
		case '{', '}', ':', ',':
			bias = 1
		case ' ', '\n', '\t', '\r':
			bias = -1
		}
		add(string(b2u[b]), tokNormal, bias)
	}
	add("<|bos|>", tokControl, -1) // bosToken
	// EOS: above whitespace (so a grammar-complete answer stops at once) but
	// below the favoured tokens (so free-form answers are not empty).
	add("<|eos|>", tokControl, 0.5) // eosToken
	// Merged structural tokens: these exist so the merge list has real
	// entries; they are neutral for generation.
	for _, m := range [][2]string{{`"`, `:`}, {`"`, `,`}, {`{`, `"`}, {`"`, `}`}} {
		v.merges = append(v.merges, m[0]+" "+m[1])
		add(m[0]+m[1], tokNormal, 0)
	}
	for _, w := range schemaWords() {
		add(`"`+w+`"`, tokNormal, 1) // favoured: one token per key / value
		add(w, tokNormal, 0)
	}
	for _, w := range extra {
		add(w, tokNormal, 1)
	}
	return v
}

// splitmix64 is a tiny deterministic PRNG (independent of math/rand's
// algorithms, so the file never changes across Go releases).
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// uniform returns a value in [-a, a).
func (s *splitmix64) uniform(a float64) float32 {
	u := float64(s.next()>>11) / (1 << 53)
	return float32((2*u - 1) * a)
}

type tensor struct {
	name string
	dims []uint64 // ggml order: fastest-varying first
	data []float32
}

// matrix returns a random [cols, rows] tensor (ggml dims, i.e. rows of length
// cols) with entries uniform in ±a.
func (s *splitmix64) matrix(name string, cols, rows int, a float64) tensor {
	t := tensor{name: name, dims: []uint64{uint64(cols), uint64(rows)}, data: make([]float32, cols*rows)}
	for i := range t.data {
		t.data[i] = s.uniform(a)
	}
	return t
}

func constVec(name string, n int, v float32) tensor {
	t := tensor{name: name, dims: []uint64{uint64(n)}, data: make([]float32, n)}
	for i := range t.data {
		t.data[i] = v
	}
	return t
}

func buildTensors(cfg tinyConfig, v vocab) []tensor {
	rng := splitmix64(cfg.seed)
	nVocab := len(v.tokens)

	// Embedding: dim 0 is the constant "bias" channel.
	const c0 = 4.0
	embd := rng.matrix("token_embd.weight", nEmbd, nVocab, 1)
	for tok := 0; tok < nVocab; tok++ {
		embd.data[tok*nEmbd] = c0
	}
	ts := []tensor{embd}

	// Inside the blocks the constant channel is invisible (norm weight 0)
	// and never written (zero rows of the output projections), so the
	// residual keeps dim 0 == c0 up to the final norm.
	blockNorm := func(name string) tensor {
		t := constVec(name, nEmbd, 1)
		t.data[0] = 0
		return t
	}
	zeroRow0 := func(t tensor) tensor {
		cols := int(t.dims[0])
		for i := 0; i < cols; i++ {
			t.data[i] = 0 // row 0 = output dim 0
		}
		return t
	}
	attnA := 1.5 / math.Sqrt(nEmbd)
	for l := 0; l < nLayer; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			blockNorm(p+"attn_norm.weight"),
			rng.matrix(p+"attn_q.weight", nEmbd, nEmbd, attnA),
			rng.matrix(p+"attn_k.weight", nEmbd, nEmbd, attnA),
			rng.matrix(p+"attn_v.weight", nEmbd, nEmbd, attnA),
			zeroRow0(rng.matrix(p+"attn_output.weight", nEmbd, nEmbd, attnA)),
			blockNorm(p+"ffn_norm.weight"),
			rng.matrix(p+"ffn_gate.weight", nEmbd, nFF, attnA),
			rng.matrix(p+"ffn_up.weight", nEmbd, nFF, attnA),
			zeroRow0(rng.matrix(p+"ffn_down.weight", nFF, nEmbd, 1.5/math.Sqrt(nFF))),
		)
	}
	ts = append(ts, constVec("output_norm.weight", nEmbd, 1))

	// Output: column 0 carries the per-token bias (the normalized constant
	// channel is about c0/rms), the rest is noise that makes the choice
	// between equally favoured tokens depend on context and sampling.
	out := rng.matrix("output.weight", nEmbd, nVocab, cfg.noise)
	const n0 = 5.0 // rough value of the normalized dim 0 at the output
	for tok := 0; tok < nVocab; tok++ {
		out.data[tok*nEmbd] = float32(v.bias[tok] * cfg.bias / n0)
	}
	ts = append(ts, out)
	return ts
}

// writeTinyGGUFFile writes the tiny llama model as GGUF v3 to path with
// Ollama's own writer (fs/ggml.WriteGGUF). The file is a pure function of
// the options (same options, same bytes).
func writeTinyGGUFFile(path string, opts ...TinyOption) error {
	cfg := tinyConfig{seed: defaultSeed, ctxLen: 2048, bias: 10, noise: 0.06}
	for _, o := range opts {
		o(&cfg)
	}
	v := buildVocab(cfg.words)
	kv := ggml.KV{
		"general.architecture":                   "llama",
		"general.name":                           "ollamatest-tiny",
		"general.file_type":                      uint32(0), // all F32
		"general.alignment":                      uint32(32),
		"llama.context_length":                   cfg.ctxLen,
		"llama.embedding_length":                 uint32(nEmbd),
		"llama.block_count":                      uint32(nLayer),
		"llama.feed_forward_length":              uint32(nFF),
		"llama.attention.head_count":             uint32(nHead),
		"llama.attention.head_count_kv":          uint32(nHeadKV),
		"llama.attention.layer_norm_rms_epsilon": float32(rmsEps),
		"llama.rope.dimension_count":             uint32(headDim),
		"llama.rope.freq_base":                   float32(ropeBase),
		"llama.vocab_size":                       uint32(len(v.tokens)),
		"tokenizer.ggml.model":                   "gpt2",
		"tokenizer.ggml.pre":                     "default",
		"tokenizer.ggml.tokens":                  v.tokens,
		"tokenizer.ggml.token_type":              v.types,
		"tokenizer.ggml.merges":                  v.merges,
		"tokenizer.ggml.bos_token_id":            uint32(bosToken),
		"tokenizer.ggml.eos_token_id":            uint32(eosToken),
		"tokenizer.ggml.add_bos_token":           true,
		"tokenizer.ggml.add_eos_token":           false,
	}
	var ts []*ggml.Tensor
	for _, t := range buildTensors(cfg, v) {
		ts = append(ts, &ggml.Tensor{Name: t.name, Kind: 0, Shape: t.dims, WriterTo: f32s(t.data)}) // kind 0: GGML_TYPE_F32
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// f32s writes its values as little-endian float32s, a tensor's data.
type f32s []float32

func (d f32s) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, 0, 4*len(d))
	for _, x := range d {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
	}
	n, err := w.Write(buf)
	return int64(n), err
}
