package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/summary"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
	"github.com/ompd-go/ompd/target/debuginfod"
)

// progressf says on standard error what the tool is doing, unless -q.
func (o *options) progressf(format string, args ...any) {
	if !o.quiet {
		fmt.Fprintf(o.stderr, "ompdtool: "+format+"\n", args...)
	}
}

// debuginfod returns the client of the servers DEBUGINFOD_URLS names (nil
// if none), reporting its downloads on standard error.
func (o *options) debuginfod() *debuginfod.Client {
	c := debuginfod.FromEnv(os.Getenv)
	if c != nil {
		c.Progress = o.downloadProgress
	}
	return c
}

func (o *options) downloadProgress(p debuginfod.Progress) {
	size := "size unknown"
	if p.Total >= 0 {
		size = byteCount(p.Total)
	}
	switch {
	case p.Done && p.Err != nil:
		o.progressf("fetching debug file %s from %s: %v", p.BuildID, p.URL, p.Err)
	case p.Done:
		o.progressf("fetched debug file %s (%s)", p.BuildID, byteCount(p.Received))
	case p.Received == 0:
		o.progressf("fetching debug file %s from %s (%s)", p.BuildID, p.URL, size)
	case p.Total > 0:
		o.progressf("  %s of %s (%d%%)", byteCount(p.Received), size, p.Received*100/p.Total)
	default:
		o.progressf("  %s", byteCount(p.Received))
	}
}

// byteCount writes n bytes for people.
func byteCount(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// coreOptions are the target/core options the flags ask for.
func (o *options) coreOptions(ctx context.Context) []core.Option {
	opts := []core.Option{core.WithDebuginfod(o.debuginfod()), core.WithDebugContext(ctx)}
	return append(opts, fileOptions(o, core.WithDebugDirs, core.WithSysroot, core.WithFileMap)...)
}

// runCore prints the state of the program in core files: one in full, or
// several (one per MPI rank, rank i the i-th core) as one summary.
func runCore(ctx context.Context, o *options, args []string, out io.Writer) error {
	if len(args) < 2 {
		return usagef("core", "want EXE and CORE, got %d arguments", len(args))
	}
	exe, cores := args[0], args[1:]
	if len(cores) == 1 {
		c, err := o.openCore(ctx, exe, cores[0])
		if err != nil {
			return err
		}
		defer c.Close()
		return o.inspect(ctx, c, out)
	}
	var (
		merged *summary.Summary
		errs   []rankError
	)
	for rank, path := range cores {
		if err := ctx.Err(); err != nil {
			return err
		}
		o.progressf("reading core %d of %d: %s", rank+1, len(cores), path)
		s, sum, err := o.readCore(ctx, exe, path, rank)
		if err != nil {
			return fmt.Errorf("rank %d (%s): %w", rank, path, err)
		}
		if !o.json && (o.threads || len(o.threadGTIDs) > 0 || o.vars || o.breakpoints) {
			fmt.Fprintf(out, "\n=== rank %d: %s\n", rank, path)
			printHeader(out, s)
			if err := printDetails(out, s, o.view()); err != nil {
				return fmt.Errorf("rank %d (%s): %w", rank, path, err)
			}
		}
		for _, e := range s.Errors {
			errs = append(errs, rankError{Rank: rank, Error: e})
		}
		merged = summary.Merge(merged, sum)
	}
	if o.json {
		return writeJSON(out, jobJSON{Summary: merged, Errors: errs})
	}
	printSummary(out, merged, true)
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = fmt.Sprintf("rank %d: %s", e.Rank, e.Error)
	}
	printErrors(out, "", lines, o.threads)
	return nil
}

// jobJSON is the JSON form of a summary (-summary, or several cores).
type jobJSON struct {
	Summary *summary.Summary `json:"summary"`
	Errors  []rankError      `json:"errors,omitempty"`
}

// rankError is an error of the snapshot of one rank.
type rankError struct {
	Rank  int    `json:"rank"`
	Error string `json:"error"`
}

// openCore opens a core file, saying so if it is compressed (decompressing
// a large one takes a while).
func (o *options) openCore(ctx context.Context, exe, path string) (*core.Core, error) {
	if strings.HasSuffix(path, ".zst") {
		size := "size unknown"
		if st, err := os.Stat(path); err == nil {
			size = byteCount(st.Size())
		}
		o.progressf("decompressing %s (%s) to a temporary file", path, size)
	}
	return core.Open(ctx, exe, path, o.coreOptions(ctx)...)
}

// readCore reads the snapshot of one core file, and its summary as rank.
func (o *options) readCore(ctx context.Context, exe, path string, rank int) (*ompd.Snapshot, *summary.Summary, error) {
	c, err := o.openCore(ctx, exe, path)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	return o.read(ctx, c, rank)
}

// read takes the snapshot of the program t shows and its summary as
// rank.
func (o *options) read(ctx context.Context, t target.Target, rank int) (*ompd.Snapshot, *summary.Summary, error) {
	as, err := ompd.Open(t)
	if err != nil {
		return nil, nil, err
	}
	defer as.Close()
	var opts []ompd.SnapshotOption
	if o.bt {
		var bt []ompd.BacktraceOption
		if !o.btRuntime && !o.json {
			bt = append(bt, ompd.WithFoldRuntime())
		}
		opts = append(opts, ompd.WithBacktraces(bt...))
	}
	s, err := as.Snapshot(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	return s, summary.Of(rank, s, o.summaryOptions(t)), nil
}

// summaryOptions say how to group the threads of the program t shows.
func (o *options) summaryOptions(t target.Target) summary.Options {
	sopts := summary.Options{Source: sourceOf(t)}
	if o.bt {
		sopts.Stack = func(t ompd.ThreadSnapshot) []string { return summary.StackKey(t.Frames) }
	}
	return sopts
}

// sourceOf returns where the code at a PC is ("file.c:42"), if t can tell.
func sourceOf(t target.Target) func(pc uint64) string {
	cl, ok := t.(target.CodeLocator)
	if !ok {
		return nil
	}
	seen := map[uint64]string{}
	return func(pc uint64) string {
		if src, ok := seen[pc]; ok {
			return src
		}
		src := ""
		if loc, err := cl.LocateCode(pc); err == nil && loc.File != "" {
			src = fmt.Sprintf("%s:%d", filepath.Base(loc.File), loc.Line)
		}
		seen[pc] = src
		return src
	}
}

// inspect prints the state of the program t shows.
func (o *options) inspect(ctx context.Context, t target.Target, out io.Writer) error {
	s, sum, err := o.read(ctx, t, 0)
	if err != nil {
		if unreadable(err) && !o.json {
			o.printOSThreads(ctx, t, out)
		}
		return err
	}
	switch {
	case o.json && o.summary:
		var errs []rankError
		for _, e := range s.Errors {
			errs = append(errs, rankError{Error: e})
		}
		return writeJSON(out, jobJSON{Summary: sum, Errors: errs})
	case o.json:
		return writeJSON(out, s)
	}
	return printText(out, s, sum, o.view())
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
