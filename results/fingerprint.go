package results

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/mcpstress/stress/simulator"
)

// Fingerprint is an order-independent digest of a set of decision rows:
// the count and the sum, mod 2^64 per word, of each row's sha256 (of a
// fixed encoding of its values). Two sets with equal fingerprints hold the
// same rows (up to a hash collision), so calls.jsonl and decisions.parquet
// can be checked against each other in one streaming pass each, and a
// fingerprint can be recorded with the file.
type Fingerprint struct {
	N   int       // rows added
	Sum [4]uint64 // word-wise sum of the rows' sha256
}

// Add folds one row into the fingerprint.
func (f *Fingerprint) Add(r *Row) {
	var buf [256]byte
	h := sha256.Sum256(encodeRow(buf[:0], r))
	for i := range f.Sum {
		f.Sum[i] += binary.LittleEndian.Uint64(h[8*i:])
	}
	f.N++
}

// Hex is the sum as 64 hex digits.
func (f *Fingerprint) Hex() string {
	var b [32]byte
	for i, w := range f.Sum {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return hex.EncodeToString(b[:])
}

// ParquetCheck is what the run recorded of the decisions.parquet it wrote
// (in summary.json): the file's sha256 and the fingerprint of its rows.
// While the file is unchanged, its rows need not be read back to be
// compared with calls.jsonl.
type ParquetCheck struct {
	SHA256 string `json:"sha256"`
	Rows   int    `json:"rows"`
	// RowsSum is the rows' Fingerprint sum, in hex.
	RowsSum string `json:"rows_sha256_sum"`
}

// Fingerprint returns the recorded fingerprint of the rows.
func (c *ParquetCheck) Fingerprint() (Fingerprint, error) {
	f := Fingerprint{N: c.Rows}
	b, err := hex.DecodeString(c.RowsSum)
	if err != nil || len(b) != 32 {
		return f, fmt.Errorf("rows_sha256_sum %q: want 64 hex digits", c.RowsSum)
	}
	for i := range f.Sum {
		f.Sum[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return f, nil
}

// encodeRow appends every value of r to b, unambiguously (strings
// length-prefixed, null lab values marked). Note: a hand-made encoding,
// not JSON, because it runs for every decision of a bundle;
// TestFingerprintFields keeps it in step with Row.
func encodeRow(b []byte, r *Row) []byte {
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(v int64) { b = binary.AppendVarint(b, v) }
	flag := func(v bool) { b = append(b, byte(b2i(v))) }
	str(r.Model)
	str(r.Prompt)
	str(r.Condition)
	str(r.Scenario)
	num(r.Replicate)
	str(r.Server)
	num(r.Seed)
	str(r.Status)
	str(r.FinalLabel)
	str(r.FinalStatus)
	num(r.Turns)
	num(r.Replays)
	for c, col := range simulator.Columns {
		v, ok := r.Outcome.Get(simulator.Col(c))
		switch {
		case col.Kind == simulator.Flag:
			flag(v != 0)
		case !ok:
			flag(false)
		case col.Kind == simulator.LabFlag:
			flag(true)
			flag(v != 0)
		default:
			flag(true)
			num(v)
		}
	}
	str(r.Error)
	return b
}
