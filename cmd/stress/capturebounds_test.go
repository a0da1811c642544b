package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noisyServer is a stdio MCP server in sh that sends 20 notifications
// before each of its answers (initialize is id 1 when the protocol is
// pinned), advertises no tools, and crashes with status 3 after the first
// call.
const noisyServer = `note='{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"tick"}}'
burst() { i=0; while [ $i -lt 20 ]; do echo "$note"; i=$((i+1)); done; }
read -r line
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"noisy","version":"1"}}}'
read -r line
read -r line
burst
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}'
read -r line
burst
echo '{"jsonrpc":"2.0","id":3,"result":{"isError":true,"content":[{"type":"text","text":"Unknown tool."}]}}'
echo 'noisy: giving up' >&2
exit 3
`

// TestCaptureBounds checks the bound flags: their range checks, the frame
// counts under the table, and the notes in the private log.
func TestCaptureBounds(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-max-frame-bytes", "100"}, "flag -max-frame-bytes: want 1024 to 67108864, got 100"},
		{[]string{"-max-server-bytes", "0"}, "flag -max-server-bytes: want 1024 to"},
		{[]string{"-max-notifications", "0"}, "flag -max-notifications: want 1 to"},
		{[]string{"-max-text-bytes", "-1"}, "flag -max-text-bytes: want 1024 to"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			_, _, err := runCmd(t, append([]string{"capture", "-out", out, "-stdio", "a=true"}, tc.args...)...)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("capture %q: %v, want a usage error containing %q", tc.args, err, tc.want)
			}
		})
	}

	script := filepath.Join(t.TempDir(), "noisy.sh")
	if err := os.WriteFile(script, []byte(noisyServer), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, log, err := runCmd(t, "capture", "-out", out, "-interval", "1ms", "-protocol", "2025-06-18", "-max-notifications", "5",
		"-stdio", "noisy=sh "+script)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !strings.Contains(stdout, ": frames: 17 recorded, 0 truncated, 30 dropped past -max-notifications, 0 past -max-server-bytes (markers in the frames file)") {
		t.Errorf("stdout:\n%s", stdout)
	}
	data, err := os.ReadFile(filepath.Join(out, "private", "capture.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "dropped 30 messages the server sent on its own past -max-notifications 5 per request"; !strings.Contains(string(data), want) {
		t.Errorf("capture.json lacks %q:\n%s", want, data)
	}
	// The server exits right after its last answer, racing capture
	// closing its stdin: either order is noted, with its status.
	if !strings.Contains(string(data), "the server exited with status 3 on its own, before capture closed its stdin") &&
		!strings.Contains(string(data), "the server exited with status 3 after capture closed its stdin") {
		t.Errorf("capture.json does not note the server's status 3:\n%s", data)
	}
}
