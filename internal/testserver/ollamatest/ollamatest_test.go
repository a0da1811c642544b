package ollamatest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/fs/ggml"
)

func TestWriteTinyGGUFDeterministic(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, opts ...TinyOption) []byte {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := writeTinyGGUFFile(path, opts...); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := write("a.gguf"), write("b.gguf"), write("c.gguf", withSeed(42))
	if !bytes.Equal(a, b) {
		t.Fatal("same options gave different files")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same file")
	}
	if len(a) < 300<<10 || len(a) > 1<<20 {
		t.Errorf("size %d bytes, want about 0.5 MB", len(a))
	}
	if string(a[:4]) != "GGUF" || binary.LittleEndian.Uint32(a[4:]) != 3 {
		t.Fatalf("bad header % x", a[:8])
	}
	t.Logf("tiny.gguf: %d bytes, sha256 %x", len(a), sha256.Sum256(a))

	// Read back by Ollama's own decoder: the model's shape, vocabulary and
	// every tensor's size as written.
	g, err := ggml.Decode(bytes.NewReader(a), -1)
	if err != nil {
		t.Fatalf("ggml.Decode: %v", err)
	}
	kv := g.KV()
	if kv.Architecture() != "llama" || kv.BlockCount() != nLayer || kv.Uint("embedding_length") != nEmbd || kv.Uint("attention.head_count") != nHead {
		t.Errorf("decoded architecture %q, %d blocks, embedding %d, %d heads", kv.Architecture(), kv.BlockCount(), kv.Uint("embedding_length"), kv.Uint("attention.head_count"))
	}
	tokens := kv.Strings("tokenizer.ggml.tokens")
	if len(tokens) != int(kv.Uint("vocab_size")) || len(tokens) <= eosToken || len(kv.Ints("tokenizer.ggml.token_type")) != len(tokens) {
		t.Errorf("decoded %d tokens, %d types, vocab_size %d", len(tokens), len(kv.Ints("tokenizer.ggml.token_type")), kv.Uint("vocab_size"))
	}
	ts := g.Tensors().Items()
	if want := 1 + 9*nLayer + 2; len(ts) != want {
		t.Fatalf("decoded %d tensors, want %d", len(ts), want)
	}
	var data uint64
	for _, x := range ts {
		if x.Kind != 0 {
			t.Errorf("tensor %s kind %d, want 0 (F32)", x.Name, x.Kind)
		}
		data += x.Size()
	}
	if data > uint64(len(a)) || uint64(len(a))-data > 64<<10 {
		t.Errorf("tensors hold %d bytes of a %d-byte file", data, len(a))
	}
}

func TestBinaryMissingMentionsInstallScript(t *testing.T) {
	t.Setenv("OLLAMA_BIN", "/nonexistent/ollama")
	_, err := findBinary()
	if err == nil || !strings.Contains(err.Error(), "scripts/ollama-install.sh") {
		t.Fatalf("findBinary() error = %v, want a hint to run scripts/ollama-install.sh", err)
	}
	if Available() {
		t.Fatal("Available() = true for a missing OLLAMA_BIN")
	}
}

type chatResponse struct {
	Message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	Done       bool   `json:"done"`
	DoneReason string `json:"done_reason"`
	EvalCount  int    `json:"eval_count"`
}

type answer struct {
	OperationStatus string `json:"operation_status"`
	RecoveryPolicy  string `json:"recovery_policy"`
}

func chat(ctx context.Context, host, model string, seed int) (chatResponse, error) {
	req := map[string]any{
		"model":  model,
		"stream": false,
		"format": json.RawMessage(AnswerSchema),
		"messages": []map[string]string{
			{"role": "system", "content": "Classify the tool call result. Answer with JSON."},
			{"role": "user", "content": `Tool "create_issue" returned HTTP 401: token expired.`},
		},
		"options": map[string]any{"temperature": 0.7, "seed": seed, "num_predict": 64},
	}
	body, err := json.Marshal(req)
	if err != nil {
		return chatResponse{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, host+"/api/chat", bytes.NewReader(body))
	if err != nil {
		return chatResponse{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return chatResponse{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return chatResponse{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return chatResponse{}, fmt.Errorf("/api/chat: %s: %s", resp.Status, raw)
	}
	var out chatResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return chatResponse{}, fmt.Errorf("decode %q: %w", raw, err)
	}
	return out, nil
}

// TestServerTinyModelChat runs the real server with the tiny model and checks
// that structured-output chat answers are schema-valid, varied across seeds
// and reproducible for a seed.
func TestServerTinyModelChat(t *testing.T) {
	start := time.Now()
	s := Start(t)
	t.Logf("server %s up in %v", s.Host, time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := s.CreateTinyModel(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Digest) != 64 {
		t.Fatalf("odd digest %q", m.Digest)
	}
	t.Logf("model %s digest %s size %d", m.Name, m.Digest, m.Size)

	// Warm-up: the first call loads the model into a runner.
	t0 := time.Now()
	if _, err := chat(ctx, s.Host, m.Name, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("first call (model load) %v", time.Since(t0).Round(time.Millisecond))

	const nSeeds = 20
	statuses := map[string]int{}
	policies := map[string]int{}
	contents := map[string]int{}
	var calls int
	var total time.Duration
	for seed := 1; seed <= nSeeds; seed++ {
		var first string
		for rep := 0; rep < 2; rep++ {
			t0 := time.Now()
			r, err := chat(ctx, s.Host, m.Name, seed)
			total += time.Since(t0)
			calls++
			if err != nil {
				t.Fatal(err)
			}
			content := r.Message.Content
			if rep == 1 {
				if content != first {
					t.Errorf("seed %d not reproducible:\n%q\n%q", seed, first, content)
				}
				continue
			}
			first = content
			var a answer
			dec := json.NewDecoder(strings.NewReader(content))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&a); err != nil {
				t.Errorf("seed %d: content %q (done_reason %s, %d tokens) is not a valid answer: %v",
					seed, content, r.DoneReason, r.EvalCount, err)
				continue
			}
			if !slices.Contains(operationStatuses, a.OperationStatus) || !slices.Contains(recoveryPolicies, a.RecoveryPolicy) {
				t.Errorf("seed %d: labels out of vocabulary: %q", seed, content)
				continue
			}
			statuses[a.OperationStatus]++
			policies[a.RecoveryPolicy]++
			contents[content]++
			if testing.Verbose() {
				t.Logf("seed %2d: %s (%d tokens)", seed, content, r.EvalCount)
			}
		}
	}
	t.Logf("%d calls, %.1f ms/call", calls, float64(total.Microseconds())/1000/float64(calls))
	t.Logf("operation_status: %s", fmtCounts(statuses))
	t.Logf("recovery_policy:  %s", fmtCounts(policies))
	if len(policies)+len(statuses) < 3 {
		t.Errorf("only %d distinct labels over %d seeds", len(policies)+len(statuses), nSeeds)
	}
	if len(contents) < 2 {
		t.Errorf("all seeds gave the same answer")
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

func fmtCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}

// withSeed sets the PRNG seed of the weights (default defaultSeed).
func withSeed(seed uint64) TinyOption { return func(c *tinyConfig) { c.seed = seed } }
