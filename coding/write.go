package coding

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcpstress/stress/analysis/stats"
)

// num is a float64 that marshals NaN as null, and otherwise at full
// precision as encoding/json prints a float64.
type num float64

// MarshalJSON writes null for NaN or ±Inf, else the float64.
func (x num) MarshalJSON() ([]byte, error) {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// MarshalJSON writes a field's agreement: the table, the coefficients
// (null where undefined) and the warnings.
func (f fieldStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Field      string          `json:"field"`
		Kind       string          `json:"kind"`
		Categories []string        `json:"categories"`
		Table      [][]int         `json:"table"`
		N          int             `json:"n"`
		Observed   num             `json:"observed"`
		Kappa      num             `json:"kappa"`
		KappaSE    num             `json:"kappa_se"`
		KappaCI    [2]num          `json:"kappa_ci"`
		AC1        num             `json:"ac1"`
		AC1SE      num             `json:"ac1_se"`
		AC1CI      [2]num          `json:"ac1_ci"`
		PABAK      num             `json:"pabak"`
		Warnings   []stats.Warning `json:"warnings"`
	}{f.Field, f.Kind, f.Categories, f.Table, f.N, num(f.Observed), num(f.Kappa), num(f.KappaSE),
		[2]num{num(f.KappaLo), num(f.KappaHi)}, num(f.AC1), num(f.AC1SE), [2]num{num(f.AC1Lo), num(f.AC1Hi)},
		num(f.PABAK), f.Warnings})
}

// WriteJSON prints the result as one JSON object, numbers at full
// precision, undefined ones null.
func (r *result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// coef formats a coefficient with three decimals, "—" when undefined.
func coef(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	s := fmt.Sprintf("%.3f", x)
	if s == "-0.000" {
		s = "0.000"
	}
	return s
}

// withCI formats a coefficient and its interval, and a tag for a
// zero-width interval.
func withCI(x, lo, hi float64, undefinedTag string) string {
	if math.IsNaN(x) {
		return "undefined " + undefinedTag
	}
	s := fmt.Sprintf("%s [%s, %s]", coef(x), coef(lo), coef(hi))
	if lo == hi {
		s += " d"
	}
	return s
}

// WriteText prints the agreement table: one line per binary field with
// its 2×2 counts, one per nominal field, the k×k tables of the cause and
// the preferred policy, what was not compared, and every disagreement.
func (r *result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Agreement of two codings of %d records\n  A: %s\n  B: %s\n", r.Records, r.A.Label(), r.B.Label())
	if len(r.OnlyA) > 0 || len(r.OnlyB) > 0 {
		fmt.Fprintf(&b, "Not compared (in one corpus only): only in A: %s; only in B: %s\n", list(r.OnlyA), list(r.OnlyB))
	}
	if len(r.NotCompared) > 0 {
		fmt.Fprintf(&b, "Not compared: %s\n", strings.Join(r.NotCompared, "; "))
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "field\tn\t1/1\t1/0\t0/1\t0/0\tagree\tkappa [%.0f%% CI]\tAC1 [%.0f%% CI]\tPABAK\n", 100*r.Conf, 100*r.Conf)
	var undefined, degenerate, nominal bool
	for _, f := range r.Fields {
		undefined = undefined || math.IsNaN(f.Kappa)
		degenerate = degenerate || f.KappaLo == f.KappaHi || f.AC1Lo == f.AC1Hi
		nominal = nominal || f.Kind == kindNominal
		if f.Kind != kindBinary {
			continue
		}
		t := f.Table // categories "0", "1"
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s%%\t%s\t%s\t%s\n", f.Field, f.N, t[1][1], t[1][0], t[0][1], t[0][0],
			pct(f.Observed), withCI(f.Kappa, f.KappaLo, f.KappaHi, "u"), withCI(f.AC1, f.AC1Lo, f.AC1Hi, "u"), coef(f.PABAK))
	}
	tw.Flush()
	if nominal {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "field\tn\tq\tagree\tkappa [%.0f%% CI]\tAC1 [%.0f%% CI]\tPABAK\n", 100*r.Conf, 100*r.Conf)
		for _, f := range r.Fields {
			if f.Kind != kindNominal {
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s%%\t%s\t%s\t%s\n", f.Field, f.N, len(f.Categories), pct(f.Observed),
				withCI(f.Kappa, f.KappaLo, f.KappaHi, "u"), withCI(f.AC1, f.AC1Lo, f.AC1Hi, "u"), coef(f.PABAK))
		}
		tw.Flush()
	}
	b.WriteString("\n1/0: records A coded 1 and B 0 (likewise 1/1, 0/1, 0/0). q: categories of the scale (the vocabulary's causes\n" +
		"and policies; for the target, the values either coder wrote). kappa: Cohen's, with the Fleiss-Cohen-Everitt\n" +
		"asymptotic interval; AC1: Gwet's, with Gwet's (2008) interval; PABAK: (q*agree - 1)/(q - 1).\n")
	if undefined {
		b.WriteString("u: kappa undefined: both coders put every record in one category (expected agreement 1), so\n" +
			"   chance-corrected kappa is 0/0; AC1 and PABAK stay defined.\n")
	}
	if degenerate {
		b.WriteString("d: the asymptotic variance is 0 (every record in one cell, perfect agreement, or, for kappa,\n" +
			"   one coder put every record in one category: kappa is then 0 whatever the other did): the\n" +
			"   interval has no width and says nothing about sampling error.\n")
	}
	for _, f := range r.Fields {
		if f.Kind == kindNominal && f.Field != "target" {
			b.WriteString("\n")
			writeSquare(&b, f)
		}
	}
	fmt.Fprintf(&b, "\nDisagreements: %d\n", len(r.Disagreements))
	if len(r.Disagreements) > 0 {
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "record\tfield\tA\tA evidence\tB\tB evidence")
		for _, d := range r.Disagreements {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Record, d.Field, d.A, dash(d.AEvidence), d.B, dash(d.BEvidence))
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSquare prints a nominal field's table, rows A and columns B,
// restricted to the categories either coder used.
func writeSquare(b *strings.Builder, f fieldStats) {
	var used []int
	for i := range f.Categories {
		n := 0
		for j := range f.Categories {
			n += f.Table[i][j] + f.Table[j][i]
		}
		if n > 0 {
			used = append(used, i)
		}
	}
	var unused []string
	for i, c := range f.Categories {
		if !slices.Contains(used, i) {
			unused = append(unused, c)
		}
	}
	fmt.Fprintf(b, "%s (rows A, columns B", f.Field)
	if len(unused) > 0 {
		fmt.Fprintf(b, "; unused by both: %s", strings.Join(unused, ", "))
	}
	b.WriteString("):\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for _, j := range used {
		fmt.Fprintf(tw, "%s\t", f.Categories[j])
	}
	fmt.Fprintln(tw)
	for _, i := range used {
		fmt.Fprintf(tw, "%s\t", f.Categories[i])
		for _, j := range used {
			fmt.Fprintf(tw, "%d\t", f.Table[i][j])
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f", 100*x)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
