// Command ompdtool prints the OpenMP state of a stopped program: its threads
// with their states, the nest of parallel regions, each thread's task chain,
// the ICVs, the display control variables and the runtime's breakpoints. It
// is built on the public API of github.com/ompd-go/ompd only.
//
// Usage:
//
//	ompdtool [-json] [-debug-dir DIR]... core EXE CORE
//	ompdtool [-json] attach PID
//	ompdtool [-json] launch [-env KEY=VALUE]... [-break FUNC] -- PROG [ARGS...]
//	ompdtool [-json] events [-env KEY=VALUE]... -- PROG [ARGS...]
//
// core reads a core file of the program EXE; a stripped OpenMP runtime (as
// distributions ship it) needs its separate debug file, looked for by
// build-id and .gnu_debuglink under /usr/lib/debug (or the -debug-dir
// directories instead) and next to the library, and fetched from the
// debuginfod servers DEBUGINFOD_URLS names, if any. attach attaches to a
// running process, prints its state and detaches, leaving it running. launch starts
// PROG, runs it until it calls FUNC (default stopme), prints its state and
// kills it. events starts PROG and prints, as they happen, the parallel
// regions, tasks and threads of the OpenMP runtime beginning and ending,
// until the program exits. launch and events add OMP_DEBUG=enabled to the
// program's environment (override it with -env).
//
// The program must use LLVM's OpenMP runtime; states and task frames need it
// to have been started with OMP_DEBUG=enabled.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ompdtool:", err)
		os.Exit(1)
	}
}

const usage = `usage: ompdtool [-json] [-debug-dir DIR]... core EXE CORE
       ompdtool [-json] attach PID
       ompdtool [-json] launch [-env KEY=VALUE]... [-break FUNC] -- PROG [ARGS...]
       ompdtool [-json] events [-env KEY=VALUE]... -- PROG [ARGS...]`

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ompdtool", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	var debugDirs []string
	fs.Func("debug-dir", "look for separate debug files under `DIR` instead of /usr/lib/debug (repeatable)", func(s string) error {
		debugDirs = append(debugDirs, s)
		return nil
	})
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v\n%s", err, usage)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return errors.New(usage)
	}
	switch rest[0] {
	case "core":
		if len(rest) != 3 {
			return errors.New(usage)
		}
		opts := []core.Option{core.WithDebuginfodFromEnv()}
		if len(debugDirs) > 0 {
			opts = append(opts, core.WithDebugDirs(debugDirs...))
		}
		c, err := core.Open(rest[1], rest[2], opts...)
		if err != nil {
			return err
		}
		defer c.Close()
		return inspect(ctx, c, *asJSON, out)
	case "attach":
		return runAttach(ctx, rest[1:], *asJSON, out)
	case "launch":
		return runLaunch(ctx, rest[1:], *asJSON, out)
	case "events":
		return runEvents(ctx, rest[1:], *asJSON, out)
	}
	return fmt.Errorf("unknown mode %q\n%s", rest[0], usage)
}

// inspect opens the OpenMP address space of t and prints its snapshot.
func inspect(ctx context.Context, t target.Target, asJSON bool, out io.Writer) error {
	as, err := ompd.Open(t)
	if err != nil {
		return err
	}
	defer as.Close()
	s, err := as.Snapshot(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	printText(out, s)
	return nil
}
