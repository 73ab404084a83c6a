package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

// progressf says on standard error what the tool is doing, unless -q.
func (o *options) progressf(format string, args ...any) {
	if !o.quiet {
		fmt.Fprintf(o.stderr, "ompdtool: "+format+"\n", args...)
	}
}

// debuginfod returns the client of the servers DEBUGINFOD_URLS names (nil
// if none), reporting its downloads on standard error.
func (o *options) debuginfod() *core.DebuginfodClient {
	c := core.DebuginfodFromEnv()
	if c != nil {
		c.Progress = o.downloadProgress
	}
	return c
}

func (o *options) downloadProgress(p core.DebuginfodProgress) {
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
	if len(o.debugDirs) > 0 {
		opts = append(opts, core.WithDebugDirs(o.debugDirs...))
	}
	if o.sysroot != "" {
		opts = append(opts, core.WithSysroot(o.sysroot))
	}
	if len(o.fileMap) > 0 {
		opts = append(opts, core.WithFileMap(o.fileMap))
	}
	return opts
}

// runCore prints the state of the program in core files.
func runCore(ctx context.Context, o *options, args []string, out io.Writer) error {
	if len(args) != 2 {
		return usagef("core", "want EXE and CORE, got %d arguments", len(args))
	}
	c, err := core.Open(args[0], args[1], o.coreOptions(ctx)...)
	if err != nil {
		return err
	}
	defer c.Close()
	return o.inspect(ctx, c, out)
}

// inspect opens the OpenMP address space of t and prints its snapshot.
func (o *options) inspect(ctx context.Context, t target.Target, out io.Writer) error {
	as, err := ompd.Open(t)
	if err != nil {
		return err
	}
	defer as.Close()
	s, err := as.Snapshot(ctx)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	printText(out, s)
	return nil
}
