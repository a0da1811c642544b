package inspect

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/mcpstress/stress/analysis"
)

func TestProfExport(t *testing.T) {
	dir := os.Getenv("PROF_BUNDLE")
	if dir == "" {
		t.Skip()
	}
	info, err := analysis.ReadBundleInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Export(context.Background(), dir, t.TempDir()+"/out", Options{Info: info}, io.Discard); err != nil {
		t.Fatal(err)
	}
}
