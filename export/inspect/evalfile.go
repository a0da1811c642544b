package inspect

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/klauspost/compress/flate"
)

// This file writes a log in Inspect's .eval form: a zip archive of
// _journal/start.json (the eval and plan, first), one
// samples/ID_epoch_N.json per sample, summaries.json (each sample's
// summary, which the viewer lists) and header.json (the log without its
// samples, last), each member compressed with deflate. Each member's
// local header carries its CRC and sizes (zip.Writer.CreateRaw, no data
// descriptor): Inspect's viewer reads a member's size from there.

// compressed is a member's deflated bytes and what its zip header needs.
type compressed struct {
	data []byte
	crc  uint32
	size int // uncompressed
}

// deflater compresses members; one per worker, at flate.BestSpeed. Note:
// on the 5.3 KB sample members of a synthetic study (klauspost/compress
// 1.20.4), BestSpeed takes 15.6 µs a member for a ratio of 0.314; levels
// 2 and 3 16.7 and 17.9 µs for 0.309 and 0.303; HuffmanOnly 10.6 µs for
// 0.626 (twice the archive for a third less CPU); zstd, which Python's
// zipfile reads only from 3.14, 17.3 µs.
type deflater struct {
	buf bytes.Buffer
	w   *flate.Writer
}

// compress deflates b into c (its data reused).
func (d *deflater) compress(b []byte, c *compressed) error {
	d.buf.Reset()
	if d.w == nil {
		d.w, _ = flate.NewWriter(&d.buf, flate.BestSpeed)
	} else {
		d.w.Reset(&d.buf)
	}
	if _, err := d.w.Write(b); err != nil {
		return err
	}
	if err := d.w.Close(); err != nil {
		return err
	}
	c.data = append(c.data[:0], d.buf.Bytes()...)
	c.crc, c.size = crc32.ChecksumIEEE(b), len(b)
	return nil
}

// addMember adds a member of the given name holding c.
func addMember(zw *zip.Writer, name string, c *compressed) error {
	w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: c.crc,
		CompressedSize64: uint64(len(c.data)), UncompressedSize64: uint64(c.size)})
	if err == nil {
		_, err = w.Write(c.data)
	}
	return err
}

// addJSON adds a member holding v as JSON.
func addJSON(zw *zip.Writer, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var d deflater
	var c compressed
	if err := d.compress(b, &c); err != nil {
		return err
	}
	return addMember(zw, name, &c)
}

// sampleMember is the name of a sample's member.
func sampleMember(id string, epoch int64) string {
	return "samples/" + id + "_epoch_" + strconv.FormatInt(epoch, 10) + ".json"
}

// deflateCounter deflates what is written to it, keeping the CRC and
// the size of what was written (a member's header needs them).
type deflateCounter struct {
	fw   *flate.Writer
	crc  uint32
	size int64
}

// Write deflates b.
func (d *deflateCounter) Write(b []byte) (int, error) {
	d.crc = crc32.Update(d.crc, crc32.IEEETable, b)
	d.size += int64(len(b))
	return d.fw.Write(b)
}

// createEval creates the log's archive and writes its start (h without
// results).
func (lf *logFile) createEval(dir string, h *header) error {
	f, err := os.Create(filepath.Join(dir, lf.name))
	if err != nil {
		return err
	}
	lf.file, lf.w = f, bufio.NewWriterSize(f, 1<<16)
	lf.zw = zip.NewWriter(lf.w)
	if lf.sums, err = os.Create(filepath.Join(dir, lf.name+".summaries.z")); err != nil {
		return err
	}
	lf.sw = bufio.NewWriterSize(lf.sums, 1<<16)
	fw, _ := flate.NewWriter(lf.sw, flate.BestSpeed)
	lf.sumz = &deflateCounter{fw: fw}
	lf.sumz.Write([]byte{'['})
	return addJSON(lf.zw, "_journal/start.json", struct {
		Version int      `json:"version"`
		Eval    evalSpec `json:"eval"`
		Plan    plan     `json:"plan"`
	}{LogVersion, h.Eval, h.Plan})
}

// addEval adds j's sample to the archive and its summary to the
// summaries.
func (lf *logFile) addEval(j *job) error {
	if lf.n > 1 {
		lf.sumz.Write([]byte{','})
	}
	if _, err := lf.sumz.Write(j.summary); err != nil {
		return err
	}
	return addMember(lf.zw, sampleMember(j.row.Scenario, j.row.Replicate), &j.comp)
}

// writeEval ends the archive: summaries.json, then header.json.
func (lf *logFile) writeEval(h *header) error {
	path := lf.file.Name()
	_, err := lf.sumz.Write([]byte{']'})
	if err == nil {
		err = lf.sumz.fw.Close()
	}
	if err == nil {
		err = lf.sw.Flush()
	}
	if err == nil {
		err = lf.addSummaries()
	}
	if err == nil {
		err = addJSON(lf.zw, "header.json", h)
	}
	if err == nil {
		err = lf.zw.Close()
	}
	if err == nil {
		err = lf.w.Flush()
	}
	err = errors.Join(err, lf.file.Close(), lf.sums.Close(), os.Remove(lf.sums.Name()))
	lf.file, lf.sums = nil, nil
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// addSummaries adds summaries.json from the summaries deflated into
// the file beside the archive (its CRC and sizes go before its bytes).
// Note: they were written whole to that file, then deflated into a
// second one: 235 MB written and read again for 100,020 samples.
func (lf *logFile) addSummaries() error {
	zsize, err := lf.sums.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = lf.sums.Seek(0, io.SeekStart)
	}
	if err != nil {
		return err
	}
	w, err := lf.zw.CreateRaw(&zip.FileHeader{Name: "summaries.json", Method: zip.Deflate, CRC32: lf.sumz.crc,
		CompressedSize64: uint64(zsize), UncompressedSize64: uint64(lf.sumz.size)})
	if err == nil {
		_, err = io.Copy(w, lf.sums)
	}
	return err
}
