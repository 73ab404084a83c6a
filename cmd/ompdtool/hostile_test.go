package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/summary"
)

// What the front end of a job reads comes from other machines: the
// collectors' output through srun, files given to merge. The mutation
// harness of this file feeds it real records (the nested fixture's core
// read as ranks 0-7, a node's merged classes for ranks 8-15), corrupted:
// bytes flipped or replaced, bad UTF-8, lines cut or repeated (duplicate
// ranks), ranks and counts forged (negative, beyond int32, overflowing
// sums), oversized lines and records. For each: no panic, an answer
// within hostileDeadline, and a merge that stays possible (summary.Check)
// with no rank counted twice and no more ranks than the input had.

// hostileDeadline bounds the answer to one mutation; OMPD_GO_RECORD_MUTATIONS
// sets how many mutations of each reader run (hostileMutations by
// default).
const (
	hostileMutations = 500
	hostileDeadline  = 10 * time.Second
)

// hostileInput is the clean input: records of ranks 0-7 and merged
// classes of ranks 8-15, as JSON lines and as srun --label chunks.
func hostileInput(t *testing.T) (lines, chunks []byte) {
	t.Helper()
	stop := fixtures.Core(t, fixtures.Nested)
	var o options
	o.init(io.Discard)
	o.bt = true
	c, err := o.openCore(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	s, _, err := o.read(context.Background(), c, 0)
	require.NoError(t, err)
	var lb bytes.Buffer
	enc := json.NewEncoder(&lb)
	var node []*summary.Summary
	for r := 0; r < 16; r++ {
		rec := summary.NewRecord(r, "n1", 100+r, s, o.summaryOptions(c))
		if r == 3 {
			rec = summary.Record{Rank: r, Error: "process 103 is gone"}
		}
		if r < 8 {
			require.NoError(t, enc.Encode(rec))
		} else {
			node = append(node, rec.Summary())
		}
	}
	require.NoError(t, enc.Encode(jobJSON{Summary: summary.Merge(node...), Errors: []rankError{{Rank: 9, Error: "thread 5: no task"}}}))
	lines = lb.Bytes()
	// The same, chunked by two collectors and interleaved by label.
	var cb bytes.Buffer
	recs := bytes.SplitAfter(lines, []byte("\n"))
	for i, rec := range recs {
		if len(rec) == 0 {
			continue
		}
		var piece bytes.Buffer
		cw := &chunkWriter{w: &piece, size: 900}
		_, err := cw.Write(rec)
		require.NoError(t, err)
		for _, l := range strings.SplitAfter(piece.String(), "\n") {
			if l != "" {
				fmt.Fprintf(&cb, "%d: %s", i%2, l)
			}
		}
	}
	return lines, cb.Bytes()
}

// hostileMutate returns input corrupted by mutation index of seed, and
// what was done.
func hostileMutate(input []byte, seed uint64, index int) ([]byte, string) {
	rng := rand.New(rand.NewPCG(seed, uint64(index)))
	b := append([]byte(nil), input...)
	lines := bytes.SplitAfter(b, []byte("\n"))
	pos := rng.IntN(len(b))
	switch k := rng.IntN(10); k {
	case 0:
		b[pos] ^= 1 << rng.IntN(8)
		return b, fmt.Sprintf("bit flipped at %d", pos)
	case 1:
		for i := pos; i < min(len(b), pos+1+rng.IntN(16)); i++ {
			b[i] = byte(rng.Uint32())
		}
		return b, fmt.Sprintf("random bytes at %d", pos)
	case 2:
		bad := [][]byte{{0xff}, {0xc3}, {0xed, 0xa0, 0x80}, {0xf4, 0x90, 0x80, 0x80}}[rng.IntN(4)]
		return append(append(b[:pos:pos], bad...), input[pos:]...), fmt.Sprintf("bad UTF-8 at %d", pos)
	case 3:
		return b[:pos], fmt.Sprintf("cut at %d", pos)
	case 4:
		i := rng.IntN(len(lines))
		out := append(append([]byte(nil), b...), lines[i]...)
		return out, fmt.Sprintf("line %d repeated", i)
	case 5, 6:
		// A number forged: a rank, a count, a range.
		forged := []string{"-1", "2147483648", "9223372036854775807", "-9223372036854775808", "4611686018427387904",
			"1099511627777", "99999999999999999999", "0", "3"}[rng.IntN(9)]
		fields := []string{`"rank":`, `"threads":`, `"num_threads":`, `"level":`, `"gtid":`}
		f := fields[rng.IntN(len(fields))]
		idx := allIndex(b, []byte(f))
		if len(idx) == 0 {
			return b, "no field to forge"
		}
		at := idx[rng.IntN(len(idx))] + len(f)
		end := at
		for end < len(b) && (b[end] == '-' || b[end] >= '0' && b[end] <= '9') {
			end++
		}
		return append(append(b[:at:at], forged...), b[end:]...), fmt.Sprintf("%s%s at %d", f, forged, at)
	case 7:
		forged := []string{`"0-2147483647"`, `"0-9223372036854775807"`, `"5-3"`, `"-1"`, `"0,0,0"`, `"0-7,0-7"`, `"8-15"`}[rng.IntN(7)]
		idx := allIndex(b, []byte(`"ranks":"`))
		if len(idx) == 0 {
			return b, "no ranks to forge"
		}
		at := idx[rng.IntN(len(idx))] + len(`"ranks":`)
		end := at + 1 + bytes.IndexByte(b[at+1:], '"') + 1
		return append(append(b[:at:at], forged...), b[end:]...), fmt.Sprintf("ranks %s at %d", forged, at)
	case 8:
		// An oversized line or record.
		n := maxPiece + 1 + rng.IntN(64)
		if rng.IntN(2) == 0 {
			return append(b, append(bytes.Repeat([]byte("x"), n), '\n')...), fmt.Sprintf("a line of %d bytes", n)
		}
		return append(b, []byte("7: "+strings.Repeat("+"+strings.Repeat("y", 1000)+"\n7: ", 10)+"=}\n")...), "a record of 10 pieces of garbage"
	default:
		// Lines in another order (records from the nodes interleave).
		rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
		return bytes.Join(lines, nil), "lines shuffled"
	}
}

func allIndex(b, sub []byte) []int {
	var out []int
	for i := 0; ; {
		j := bytes.Index(b[i:], sub)
		if j < 0 {
			return out
		}
		out = append(out, i+j)
		i += j + 1
	}
}

// checkMerge checks what a merger made of hostile input holding at most
// ranks ranks and threads threads: the merge is possible, no rank nor
// thread is counted twice (one change of the input cannot forge a count
// that agrees with the rest), and it prints, as text and JSON (valid
// UTF-8).
func checkMerge(m *merger, ranks, threads int) []string {
	var out []string
	res := m.result()
	if err := res.Summary.Check(); err != nil {
		out = append(out, fmt.Sprintf("merged summary: %v", err))
	}
	if n := res.Summary.Ranks.Len(); n > ranks {
		out = append(out, fmt.Sprintf("%d ranks merged from an input of %d", n, ranks))
	}
	if n := res.Summary.Threads; n > threads {
		out = append(out, fmt.Sprintf("%d threads merged from an input of %d", n, threads))
	}
	var o options
	o.init(io.Discard)
	var text bytes.Buffer
	if err := o.printMerged(&text, res); err != nil {
		out = append(out, fmt.Sprintf("printing: %v", err))
	}
	o.json = true
	var js bytes.Buffer
	if err := o.printMerged(&js, res); err != nil {
		out = append(out, fmt.Sprintf("printing JSON: %v", err))
	}
	if !utf8.Valid(js.Bytes()) {
		out = append(out, "JSON output is not valid UTF-8")
	}
	var back jobJSON
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		out = append(out, fmt.Sprintf("JSON output does not read back: %v", err))
	}
	return out
}

// TestHostileRecords runs the harness of this file over merge's reader
// (JSON lines) and job's (srun's labelled chunks).
func TestHostileRecords(t *testing.T) {
	lines, chunks := hostileInput(t)
	for _, in := range []struct {
		name  string
		input []byte
		read  func(*merger, io.Reader) error
	}{
		{"lines", lines, func(m *merger, r io.Reader) error { return m.addLines(r, "input") }},
		{"chunks", chunks, func(m *merger, r io.Reader) error { return m.addChunks(r, "input") }},
	} {
		// The clean input merges whole.
		var m merger
		err := in.read(&m, bytes.NewReader(in.input))
		require.NoError(t, err)
		require.NoError(t, m.badErr(), in.name)
		assert.Equal(t, "0-15", m.result().Summary.Ranks.String(), in.name)
		threads := m.result().Summary.Threads
		require.Empty(t, checkMerge(&m, 16, threads))

		failed := 0
		count := hostileMutations
		if v := os.Getenv("OMPD_GO_RECORD_MUTATIONS"); v != "" {
			count, err = strconv.Atoi(v)
			require.NoError(t, err, "OMPD_GO_RECORD_MUTATIONS")
		}
		for i := 0; i < count; i++ {
			input, what := hostileMutate(in.input, 1, i)
			var problems []string
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer func() {
					if r := recover(); r != nil {
						problems = append(problems, fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
					}
				}()
				var m merger
				if err := in.read(&m, bytes.NewReader(input)); err != nil {
					problems = append(problems, fmt.Sprintf("read error: %v", err))
				}
				problems = append(problems, checkMerge(&m, 16, threads)...)
			}()
			select {
			case <-done:
			case <-time.After(hostileDeadline):
				t.Fatalf("%s mutation %d (%s): no answer within %v", in.name, i, what, hostileDeadline)
			}
			if len(problems) > 0 {
				if failed++; failed <= 20 {
					t.Errorf("%s mutation %d (%s):\n\t%s", in.name, i, what, strings.Join(problems, "\n\t"))
				}
			}
		}
	}
}

// TestHostileRecordsRefused: each kind of forged input is refused with an
// error that says what was wrong, the rest merged.
func TestHostileRecordsRefused(t *testing.T) {
	rec := func(rank int) string {
		b, _ := json.Marshal(hungRank(rank, false))
		return string(b)
	}
	for _, c := range []struct {
		name, input, ranks, err string
	}{
		{"duplicate rank", rec(0) + "\n" + rec(1) + "\n" + rec(1) + "\n", "0-1", "input:3: ranks 1 reported again"},
		{"a node's merge repeating a rank", rec(0) + "\n" + `{"summary":{"threads":2,"ranks":"0","groups":[{"state":"idle","regions":[],"threads":2,"ranks":"0","example":{"rank":0,"gtid":0}}]}}` + "\n",
			"0", "input:2: ranks 0 reported again"},
		{"negative rank", rec(0) + "\n" + strings.Replace(rec(1), `"rank":1`, `"rank":-5`, 1) + "\n", "0", "input:2: bad record: rank -5"},
		{"rank beyond int32", strings.Replace(rec(1), `"rank":1`, `"rank":4294967296`, 1) + "\n" + rec(0) + "\n", "0", "input:1: bad record: rank 4294967296"},
		{"range beyond int32", `{"summary":{"threads":0,"ranks":"0-4294967296","groups":[]}}` + "\n" + rec(2) + "\n", "2", `input:1: bad merged classes: summary: bad range "0-4294967296"`},
		{"threads that do not add up", `{"summary":{"threads":1,"ranks":"4","groups":[{"state":"idle","regions":[],"threads":9223372036854775807,"ranks":"4","example":{"rank":4,"gtid":0}}]}}` + "\n" + rec(2) + "\n",
			"2", "input:1: summary: group 0 has 9223372036854775807 threads"},
		{"a count beyond the bound", `{"summary":{"threads":2199023255552,"ranks":"4","groups":[{"state":"idle","regions":[],"threads":2199023255552,"ranks":"4","example":{"rank":4,"gtid":0}}]}}` + "\n",
			"", "input:1: summary: 2199023255552 threads"},
		{"group ranks outside", `{"summary":{"threads":1,"ranks":"4","groups":[{"state":"idle","regions":[],"threads":1,"ranks":"5","example":{"rank":5,"gtid":0}}]}}` + "\n",
			"", `input:1: summary: group 0 has ranks "5", the summary "4"`},
		{"an error of another rank", `{"summary":{"threads":0,"ranks":"4","groups":[]},"errors":[{"rank":7,"error":"x"}]}` + "\n" + rec(7) + "\n",
			"7", "input:1: an error of rank 7, which the summary does not have"},
		{"bad UTF-8 is kept out of nothing", strings.Replace(rec(0), "MPI_Barrier", "MPI_\xff\xfeBarrier", 1) + "\n", "0", ""},
		{"an oversized line", rec(0) + "\n" + strings.Repeat("z", maxLine+1) + "\n" + rec(1) + "\n", "0-1", fmt.Sprintf("input:2: line longer than %d bytes", maxLine)},
	} {
		var m merger
		require.NoError(t, m.addLines(strings.NewReader(c.input), "input"), c.name)
		assert.Equal(t, c.ranks, m.result().Summary.Ranks.String(), c.name)
		if c.err == "" {
			assert.NoError(t, m.badErr(), c.name)
		} else {
			assert.ErrorContains(t, m.badErr(), c.err, c.name)
			assert.ErrorIs(t, m.badErr(), errLinesLeftOut, c.name)
		}
		assert.Empty(t, checkMerge(&m, 16, 32), c.name)
	}
	// A record of a task beyond the bound, through srun's labels: left
	// out, the task's next record read.
	var in strings.Builder
	for n := 0; n <= maxLine; n += 1000 {
		in.WriteString("1: +" + strings.Repeat("w", 1000) + "\n")
	}
	in.WriteString("1: =w\n1: =" + rec(3) + "\n0: =" + rec(2) + "\n")
	var m merger
	require.NoError(t, m.addChunks(strings.NewReader(in.String()), "input"))
	assert.Equal(t, "2-3", m.result().Summary.Ranks.String())
	assert.ErrorContains(t, m.badErr(), fmt.Sprintf(`a record of task "1" longer than %d bytes`, maxLine))
	// Records cut short at the end of the output are said.
	m = merger{}
	require.NoError(t, m.addChunks(strings.NewReader("0: ="+rec(2)+"\n1: +"+rec(3)[:30]+"\n"), "input"))
	assert.Equal(t, "2", m.result().Summary.Ranks.String())
	assert.ErrorContains(t, m.badErr(), `the output of task "1" ends in the middle of a record`)
}

// TestJobForgedCollector: a collector that sends a rank another sent, and
// garbage: job merges the rest, prints it, and exits 1 saying which lines
// it left out. srun and squeue are stand-ins (shell scripts writing what
// the real ones would).
func TestJobForgedCollector(t *testing.T) {
	dir := t.TempDir()
	rec := func(rank int) string {
		b, _ := json.Marshal(hungRank(rank, false))
		return string(b)
	}
	script := map[string]string{
		"squeue": "#!/bin/sh\nif [ \"$2\" = -s ]; then printf '12.0 3\\n'; else echo 'RUNNING 2'; fi\n",
		"srun": "#!/bin/sh\necho '0: =" + rec(0) + "'\necho '1: =" + rec(1) + "'\necho '1: =" + rec(0) + "'\n" +
			"echo 'garbage'\necho '0: =" + rec(2) + "'\n",
	}
	for name, body := range script {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, stderr bytes.Buffer
	err := run(context.Background(), []string{"-q", "job", "12"}, &out, &stderr)
	assert.ErrorIs(t, err, errLinesLeftOut)
	assert.ErrorContains(t, err, "collectors' output: lines left out: 2 (line:3: ranks 0 reported again; line:4: not a labelled piece of a record")
	assert.Contains(t, out.String(), "6 threads of 3 ranks (0-2) in 2 classes")
}
