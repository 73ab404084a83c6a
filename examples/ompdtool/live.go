package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/target/delve"
)

// envFlags collects repeated -env KEY=VALUE flags.
type envFlags []string

func (e *envFlags) String() string { return strings.Join(*e, " ") }

func (e *envFlags) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("-env %q: want KEY=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}

// liveFlags parses the flags of the launch and events modes, up to "--",
// and returns the program's command line after it.
func liveFlags(mode string, args []string, setup func(*flag.FlagSet)) ([]string, []string, error) {
	fs := flag.NewFlagSet("ompdtool "+mode, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var env envFlags
	fs.Var(&env, "env", "KEY=VALUE added to the program's environment (repeatable)")
	if setup != nil {
		setup(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, fmt.Errorf("%s: %v\n%s", mode, err, usage)
	}
	prog := fs.Args()
	if len(prog) == 0 {
		return nil, nil, fmt.Errorf("%s: no program given\n%s", mode, usage)
	}
	// The runtime tracks states and calls its breakpoint functions only
	// with OMP_DEBUG=enabled; -env can override it.
	return prog, append([]string{"OMP_DEBUG=enabled"}, env...), nil
}

// runAttach attaches to pid, prints its OpenMP state and detaches, leaving
// it running.
func runAttach(ctx context.Context, args []string, asJSON bool, out io.Writer) error {
	if len(args) != 1 {
		return errors.New(usage)
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil || pid <= 0 {
		return fmt.Errorf("attach: bad pid %q\n%s", args[0], usage)
	}
	p, err := delve.Attach(pid)
	if err != nil {
		return err
	}
	err = inspect(ctx, p, asJSON, out)
	if derr := p.Detach(false); err == nil {
		err = derr
	}
	return err
}

// runLaunch starts a program, runs it to a function (stopme by default),
// prints its OpenMP state and kills it.
func runLaunch(ctx context.Context, args []string, asJSON bool, out io.Writer) error {
	brk := "stopme"
	prog, env, err := liveFlags("launch", args, func(fs *flag.FlagSet) {
		fs.StringVar(&brk, "break", brk, "function to stop the program at")
	})
	if err != nil {
		return err
	}
	p, err := delve.Launch(prog, delve.WithExtraEnv(env...))
	if err != nil {
		return err
	}
	defer p.Kill()
	stops, err := p.RunToFunction(ctx, brk)
	if errors.Is(err, delve.ErrExited) {
		return fmt.Errorf("launch: the program ended without reaching %s: %w", brk, err)
	}
	if err != nil {
		return fmt.Errorf("launch: running to %s: %w", brk, err)
	}
	if !asJSON {
		for _, s := range stops {
			fmt.Fprintf(out, "Stopped at %s (%#x) in lwp %d of process %d.\n\n", brk, s.Addr, s.TID, p.Pid())
		}
	}
	return inspect(ctx, p, asJSON, out)
}

// eventLine is an event as -json prints it.
type eventLine struct {
	Event       string `json:"event"`
	LWP         uint64 `json:"lwp"`
	GTID        *int   `json:"gtid,omitempty"`
	Parallel    string `json:"parallel,omitempty"`
	Level       *int   `json:"level,omitempty"`
	NumThreads  *int   `json:"num_threads,omitempty"`
	Task        string `json:"task,omitempty"`
	TaskKind    string `json:"task_kind,omitempty"`
	Function    string `json:"function,omitempty"`
	Unavailable string `json:"unavailable,omitempty"`
}

// runEvents starts a program and prints the OpenMP runtime's parallel,
// task and thread begin and end events as they happen, until it exits.
func runEvents(ctx context.Context, args []string, asJSON bool, out io.Writer) error {
	prog, env, err := liveFlags("events", args, nil)
	if err != nil {
		return err
	}
	p, err := delve.Launch(prog, delve.WithExtraEnv(env...))
	if err != nil {
		return err
	}
	defer p.Kill()
	as, err := p.OpenRuntime(ctx)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	defer as.Close()
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
	switch ev.Kind {
	case delve.ParallelBegin, delve.ParallelEnd:
		if ev.Parallel.AddressSpace() == nil {
			return l
		}
		l.Parallel = ev.Parallel.String()
		lv, _ := ev.Parallel.Level()
		n, _ := ev.Parallel.NumThreads()
		l.Level, l.NumThreads = &lv, &n
		if f, err := ev.Parallel.Function(); err == nil && f.Addr != 0 {
			l.Function = funcName(f.Symbol, f.Addr)
		}
	case delve.TaskBegin, delve.TaskEnd:
		if ev.Task.AddressSpace() == nil {
			return l
		}
		l.Task = ev.Task.String()
		if k, err := ev.Task.Kind(); err == nil {
			l.TaskKind = k.String()
		}
		if f, err := ev.Task.Function(); err == nil && f.Addr != 0 {
			l.Function = funcName(f.Symbol, f.Addr)
		}
	}
	return l
}
