// Command floor measures the floor under stress run's HTTP throughput: a
// bare net/http client, in its own process, sending byte-identical
// request bodies to the same stub server, in another process, that
// stress run talks to. scripts/bench runs it against stress run on the
// same matrix, interleaved.
//
//	floor stub [-addr ADDR] [-record FILE]
//	    serve an OpenAI-compatible chat completions endpoint that answers
//	    every request at once with one fixed answer (and GET /v1/models
//	    with the model list, so that no request is answered 404); print
//	    its URL on stdout; with -record, append each request body to FILE,
//	    one JSON string a line
//	floor client -url URL -bodies FILE [-parallel N]
//	    send each recorded body (POST URL/chat/completions) with N in
//	    flight, read each answer whole, and print the wall time in
//	    milliseconds
//	floor time -- COMMAND [ARGS...]
//	    run COMMAND (its output discarded, its errors shown) and print its
//	    wall time and CPU time (user and system, from the kernel's
//	    accounting: microseconds, where GNU time prints hundredths of a
//	    second) in milliseconds, "WALL CPU"
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: floor stub [-addr ADDR] [-record FILE] | floor client -url URL -bodies FILE [-parallel N] | floor time -- COMMAND [ARGS...]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "stub":
		err = stub(os.Args[2:])
	case "client":
		err = client(os.Args[2:])
	case "time":
		err = timeCommand(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want stub, client or time", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

// answer is the stub's completion: an answer the baselines' parser reads.
var answer = []byte(`{"id":"chatcmpl-floor","object":"chat.completion","created":0,"model":"floor","system_fingerprint":"fp_floor",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"{\"operation_status\":\"failed\",\"recovery_policy\":\"stop_or_escalate\"}"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)

// modelList is the stub's GET /v1/models.
var modelList = []byte(`{"object":"list","data":[{"id":"floor","object":"model","created":0,"owned_by":"floor"}]}`)

// stub serves the endpoint until killed.
func stub(args []string) error {
	fs := flag.NewFlagSet("stub", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen on `ADDR`")
	record := fs.String("record", "", "append each request body to `FILE`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var mu sync.Mutex
	var rec *bufio.Writer
	if *record != "" {
		f, err := os.OpenFile(*record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		rec = bufio.NewWriter(f)
		go func() { // flush now and then: the stub is killed, not stopped
			for range time.Tick(100 * time.Millisecond) {
				mu.Lock()
				rec.Flush()
				mu.Unlock()
			}
		}()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(modelList)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if rec != nil {
			line, _ := json.Marshal(string(body))
			mu.Lock()
			rec.Write(append(line, '\n'))
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s/v1\n", ln.Addr())
	return http.Serve(ln, mux)
}

// client replays the recorded bodies.
func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	url := fs.String("url", "", "the stub's base `URL` (…/v1)")
	bodies := fs.String("bodies", "", "the recorded bodies, one JSON string a line (`FILE`)")
	parallel := fs.Int("parallel", 1, "requests in flight, `N`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" || *bodies == "" || *parallel < 1 {
		return errors.New("client: -url, -bodies and -parallel ≥ 1 are required")
	}
	f, err := os.Open(*bodies)
	if err != nil {
		return err
	}
	defer f.Close()
	var reqs [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	for sc.Scan() {
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return fmt.Errorf("%s:%d: %w", *bodies, len(reqs)+1, err)
		}
		reqs = append(reqs, []byte(s))
	}
	if err := sc.Err(); err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *parallel}}
	target := *url + "/chat/completions"
	var next atomic.Int64
	var mu sync.Mutex
	var failed error
	start := time.Now()
	var wg sync.WaitGroup
	for range *parallel {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					return
				}
				resp, err := hc.Post(target, "application/json", bytes.NewReader(reqs[i]))
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("HTTP %d", resp.StatusCode)
					}
				}
				if err != nil {
					mu.Lock()
					failed = cmp.Or(failed, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if failed != nil {
		return failed
	}
	fmt.Printf("%.1f\n", float64(time.Since(start).Microseconds())/1000)
	return nil
}

// timeCommand runs a command and prints its wall and CPU milliseconds.
func timeCommand(args []string) error {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return errors.New("time: give a command after --")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("time: %s: %w", args[0], err)
	}
	wall := time.Since(start)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	fmt.Printf("%.1f %.1f\n", float64(wall.Microseconds())/1000, float64(cpu.Microseconds())/1000)
	return nil
}
