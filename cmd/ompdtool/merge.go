package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/internal/summary"
)

func mergeMode() mode {
	return mode{
		synopsis: "merge [flags] [-exe EXE] [-dot] [-depth N] FILE|DIR...",
		about: "Merge what collect wrote (a JSON line per rank, or lines of merged classes\n" +
			"from collect -merged or merge -json) and core files of EXE (one per rank, the\n" +
			"rank from the environment in the core, else the file name, as in core.rank12,\n" +
			"else its position) into classes:\n" +
			"threads with the same state, region nest and stack. Classes are printed with\n" +
			"their ranks and thread counts, outliers (fewest ranks) first; -json prints\n" +
			"merged classes that merge can read again, -dot a Graphviz prefix tree.\n" +
			"A directory stands for the files in it.",
		flags: flagsCommon | flagsMerge,
		run:   runMerge,
	}
}

// merger gathers summaries and errors of ranks and merges them. What it
// reads may come from another machine, corrupt or forged: a line that
// cannot be used is left out and said (bad), the others are merged.
type merger struct {
	depth   int // compare the stacks' depth outermost frames, if > 0
	pending []*summary.Summary
	merged  *summary.Summary
	errs    []rankError
	seen    summary.Ranges // every rank added
	threads int            // every thread added
	bad     []string       // the lines left out, the first maxBad of them
	nbad    int
}

// Bounds of what the merger reads.
const (
	// maxLine bounds a line of JSON (a record of thousands of threads
	// with their stacks fits many times over).
	maxLine = 64 << 20
	// maxPiece bounds a line of srun's labelled output (pieces are
	// under 1 KiB).
	maxPiece = 64 << 10
	// maxBad is how many unusable lines are kept to be said.
	maxBad = 20
)

// add adds the summary of one rank or of merged ranks. A summary that
// is impossible (summary.Check), that holds a rank already added (twice
// from one collector, from two, or forged), or whose threads would make
// the total overflow, is refused.
func (m *merger) add(s *summary.Summary, errs ...rankError) error {
	if err := s.Check(); err != nil {
		return err
	}
	if dup := s.Ranks.Intersect(m.seen); len(dup) > 0 {
		return fmt.Errorf("ranks %s reported again", dup)
	}
	for _, e := range errs {
		if e.Rank < 0 || e.Rank > summary.MaxID || !inRanges(s.Ranks, e.Rank) {
			return fmt.Errorf("an error of rank %d, which the summary does not have", e.Rank)
		}
	}
	if m.threads+s.Threads > maxTotalThreads {
		return fmt.Errorf("more than %d threads in all", maxTotalThreads)
	}
	m.seen = m.seen.Union(s.Ranks)
	m.threads += s.Threads
	if m.depth > 0 {
		// Groups left with equal keys are joined by the merge.
		for i := range s.Groups {
			if st := s.Groups[i].Stack; len(st) > m.depth {
				s.Groups[i].Stack = st[len(st)-m.depth:]
			}
		}
	}
	m.pending = append(m.pending, s)
	m.errs = append(m.errs, errs...)
	if len(m.pending) >= 1024 {
		m.flush()
	}
	return nil
}

// maxTotalThreads bounds the threads of a merge (2^50: a million ranks of
// a billion threads each).
const maxTotalThreads = 1 << 50

// refuse notes a line left out.
func (m *merger) refuse(where string, err error) {
	if m.nbad++; len(m.bad) < maxBad {
		m.bad = append(m.bad, fmt.Sprintf("%s: %v", where, err))
	}
}

// badErr is the error that says which lines were left out, nil if none.
func (m *merger) badErr() error {
	if m.nbad == 0 {
		return nil
	}
	more := ""
	if m.nbad > len(m.bad) {
		more = fmt.Sprintf("; and %d more", m.nbad-len(m.bad))
	}
	return fmt.Errorf("%w: %d (%s%s)", errLinesLeftOut, m.nbad, strings.Join(m.bad, "; "), more)
}

// errLinesLeftOut reports input lines that could not be merged.
var errLinesLeftOut = errors.New("lines left out")

func (m *merger) flush() {
	if len(m.pending) > 0 {
		m.merged = summary.Merge(append(m.pending, m.merged)...)
		m.pending = m.pending[:0]
	}
}

// result is everything merged, errors by rank.
func (m *merger) result() jobJSON {
	m.flush()
	if m.merged == nil {
		m.merged = summary.Merge()
	}
	sort.SliceStable(m.errs, func(i, j int) bool { return m.errs[i].Rank < m.errs[j].Rank })
	return jobJSON{Summary: m.merged, Errors: m.errs}
}

// addLines reads JSON lines of records or merged classes; the lines that
// cannot be used are left out (see badErr). An error is a failure to
// read.
func (m *merger) addLines(r io.Reader, name string) error {
	return eachLine(r, maxLine, func(n int, line []byte, err error) {
		if err == nil {
			if line = bytes.TrimSpace(line); len(line) == 0 {
				return
			}
			err = m.addLine(line)
		}
		if err != nil {
			m.refuse(fmt.Sprintf("%s:%d", name, n), err)
		}
	})
}

// addChunks reads what collect -chunk writes, through srun --label; what
// cannot be used is left out (see badErr).
func (m *merger) addChunks(r io.Reader, name string) error {
	c := chunkReader{max: maxLine}
	err := eachLine(r, maxPiece, func(n int, l []byte, err error) {
		var line []byte
		ok := false
		if err == nil {
			line, ok, err = c.line(l)
		}
		if err == nil && ok {
			err = m.addLine(line)
		}
		if err != nil {
			m.refuse(fmt.Sprintf("%s:%d", name, n), err)
		}
	})
	if err != nil {
		return err
	}
	tasks := make([]string, 0, len(c.parts))
	for task := range c.parts {
		tasks = append(tasks, task)
	}
	sort.Strings(tasks)
	for _, task := range tasks {
		m.refuse(name, fmt.Errorf("the output of task %.40q ends in the middle of a record", task))
	}
	return nil
}

// eachLine calls fn with each line of r (without its newline) and its
// number; a line longer than max is skipped, fn getting an error for it.
// The error returned is one of reading r.
func eachLine(r io.Reader, max int, fn func(n int, line []byte, err error)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	tooLong := false
	for n := 1; ; {
		frag, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			if !tooLong && len(long)+len(frag) <= max {
				long = append(long, frag...)
			} else {
				tooLong, long = true, long[:0]
			}
			continue
		case err != nil && err != io.EOF:
			return err
		}
		line := bytes.TrimSuffix(frag, []byte("\n"))
		if len(long) > 0 || tooLong {
			if !tooLong && len(long)+len(line) <= max {
				line = append(long, line...)
			} else {
				tooLong = true
			}
		}
		switch {
		case tooLong:
			fn(n, nil, fmt.Errorf("line longer than %d bytes", max))
		case len(line) > max:
			fn(n, nil, fmt.Errorf("line longer than %d bytes", max))
		case len(line) > 0 || err == nil:
			fn(n, line, nil)
		}
		long, tooLong = long[:0], false
		n++
		if err == io.EOF {
			return nil
		}
	}
}

// addLine adds one JSON line: a summary.Record, or a jobJSON.
func (m *merger) addLine(line []byte) error {
	var probe struct {
		Summary json.RawMessage `json:"summary"`
		Rank    *int            `json:"rank"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return fmt.Errorf("not a record nor merged classes: %w", err)
	}
	switch {
	case probe.Summary != nil:
		var j jobJSON
		if err := json.Unmarshal(line, &j); err != nil {
			return fmt.Errorf("bad merged classes: %w", err)
		}
		if j.Summary == nil {
			return fmt.Errorf("merged classes without a summary")
		}
		return m.add(j.Summary, j.Errors...)
	case probe.Rank != nil:
		var rec summary.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("bad record: %w", err)
		}
		if rec.Rank < 0 || rec.Rank > summary.MaxID {
			return fmt.Errorf("bad record: rank %d", rec.Rank)
		}
		return m.add(rec.Summary(), recordErrors(rec)...)
	}
	return fmt.Errorf("neither a record (no \"rank\") nor merged classes (no \"summary\")")
}

func runMerge(ctx context.Context, o *options, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usagef("merge", "no input given")
	}
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(a, e.Name()))
			}
		}
	}
	m := merger{depth: o.depth}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := o.mergeFile(ctx, &m, f, i); err != nil {
			return err
		}
	}
	if err := o.printMerged(out, m.result()); err != nil {
		return err
	}
	return m.badErr()
}

// mergeFile adds one file: a core (rank from the environment in it, else
// from its name, else pos) or JSON lines.
func (o *options) mergeFile(ctx context.Context, m *merger, path string, pos int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	isCore := n == 4 && (string(magic[:]) == "\x7fELF" || magic == [4]byte{0x28, 0xb5, 0x2f, 0xfd})
	if !isCore {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return m.addLines(f, path)
	}
	if o.exe == "" {
		return usagef("merge", "%s is a core file: give its program with -exe EXE", path)
	}
	rank := rankFromName(path, pos)
	c, err := o.openCore(ctx, o.exe, path)
	var sum *summary.Summary
	if err == nil {
		if r, ok := coreRank(path, c); ok {
			rank = r
		}
		o.progressf("merge: reading core %s as rank %d", path, rank)
		_, sum, err = o.read(ctx, c, rank)
		c.Close()
	}
	if err != nil {
		sum = &summary.Summary{Ranks: summary.Ranges{{First: rank, Last: rank}}}
		err = m.add(sum, rankError{Rank: rank, Error: fmt.Sprintf("%s: %v", path, err)})
	} else {
		err = m.add(sum)
	}
	if err != nil {
		m.refuse(path, err)
	}
	return nil
}

var rankName = regexp.MustCompile(`(?i)rank[._-]?(\d+)`)

// rankFromName is the rank a core file's name gives ("core.rank12",
// "rank-3.core"), else pos.
func rankFromName(path string, pos int) int {
	if sm := rankName.FindStringSubmatch(filepath.Base(path)); sm != nil {
		if r, err := strconv.Atoi(sm[1]); err == nil {
			return r
		}
	}
	return pos
}

// printMerged prints merged classes as the flags ask.
func (o *options) printMerged(out io.Writer, j jobJSON) error {
	switch {
	case o.json:
		return json.NewEncoder(out).Encode(j)
	case o.dot:
		return writeDOT(out, j.Summary)
	}
	printClasses(out, j.Summary)
	printErrors(out, "", errorLines(j.Errors), true)
	return nil
}

// errorLines are the errors of ranks, one line per message with the ranks
// that had it ("ranks 0-7: ..."), in the order of their first rank.
func errorLines(errs []rankError) []string {
	ranks := map[string]summary.Ranges{}
	var order []string
	for _, e := range errs {
		if _, ok := ranks[e.Error]; !ok {
			order = append(order, e.Error)
		}
		ranks[e.Error] = ranks[e.Error].Add(e.Rank)
	}
	lines := make([]string, len(order))
	for i, msg := range order {
		r := ranks[msg]
		word := "ranks"
		if r.Len() == 1 {
			word = "rank"
		}
		lines[i] = fmt.Sprintf("%s %s: %s", word, r, msg)
	}
	return lines
}

// outliersFirst orders groups by how many ranks they span, then threads,
// the fewest first: the ranks that differ from the rest come first.
func outliersFirst(gs []summary.Group) []summary.Group {
	out := append([]summary.Group(nil), gs...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := out[i].Ranks.Len(), out[j].Ranks.Len()
		if ri != rj {
			return ri < rj
		}
		return out[i].Threads < out[j].Threads
	})
	return out
}

// printClasses writes the classes as lines "ranks 0-6: 14 threads ...".
func printClasses(w io.Writer, s *summary.Summary) {
	fmt.Fprintf(w, "%d thread%s of %d rank%s (%s) in %d class%s, outliers first:\n",
		s.Threads, plural(s.Threads), s.Ranks.Len(), plural(s.Ranks.Len()), s.Ranks, len(s.Groups), pluralEs(len(s.Groups)))
	for _, g := range outliersFirst(s.Groups) {
		word := "ranks"
		if g.Ranks.Len() == 1 {
			word = "rank"
		}
		fmt.Fprintf(w, "%s %s: %d thread%s %s\n", word, g.Ranks, g.Threads, plural(g.Threads), g.Describe())
	}
}

func pluralEs(n int) string {
	if n == 1 {
		return ""
	}
	return "es"
}

// dotNode is a node of the prefix tree: a frame (or region, or state)
// reached by a path from the root.
type dotNode struct {
	label    string
	ranks    summary.Ranges
	threads  int
	children map[string]*dotNode
	order    []string
}

// writeDOT writes the classes as a prefix tree, as STAT draws merged
// stacks: from the root, each class's path is its stack outermost first
// (its regions when no stack was taken), ending in its state; each edge
// says the ranks and threads that took it.
func writeDOT(w io.Writer, s *summary.Summary) error {
	root := &dotNode{label: "job", children: map[string]*dotNode{}}
	for _, g := range s.Groups {
		var path []string
		if len(g.Stack) > 0 {
			for i := len(g.Stack) - 1; i >= 0; i-- {
				path = append(path, g.Stack[i])
			}
		} else {
			for i := len(g.Regions) - 1; i >= 0; i-- {
				r := g.Regions[i]
				if r.Level == 0 && r.Function == "" {
					continue
				}
				path = append(path, fmt.Sprintf("%s\\nlevel %d, team of %d", orQ(r.Function), r.Level, r.NumThreads))
			}
		}
		path = append(path, "["+g.StateText()+"]")
		n := root
		n.ranks, n.threads = n.ranks.Union(g.Ranks), n.threads+g.Threads
		for _, p := range path {
			c := n.children[p]
			if c == nil {
				c = &dotNode{label: p, children: map[string]*dotNode{}}
				n.children[p] = c
				n.order = append(n.order, p)
			}
			c.ranks, c.threads = c.ranks.Union(g.Ranks), c.threads+g.Threads
			n = c
		}
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "digraph ompd {")
	fmt.Fprintln(bw, "  node [shape=box, fontname=monospace];")
	id := 0
	var walk func(n *dotNode) int
	walk = func(n *dotNode) int {
		me := id
		id++
		fmt.Fprintf(bw, "  n%d [label=%s];\n", me, dotQuote(n.label))
		keys := append([]string(nil), n.order...)
		sort.Strings(keys)
		for _, k := range keys {
			c := n.children[k]
			child := walk(c)
			fmt.Fprintf(bw, "  n%d -> n%d [label=%s];\n", me, child,
				dotQuote(fmt.Sprintf("%d:[%s]\\n%d thread%s", c.ranks.Len(), c.ranks, c.threads, plural(c.threads))))
		}
		return me
	}
	walk(root)
	fmt.Fprintln(bw, "}")
	return bw.Flush()
}

func orQ(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// dotQuote quotes s for DOT, keeping the \n escapes the labels use.
func dotQuote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `"`, `\"`), "\n", `\n`) + `"`
}
