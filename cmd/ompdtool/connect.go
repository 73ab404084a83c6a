package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/ompd-go/ompd/target/delverpc"
)

// connectMode reads the process a headless Delve server holds, at the stop
// the user's debugger left it in, and leaves the session as it was.
func connectMode() mode {
	return mode{
		synopsis: "connect [flags] [-follow] HOST:PORT [EXE]",
		about: "Print the state of the process that a Delve server holds, at the stop its\n" +
			"user left it in (the server of \"dlv --headless --accept-multiclient\n" +
			"--api-version 2\", as dlv connect and editors use it). Nothing is changed:\n" +
			"the program stays stopped, the user's breakpoints and thread stay as they\n" +
			"were. EXE names the program's executable when the server's machine is\n" +
			"another one (with -sysroot or -file-map for its libraries). With -follow it\n" +
			"waits for the session's next stop and prints it too, until the program\n" +
			"exits (or Ctrl-C); a stop it cannot read (the program's first, before its\n" +
			"runtime is loaded) is named on standard error and the next one awaited.",
		flags: flagsCommon | flagsView | flagsFollow,
		run:   runConnect,
	}
}

// runConnect prints the OpenMP state of the process the Delve server at
// HOST:PORT holds.
func runConnect(ctx context.Context, o *options, args []string, out io.Writer) error {
	if len(args) < 1 || len(args) > 2 {
		return usagef("connect", "want HOST:PORT [EXE], got %d arguments", len(args))
	}
	if _, _, err := net.SplitHostPort(args[0]); err != nil {
		return usagef("connect", "bad server address %q: %v", args[0], err)
	}
	opts := []delverpc.Option{delverpc.WithDebuginfod(o.debuginfod()), delverpc.WithDebugContext(ctx)}
	opts = append(opts, fileOptions(o, delverpc.WithDebugDirs, delverpc.WithSysroot, delverpc.WithFileMap)...)
	if len(args) == 2 {
		opts = append(opts, delverpc.WithExecutable(args[1]))
	}
	t, err := delverpc.Dial(ctx, args[0], opts...)
	if err != nil {
		return err
	}
	defer t.Close()
	_, err = t.Update(ctx)
	if o.follow && errors.Is(err, delverpc.ErrRunning) {
		o.progressf("the program runs: waiting for the session's next stop")
		err = t.WaitStop(ctx, 0)
	}
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	for {
		o.progressf("process %d, stopped in thread %d", t.Pid(), t.CurrentThread())
		err := o.inspect(ctx, t, out)
		if !o.follow || err != nil && ctx.Err() != nil {
			return err
		}
		if err != nil {
			// One stop that cannot be read (the first stop of "dlv
			// exec", before the runtime is loaded; a stop the user
			// left while it was read) does not end the following: a
			// server that is gone or hung ends it at the next wait.
			o.progressf("this stop could not be read: %v", err)
		}
		o.progressf("waiting for the session's next stop")
		err = t.WaitStop(ctx, 0)
		if errors.Is(err, delverpc.ErrExited) {
			o.progressf("%v", err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
	}
}
