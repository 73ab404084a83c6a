package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/target/delve"
)

// liveOptions are the target/delve options the flags ask for; ctx bounds
// the debug-file searches (Ctrl-C cancels a download, as in core mode).
func (o *options) liveOptions(ctx context.Context) []delve.Option {
	opts := []delve.Option{delve.WithDebuginfod(o.debuginfod()), delve.WithDebugContext(ctx)}
	if len(o.debugDirs) > 0 {
		opts = append(opts, delve.WithDebugDirs(o.debugDirs...))
	}
	// A launched program's runtime tracks states and calls its breakpoint
	// functions only with OMP_DEBUG=enabled; -env can override it.
	return append(opts, delve.WithExtraEnv(append([]string{"OMP_DEBUG=enabled"}, o.env...)...))
}

// program returns the command line of a program to launch.
func program(mode string, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, usagef(mode, "no program given")
	}
	return args, nil
}

// runAttach attaches to a process, prints its OpenMP state and detaches,
// leaving it running.
func runAttach(ctx context.Context, o *options, args []string, out io.Writer) error {
	if len(args) != 1 {
		return usagef("attach", "want one process id, got %d arguments", len(args))
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil || pid <= 0 {
		return usagef("attach", "bad process id %q", args[0])
	}
	p, err := delve.Attach(ctx, pid, o.liveOptions(ctx)...)
	if err != nil {
		return err
	}
	err = o.inspect(ctx, p, out)
	if derr := p.Detach(false); err == nil {
		err = derr
	}
	return err
}

// runLaunch starts a program, runs it to a function (stopme by default),
// prints its OpenMP state and kills it.
func runLaunch(ctx context.Context, o *options, args []string, out io.Writer) error {
	prog, err := program("launch", args)
	if err != nil {
		return err
	}
	p, err := delve.Launch(ctx, prog, o.liveOptions(ctx)...)
	if err != nil {
		return err
	}
	defer p.Kill()
	o.progressf("running %s until it calls %s", prog[0], o.brk)
	stops, err := p.RunToFunction(ctx, o.brk)
	if errors.Is(err, delve.ErrExited) {
		return fmt.Errorf("launch: the program ended without reaching %s: %w", o.brk, err)
	}
	if err != nil {
		return fmt.Errorf("launch: running to %s: %w", o.brk, err)
	}
	if !o.json {
		for _, s := range stops {
			fmt.Fprintf(out, "Stopped at %s (%#x) in lwp %d of process %d.\n\n", o.brk, s.Addr, s.TID, p.Pid())
		}
	}
	return o.inspect(ctx, p, out)
}

// eventLine is an event as -json prints it.
type eventLine struct {
	Event      string `json:"event"`
	LWP        uint64 `json:"lwp"`
	GTID       *int   `json:"gtid,omitempty"`
	Parallel   string `json:"parallel,omitempty"`
	Level      *int   `json:"level,omitempty"`
	NumThreads *int   `json:"num_threads,omitempty"`
	Task       string `json:"task,omitempty"`
	TaskKind   string `json:"task_kind,omitempty"`
	Function   string `json:"function,omitempty"`
	FunctionPC uint64 `json:"function_pc,omitempty"`
	// NoFunction says why the region or task has no function.
	NoFunction  string `json:"function_unavailable,omitempty"`
	Unavailable string `json:"unavailable,omitempty"`
}

// runEvents starts a program and prints the OpenMP runtime's parallel,
// task and thread begin and end events as they happen, until it exits.
func runEvents(ctx context.Context, o *options, args []string, out io.Writer) error {
	prog, err := program("events", args)
	if err != nil {
		return err
	}
	asJSON := o.json
	p, err := delve.Launch(ctx, prog, o.liveOptions(ctx)...)
	if err != nil {
		return err
	}
	defer p.Kill()
	as, err := p.OpenRuntime(ctx)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	defer as.Close()
	if _, err := as.Breakpoints(); errors.Is(err, ompd.ErrUnsupported) {
		// GCC's libgomp: no OMPD, no breakpoint functions.
		return fmt.Errorf("events: %s has no breakpoint functions to stop at, so its events cannot be watched: %w", as.Runtime().Name, err)
	}
	enc := json.NewEncoder(out)
	err = p.WatchEvents(ctx, as, func(ev delve.Event) bool {
		l := describe(ev)
		if asJSON {
			_ = enc.Encode(l)
			return true
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%-15s lwp %-8d", l.Event, l.LWP)
		if l.GTID != nil {
			fmt.Fprintf(&b, " gtid %-4d", *l.GTID)
		}
		if l.Parallel != "" {
			fmt.Fprintf(&b, " %s level %d, %d thread%s", l.Parallel, *l.Level, *l.NumThreads, plural(*l.NumThreads))
		}
		if l.Task != "" {
			fmt.Fprintf(&b, " %s %s", l.Task, l.TaskKind)
		}
		if l.Function != "" {
			fmt.Fprintf(&b, " %s", l.Function)
		}
		if l.NoFunction != "" {
			b.WriteString(" (function unavailable)") // -json says why
		}
		if l.Unavailable != "" {
			fmt.Fprintf(&b, " (%s)", l.Unavailable)
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
		return true
	})
	if err != nil {
		return err
	}
	status, _ := p.ExitStatus()
	if asJSON {
		return enc.Encode(map[string]int{"exit_status": status})
	}
	fmt.Fprintf(out, "process %d exited with status %d\n", p.Pid(), status)
	return nil
}

func describe(ev delve.Event) eventLine {
	l := eventLine{Event: ev.Kind.String(), LWP: ev.TID}
	if ev.Err != nil {
		l.Unavailable = ev.Err.Error()
	}
	if ev.Thread.AddressSpace() == nil {
		return l
	}
	g := ev.Thread.GTID()
	l.GTID = &g
	var fn ompd.Function
	var fnErr error
	switch ev.Kind {
	case delve.ParallelBegin, delve.ParallelEnd:
		if ev.Parallel.AddressSpace() == nil {
			return l
		}
		lv, err := ev.Parallel.Level()
		n, err2 := ev.Parallel.NumThreads()
		if err = errors.Join(err, err2); err != nil {
			l.Unavailable = err.Error()
			return l
		}
		l.Parallel, l.Level, l.NumThreads = ev.Parallel.String(), &lv, &n
		fn, fnErr = ev.Parallel.Function()
	case delve.TaskBegin, delve.TaskEnd:
		if ev.Task.AddressSpace() == nil {
			return l
		}
		l.Task = ev.Task.String()
		if k, err := ev.Task.Kind(); err == nil {
			l.TaskKind = k.String()
		}
		fn, fnErr = ev.Task.Function()
	default:
		return l
	}
	switch {
	case fnErr != nil:
		l.NoFunction = fnErr.Error()
	case fn.Addr != 0:
		l.Function, l.FunctionPC = funcName(fn.Symbol, fn.Addr), fn.Addr
	}
	return l
}
