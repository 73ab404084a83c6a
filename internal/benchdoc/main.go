// Command benchdoc writes BENCHMARKS.md from one run of scripts/bench.sh:
// it fills a text/template with the medians, ranges and ratios of the
// run's `go test -bench` outputs, its conditions and its profiles, so
// that every figure of the document comes from that run and none is
// copied by hand.
//
//	go run ./internal/benchdoc -run OUTDIR -template internal/benchdoc/benchmarks.md.tmpl -current BENCHMARKS.md >OUTDIR/BENCHMARKS.md
//
// OUTDIR is what bench.sh wrote: NAME.txt files of benchmark output (the
// template names a figure by NAME and benchmark, "compare" and
// "BenchmarkSnapshot/threads=256/target=core/impl=ompd-go"), conditions.txt
// ("key: value" lines) and profile-*.txt (pprof -top outputs). A section
// that another script fills is kept from the current document (the
// template's section function).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

func main() {
	run := flag.String("run", "", "the directory scripts/bench.sh wrote")
	tmpl := flag.String("template", "", "the template of the document")
	current := flag.String("current", "", "the document as it is, whose sections the template keeps (section)")
	flag.Parse()
	if *run == "" || *tmpl == "" {
		fmt.Fprintln(os.Stderr, "usage: benchdoc -run OUTDIR -template FILE >BENCHMARKS.md")
		os.Exit(2)
	}
	if err := write(os.Stdout, *run, *tmpl, *current); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}

// write fills the template at tmpl with the run in dir and writes it to
// w; current is the document as it is ("" for none).
func write(w io.Writer, dir, tmpl, current string) error {
	r, err := load(dir)
	if err != nil {
		return err
	}
	r.current = current
	text, err := os.ReadFile(tmpl)
	if err != nil {
		return err
	}
	t, err := template.New(filepath.Base(tmpl)).Option("missingkey=error").Funcs(r.funcs()).Parse(string(text))
	if err != nil {
		return err
	}
	return t.Execute(w, nil)
}

// results are one run's figures: for each output file (by name without
// .txt) and benchmark, each metric's values over the runs.
type results struct {
	dir        string
	current    string // the document as it is, for section
	values     map[string]map[string]map[string][]float64
	conditions map[string]string
}

// gomaxprocs is the "-N" go test appends to a benchmark's name.
var gomaxprocs = regexp.MustCompile(`-[0-9]+$`)

func load(dir string) (*results, error) {
	r := &results{dir: dir, values: map[string]map[string]map[string][]float64{}, conditions: map[string]string{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		if name == "conditions" {
			if err := r.loadConditions(f); err != nil {
				return nil, err
			}
			continue
		}
		if err := r.loadBench(name, f); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *results) loadConditions(f string) error {
	b, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			r.conditions[k] = v
		}
	}
	return nil
}

// loadBench reads the benchmark lines of one go test output:
// "BenchmarkX/a=b-2  5  123 ns/op  4.5 reads/op ...".
func (r *results) loadBench(name, f string) error {
	fh, err := os.Open(f)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 || !strings.HasPrefix(fs[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fs[1]); err != nil {
			continue
		}
		bench := gomaxprocs.ReplaceAllString(fs[0], "")
		for i := 2; i+1 < len(fs); i += 2 {
			v, err := strconv.ParseFloat(fs[i], 64)
			if err != nil {
				return fmt.Errorf("%s: %q: %v", f, sc.Text(), err)
			}
			if r.values[name] == nil {
				r.values[name] = map[string]map[string][]float64{}
			}
			if r.values[name][bench] == nil {
				r.values[name][bench] = map[string][]float64{}
			}
			r.values[name][bench][fs[i+1]] = append(r.values[name][bench][fs[i+1]], v)
		}
	}
	return sc.Err()
}

// vals returns the values of a metric, sorted, or an error naming what is
// missing.
func (r *results) vals(file, bench, unit string) ([]float64, error) {
	vs := r.values[file][bench][unit]
	if len(vs) == 0 {
		return nil, fmt.Errorf("no %s of %s in %s.txt", unit, bench, filepath.Join(r.dir, file))
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	return vs, nil
}

func (r *results) median(file, bench, unit string) (float64, error) {
	vs, err := r.vals(file, bench, unit)
	if err != nil {
		return 0, err
	}
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2], nil
	}
	return (vs[n/2-1] + vs[n/2]) / 2, nil
}

func (r *results) funcs() template.FuncMap {
	return template.FuncMap{
		"cond": func(key string) (string, error) {
			v, ok := r.conditions[key]
			if !ok {
				return "", fmt.Errorf("no %q in conditions.txt", key)
			}
			return v, nil
		},
		"get":     r.get,
		"top":     r.top,
		"section": r.section,
		"keep":    r.keep,
		"div":     div,
		"mul":     func(a, b float64) float64 { return a * b },
		"add":     func(a, b float64) float64 { return a + b },
		"sub":     func(a, b float64) float64 { return a - b },
		"list":    func(xs ...string) []string { return xs },
		"num":     func(s string) (float64, error) { return strconv.ParseFloat(strings.TrimSpace(s), 64) },
		"ms":      func(ns float64) string { return sig(ns/1e6) + " ms" },
		"us":      func(ns float64) string { return sig(ns/1e3) + " µs" },
		"s":       func(ns float64) string { return sig(ns/1e9) + " s" },
		"mb":      func(b float64) string { return sig(b/1e6) + " MB" },
		"kb":      func(b float64) string { return sig(b/1e3) + " KB" },
		"x":       func(f float64) string { return sig(f) + "x" },
		"f":       sig,
		"count":   count,
		"met": func(ok bool) string {
			if ok {
				return "yes"
			}
			return "**no**"
		},
	}
}

// bench is one benchmark of one output file, for the template:
// {{$b := get "compare" "BenchmarkSnapshot/threads=256/target=core/impl=ompd-go"}}
// then {{$b.MsR "cpu-ns/op"}}, {{$b.M "reads/op"}}.
type bench struct {
	r          *results
	file, name string
}

// get returns the benchmark name of output file, an error if the run has
// no figure of it.
func (r *results) get(file, name string) (*bench, error) {
	if r.values[file][name] == nil {
		return nil, fmt.Errorf("no %s in %s.txt", name, filepath.Join(r.dir, file))
	}
	return &bench{r, file, name}, nil
}

// M is the median of the metric unit over the runs.
func (b *bench) M(unit string) (float64, error) { return b.r.median(b.file, b.name, unit) }

// Lo and Hi are the metric's lowest and highest value over the runs.
func (b *bench) Lo(unit string) (float64, error) {
	vs, err := b.r.vals(b.file, b.name, unit)
	if err != nil {
		return 0, err
	}
	return vs[0], nil
}

// Hi is the metric's highest value over the runs.
func (b *bench) Hi(unit string) (float64, error) {
	vs, err := b.r.vals(b.file, b.name, unit)
	if err != nil {
		return 0, err
	}
	return vs[len(vs)-1], nil
}

// MsR is the median of a metric in nanoseconds, in milliseconds, with its
// range: "4.07 ms (3.40-4.47)".
func (b *bench) MsR(unit string) (string, error) { return b.withRange(unit, 1e6, " ms") }

// UsR is MsR in microseconds.
func (b *bench) UsR(unit string) (string, error) { return b.withRange(unit, 1e3, " µs") }

// SR is MsR in seconds.
func (b *bench) SR(unit string) (string, error) { return b.withRange(unit, 1e9, " s") }

func (b *bench) withRange(unit string, scale float64, suffix string) (string, error) {
	vs, err := b.r.vals(b.file, b.name, unit)
	if err != nil {
		return "", err
	}
	m, _ := b.M(unit)
	return fmt.Sprintf("%s%s (%s-%s)", sig(m/scale), suffix, sig(vs[0]/scale), sig(vs[len(vs)-1]/scale)), nil
}

// div is a / b, an error for b = 0.
func div(a, b float64) (float64, error) {
	if b == 0 {
		return 0, errors.New("division by zero")
	}
	return a / b, nil
}

// sig formats f with three significant digits (at least the units).
func sig(f float64) string {
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	digits := 3 - int(math.Floor(math.Log10(math.Abs(f)))) - 1
	if digits < 0 {
		digits = 0
	}
	return strconv.FormatFloat(f, 'f', digits, 64)
}

// count formats a whole number with thousands separated by commas.
func count(f float64) string {
	s := strconv.FormatInt(int64(math.Round(f)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// top returns the first n entries of the pprof -top output
// profile-NAME.txt, with its header lines.
func (r *results) top(name string, n int) (string, error) {
	b, err := os.ReadFile(filepath.Join(r.dir, "profile-"+name+".txt"))
	if err != nil {
		return "", err
	}
	var out []string
	entries := 0
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "flat") {
			out = append(out, line)
			continue
		}
		if len(out) == 0 {
			// Before the column header: keep the totals, not the
			// file names and dates.
			if strings.HasPrefix(line, "Showing") || strings.HasPrefix(line, "Dropped") {
				out = append(out, line)
			}
			continue
		}
		if entries == n {
			break
		}
		out = append(out, shorten(line))
		entries++
	}
	return strings.Join(out, "\n"), nil
}

// shorten drops from a profile's function name the module path and the
// type arguments of generic code ("slab[go.shape.struct { ... }]", which
// spell out whole structures): "kmp.(*slab[…]).new".
func shorten(line string) string {
	line = strings.ReplaceAll(line, module+"/", "")
	line = strings.ReplaceAll(line, module+".", "ompd.")
	var b strings.Builder
	for {
		i := strings.Index(line, "[go.shape.")
		if i < 0 {
			b.WriteString(line)
			return b.String()
		}
		b.WriteString(line[:i])
		depth, j := 0, i
		for ; j < len(line); j++ {
			if line[j] == '[' {
				depth++
			} else if line[j] == ']' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		b.WriteString("[…]")
		if j >= len(line) {
			return b.String()
		}
		line = line[j+1:]
	}
}

// keep is section for a section the current document may not have yet:
// "" then, instead of an error.
func (r *results) keep(prefix string) (string, error) {
	s, err := r.section(prefix)
	if errors.Is(err, errNoSection) {
		return "", nil
	}
	return s, err
}

// errNoSection is section's error for a heading the document lacks.
var errNoSection = errors.New("no such heading")

// module is the module path profiles name the project's functions with.
const module = "github.com/ompd-go/ompd"

// section returns the section of the document current whose heading
// ("## ...") starts with prefix, through the line before the next
// heading of its level: sections other scripts fill, kept as they are.
func (r *results) section(prefix string) (string, error) {
	if r.current == "" {
		return "", fmt.Errorf("section %q: no current document (-current)", prefix)
	}
	b, err := os.ReadFile(r.current)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(b), "\n")
	start := -1
	for i, line := range lines {
		if start < 0 && strings.HasPrefix(line, "## "+prefix) {
			start = i
			continue
		}
		if start >= 0 && strings.HasPrefix(line, "## ") {
			return strings.TrimRight(strings.Join(lines[start:i], "\n"), "\n"), nil
		}
	}
	if start < 0 {
		return "", fmt.Errorf("section %q: %w in %s", prefix, errNoSection, r.current)
	}
	return strings.TrimRight(strings.Join(lines[start:], "\n"), "\n"), nil
}
