package runner

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpstress/stress/results"
)

// newRunID makes a run id: the UTC start time to the millisecond, a random
// suffix and the study name, e.g. 20261201T010203.456Z-3fa9c2-baselines.
// Note: the suffix makes ids unique by construction, however many runs
// start in the same millisecond.
func newRunID(t time.Time, name string) string {
	var b [3]byte
	rand.Read(b[:])
	return t.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:]) + "-" + name
}

// createBundle makes and locks a new bundle directory for command what.
// With out set, out is created if missing and must be empty; otherwise a
// directory named by a fresh run id is created atomically under root
// (default "results"). The run id is id, or a new one when id is "".
func createBundle(out, root, id string, started time.Time, name, what string) (dir, runID string, lock *results.Lock, err error) {
	runID = id
	if runID == "" {
		runID = newRunID(started, name)
	}
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return out, runID, nil, err
		}
		lock, err := results.LockBundle(out, what)
		if err != nil {
			return out, runID, nil, err
		}
		empty, err := results.Empty(out)
		if err == nil && !empty {
			err = fmt.Errorf("output directory %s is not empty; choose another with -out", out)
		}
		if err != nil {
			lock.Unlock()
			return out, runID, nil, err
		}
		return out, runID, lock, nil
	}
	if root == "" {
		root = "results"
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", runID, nil, err
	}
	for try := 0; ; try++ {
		dir = filepath.Join(root, runID)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || id != "" || try == 9 {
			return "", runID, nil, err
		}
		runID = newRunID(started, name)
	}
	lock, err = results.LockBundle(dir, what)
	return dir, runID, lock, err
}
