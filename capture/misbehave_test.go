package capture

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a misbehaving stdio MCP server, written by
// hand on raw JSON-RPC lines (the SDK would not misbehave), chosen by the
// CAPTURE_RAW environment variable. It answers server/discover with
// -32601, initialize, ping and tools/list (one read-only tool, get_item,
// with a required string id) properly; what it does otherwise:
//
//	crash    on tools/call, writes a panic to stderr and exits with status 3
//	signal   on tools/call, kills itself with SIGKILL
//	banner   writes "Starting server v1..." on stdout before anything else
//	wrongid  answers tools/call with id 99
//	silent   never answers tools/call
//	storm    from initialization until stdin closes, floods
//	         notifications/message (1 KiB each) as fast as the pipe takes
//	         them
//	bigline  answers tools/call with a line of rawBigLine bytes (over the
//	         SDK's 16 MiB limit)
//	bigtext  answers the wrong-type call (an id that is no string) with an
//	         isError result whose one text block holds rawBigText bytes,
//	         other calls with a short one
//
// Note: it is dispatched from init, before TestMain, so that the shared
// TestMain stays as it is.
func init() {
	if mode := os.Getenv("CAPTURE_RAW"); mode != "" {
		rawServer(mode, os.Stdin, os.Stdout)
		os.Exit(0)
	}
	if os.Getenv("CAPTURE_STORM_CHILD") != "" {
		stormChild()
		os.Exit(0)
	}
}

// Sizes the raw server's big answers have.
const (
	rawBigLine = 17 << 20
	rawBigText = 5 << 20
)

// rawText is the start of the big text; bigTextLine fills the rest.
const (
	rawText     = "Lookup failed: the item store answered with its whole log.\n"
	bigTextLine = "entry %07d: the item store is busy, retrying in a while\n"
)

// bigText returns the raw server's big text, n bytes long.
func bigText(n int) string {
	var b strings.Builder
	b.WriteString(rawText)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, bigTextLine, i)
	}
	return b.String()[:n]
}

func rawServer(mode string, in io.Reader, out io.Writer) {
	var mu sync.Mutex
	write := func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := out.Write(b)
		return err
	}
	send := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		if write(append(b, '\n')) != nil {
			os.Exit(1)
		}
	}
	reply := func(id json.RawMessage, result any) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	if mode == "banner" {
		fmt.Fprintln(out, "Starting server v1...")
	}
	stop := make(chan struct{})
	defer close(stop)
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Arguments       struct {
					ID json.RawMessage `json:"id"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
			continue // notifications and replies
		}
		switch m.Method {
		case "initialize":
			reply(m.ID, map[string]any{"protocolVersion": m.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "raw-" + mode, "version": "1"}})
			if mode == "storm" {
				go storm(write, stop)
			}
		case "ping":
			reply(m.ID, map[string]any{})
		case "tools/list":
			reply(m.ID, map[string]any{"tools": []any{map[string]any{
				"name": "get_item", "annotations": map[string]any{"readOnlyHint": true},
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"}},
			}}})
		case "tools/call":
			switch mode {
			case "crash":
				fmt.Fprintln(os.Stderr, "raw server: handling tools/call")
				fmt.Fprintln(os.Stderr, "panic: boom")
				fmt.Fprintln(os.Stderr, "goroutine 1 [running]:")
				os.Exit(3)
			case "signal":
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			case "wrongid":
				reply(json.RawMessage("99"), map[string]any{"content": []any{}})
			case "silent":
			case "bigline":
				pad := rawBigLine - len(`{"jsonrpc":"2.0","id":,"result":{"content":[{"type":"text","text":""}]}}`) - len(m.ID)
				reply(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("x", pad)}}})
			case "bigtext":
				text := "Invalid arguments."
				if m.Params.Arguments.ID != nil && m.Params.Arguments.ID[0] != '"' {
					text = bigText(rawBigText) // the wrong-type probe only
				}
				reply(m.ID, map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": text}}})
			default:
				reply(m.ID, map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "Unknown tool."}}})
			}
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
		}
	}
}

// storm sends notifications until stop is closed, as fast as the pipe
// takes them: 1 KiB each, 64 to a write.
func storm(write func([]byte) error, stop <-chan struct{}) {
	pad := strings.Repeat("~", 960)
	var chunk []byte
	for i := 0; i < 64; i++ {
		chunk = fmt.Appendf(chunk, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"storm","data":"tick %02d %s"}}`+"\n", i, pad)
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		if write(chunk) != nil {
			return
		}
	}
}

// rawTarget runs this test binary as the raw server in the given mode.
func rawTarget(t testing.TB, mode string) Target {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Target{Label: "raw-" + mode, Command: []string{exe, "-test.run=^$"}, Env: []string{"CAPTURE_RAW=" + mode}}
}

// rawOptions pins the protocol version, so that the SDK sends initialize
// first.
func rawOptions() Options {
	return Options{Salt: testSalt, Interval: time.Millisecond, Timeout: 10 * time.Second, Grace: 500 * time.Millisecond,
		ProtocolVersion: "2025-06-18"}
}

// rawFrames reads a frames file as plain JSON objects, so that the test
// does not depend on the Frame type.
func rawFrames(t *testing.T, name string) []map[string]any {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	dec := json.NewDecoder(f)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

func runRaw(t *testing.T, mode string, o Options) *Server {
	t.Helper()
	servers, err := Run(context.Background(), []Target{rawTarget(t, mode)}, o)
	if err != nil {
		t.Fatal(err)
	}
	return servers[0]
}
