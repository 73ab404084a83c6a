// Command ompdtool prints the OpenMP state of a stopped program: its threads
// with their states, the nest of parallel regions, each thread's task chain,
// the ICVs, the display control variables and the runtime's breakpoints. It
// is built on the public API of github.com/ompd-go/ompd.
//
// Usage:
//
//	ompdtool [flags] core [flags] EXE CORE...
//	ompdtool [flags] attach [flags] PID
//	ompdtool [flags] connect [flags] [-follow] HOST:PORT [EXE]
//	ompdtool [flags] launch [flags] [-env KEY=VALUE]... [-break FUNC] -- PROG [ARGS...]
//	ompdtool [flags] events [flags] [-env KEY=VALUE]... -- PROG [ARGS...]
//	ompdtool [flags] collect [flags] [-job JOBID[.STEP]] [-node NAME] [PID...]
//	ompdtool [flags] merge [flags] [-exe EXE] [-dot] [-depth N] FILE|DIR...
//	ompdtool [flags] job [flags] [-sbcast] [-dot] [-depth N] JOBID
//	ompdtool [flags] demo [flags] [NAME]
//	ompdtool help [MODE]
//
// Flags go before or after the mode, and between the mode's arguments
// (up to "--"), except in attach, launch, events and collect, where they
// end at the first argument (what follows belongs to the program);
// "ompdtool MODE -h" lists a mode's.
//
// core reads core files of the program EXE (one per MPI rank when there are
// several: their threads are grouped together and each group names the
// ranks it comes from). attach attaches to a running process, prints its
// state and detaches, leaving it running. connect reads the process a
// headless Delve server holds (dlv --headless --accept-multiclient
// --api-version 2), at the stop its user left it in, without changing
// anything in the session; with -follow, at each later stop too. launch
// starts PROG, runs it until it calls FUNC (default stopme), prints its
// state and kills it. events
// starts PROG and prints, as they happen, the parallel regions, tasks and
// threads of the OpenMP runtime beginning and ending, until the program
// exits. launch and events add OMP_DEBUG=enabled to the program's
// environment (override it with -env).
//
// A stripped OpenMP runtime (as distributions ship it) needs its separate
// debug file, looked for by build-id and .gnu_debuglink under
// /usr/lib/debug (or the -debug-dir directories instead) and next to the
// library, and fetched from the debuginfod servers DEBUGINFOD_URLS names,
// if any; a download says what it fetches on standard error. Cores copied
// off another machine find that machine's libraries under -sysroot DIR, or
// one by one with -file-map CORE_PATH=LOCAL_PATH.
//
// demo reads a real core that ompd-go's sources ship (in testdata/cores),
// as core does, with nothing installed: in a checkout, go run
// ./cmd/ompdtool demo; installed with go install, ompdtool demo reads the
// cores of its own version in the Go module cache.
//
// job prints the merged OpenMP view of every rank of a running Slurm job:
// it runs collect on each node of the job through one overlapping step
// (srun --overlap), which attaches briefly to the node's ranks and writes a
// JSON record per rank, and merges the records as they arrive into classes
// (threads with the same state, region nest and stack), with their ranks
// and thread counts, outliers first. merge does the same with records
// written earlier, merged classes and core files.
//
// By default the state is summarized: threads with the same state and the
// same nest of regions are one line. -threads lists every thread, -thread
// GTID one (repeatable), -vars the display control variables and
// -breakpoints the runtime's breakpoint functions; -json prints a JSON
// snapshot (a summary with several cores or -summary).
//
// Exit status: 0 on success, 1 on an error (job: also when ranks could not
// be read, after printing the others), 2 on a usage error, 130 when
// interrupted (Ctrl-C cancels the work under way; job first asks its
// collectors to let their ranks go).
//
// The program must use LLVM's OpenMP runtime; states and task frames need it
// to have been started with OMP_DEBUG=enabled.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(report(os.Stderr, err))
}

// report prints err (if any) and returns the exit status it stands for.
func report(w io.Writer, err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(w, "ompdtool: %s\n\n%s", ue.msg, ue.usage)
		return 2
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(w, "ompdtool: interrupted")
		return 130
	}
	fmt.Fprintln(w, "ompdtool:", err)
	return 1
}

// usageError is a command line the tool cannot run: exit status 2, with
// the usage of the mode it was for.
type usageError struct {
	msg, usage string
}

func (e *usageError) Error() string { return e.msg }

// run runs the command line args (without the program name), writing
// results to stdout and progress to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	o.init(stderr)
	fs := o.flagSet("", 0)
	rest, err := parseFlags(fs, args, true)
	if errors.Is(err, errHelp) {
		return writeUsage(stdout, "")
	}
	if err != nil {
		return usagef("", "%v", err)
	}
	if len(rest) == 0 {
		return usagef("", "no mode given")
	}
	mode, rest := rest[0], rest[1:]
	if mode == "help" {
		if len(rest) > 1 {
			return usagef("", "help takes at most one mode")
		}
		m := ""
		if len(rest) == 1 {
			m = rest[0]
			if _, ok := modes[m]; !ok {
				return usagef("", "unknown mode %q", m)
			}
		}
		return writeUsage(stdout, m)
	}
	md, ok := modes[mode]
	if !ok {
		return usagef("", "unknown mode %q", mode)
	}
	fs = o.flagSet(mode, md.flags)
	// Live programs' arguments follow "--" untouched; other modes take
	// flags between their arguments too.
	rest, err = parseFlags(fs, rest, md.live)
	if errors.Is(err, errHelp) {
		return writeUsage(stdout, mode)
	}
	if err != nil {
		return usagef(mode, "%v", err)
	}
	if err := o.check(mode, md); err != nil {
		return err
	}
	err = md.run(ctx, &o, rest, stdout)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// Whatever failed, it failed because the work was cut short
		// (a download cancelled, a process stopped waiting).
		err = fmt.Errorf("%w: %v", ctx.Err(), err)
	}
	return err
}

func usagef(mode, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), usage: usageText(mode)}
}
