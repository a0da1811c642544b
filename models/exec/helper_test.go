package exec_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// helperEnv names the behaviour the test binary shows when it runs as an
// exec program (see TestMain).
const helperEnv = "STRESS_EXEC_HELPER"

type helperReq struct {
	ID       int64           `json:"id"`
	Type     string          `json:"type"`
	Seed     int64           `json:"seed"`
	Messages json.RawMessage `json:"messages"`
	Options  map[string]any  `json:"options"`
}

// helper runs the test binary as a stress-exec/1 program that misbehaves
// as mode says. Each mode answers hello properly unless said otherwise.
func helper(mode string) {
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	answer := func(r helperReq) map[string]any {
		return map[string]any{"id": r.ID, "text": fmt.Sprintf(`{"operation_status":"failed","recovery_policy":"stop_or_escalate","seed":%d}`, r.Seed)}
	}
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "helper: no API key in $VENDOR_KEY")
		os.Exit(3)
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var batch []helperReq
	generates := 0
	for sc.Scan() {
		var r helperReq
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			fmt.Fprintln(os.Stderr, "helper: bad request:", err)
			os.Exit(2)
		}
		if r.Type == "hello" {
			if mode == "garbage-hello" {
				out.WriteString("Welcome to the model server!\n")
				out.Flush()
				continue
			}
			send(map[string]any{"id": r.ID, "meta": map[string]any{"name": "helper", "mode": mode}})
			if mode == "noread" { // stops reading its stdin
				time.Sleep(time.Hour)
			}
			continue
		}
		generates++
		switch mode {
		case "reverse": // answer in batches of 4, last first
			batch = append(batch, r)
			if len(batch) == 4 {
				slices.Reverse(batch)
				for _, b := range batch {
					send(answer(b))
				}
				batch = nil
			}
		case "crash-once": // the first call of each process crashes it unless the marker exists
			marker := os.Getenv("HELPER_MARKER")
			if _, err := os.Stat(marker); err != nil {
				os.WriteFile(marker, nil, 0o644)
				fmt.Fprintln(os.Stderr, "helper: segmentation fault (simulated)")
				os.Exit(139 - 128)
			}
			send(answer(r))
		case "garbage":
			out.WriteString("Traceback (most recent call last): not JSON\n")
			out.Flush()
		case "unknown-id":
			send(map[string]any{"id": r.ID + 1000, "text": "{}"})
		case "flood": // one endless line
			chunk := strings.Repeat("x", 1<<16)
			for {
				if _, err := out.WriteString(chunk); err != nil {
					os.Exit(0)
				}
			}
		case "flood-lines": // endless valid-looking lines for ids never asked
			for i := int64(1); ; i++ {
				b, _ := json.Marshal(map[string]any{"id": r.ID + i, "text": "{}"})
				if _, err := out.Write(append(b, '\n')); err != nil {
					os.Exit(0)
				}
			}
		case "hang":
			// never answers
		case "held": // writes $HELPER_MARKER.SEED.seen, answers once $HELPER_MARKER.SEED exists
			marker := fmt.Sprintf("%s.%d", os.Getenv("HELPER_MARKER"), r.Seed)
			os.WriteFile(marker+".seen", nil, 0o644)
			for _, err := os.Stat(marker); err != nil; _, err = os.Stat(marker) {
				time.Sleep(time.Millisecond)
			}
			send(answer(r))
		case "error":
			send(map[string]any{"id": r.ID, "error": "vendor API: HTTP 503 overloaded"})
		case "secret":
			key := os.Getenv("HELPER_KEY")
			send(map[string]any{"id": r.ID, "text": `{"operation_status":"failed","recovery_policy":"authenticate","note":"` + key + `"}`,
				"thinking": "the key is " + key, "meta": map[string]any{"k": key}})
		case "protocol":
			send(map[string]any{"id": r.ID, "protocol": "stress-exec/9", "text": "{}"})
		case "no-text":
			send(map[string]any{"id": r.ID, "thinking": "hmm"})
		case "string-id":
			send(map[string]any{"id": fmt.Sprint(r.ID), "text": "{}", "thinking": "t", "tool_calls": []any{map[string]any{"function": map[string]any{"name": "f", "arguments": map[string]any{"a": 1}}}}, "prompt_tokens": 3, "output_tokens": 4})
		case "stderr":
			fmt.Fprintf(os.Stderr, "helper: call %d seen\n", generates)
			send(answer(r))
		default:
			send(answer(r))
		}
	}
	os.Exit(0)
}
