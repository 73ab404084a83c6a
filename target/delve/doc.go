// Package delve reads live OpenMP processes for ompd-go through Delve
// (github.com/go-delve/delve, pinned at v1.27.2: its pkg/proc is not a
// stable API). It works around two bugs of Delve's native backend, on that
// version only: a memory thread that outlives its thread (memthread.md is
// the report for Delve), and a stop that waits forever when a thread exits
// while the process is being stopped (wedge.md). With another version,
// Launch, Attach and Continue fail with ErrDelveVersion.
//
// The package has two parts, apart in types and files:
//
//   - the adapter, [Target]: target.Target (and target.Symbolizer,
//     target.BitFieldLocator, target.ObjectLister) over a stopped process
//     that Delve controls, whoever drives it. [New] wraps the target of an
//     existing Delve session (target.go, symbols.go, registers.go).
//   - the session driver, [Process]: a process this package started
//     ([Launch]) or attached to ([Attach]), with the controls a debugger
//     needs: Continue, breakpoints, RunTo, Detach, Kill, and
//     [Process.WatchEvents], which reports the OpenMP runtime's parallel,
//     task and thread events as they happen. It embeds the Target that
//     reads it (process.go, events.go, start_linux.go, wedge.go).
//
// The options (options.go) are shared: the debug-information ones
// configure the adapter, the others the program Launch starts. Every
// reach into Delve's unexported state, the workarounds of its bugs, is in
// workarounds.go, gated on the Delve version they were verified with.
//
//	p, err := delve.Launch(ctx, []string{"./prog"}, delve.WithExtraEnv("OMP_DEBUG=enabled"))
//	...
//	defer p.Kill()
//	_, err = p.RunToFunction(ctx, "stopme")
//	as, err := ompd.Open(p)
//	threads, err := ompd.Collect(as.Threads())
//
// Symbols (global and local, from .symtab and .dynsym of the executable and
// every library Delve lists as loaded, at its load bias), DWARF type sizes
// and member offsets, and thread-local variables (through glibc's thread
// descriptors from each thread's fs_base) come from package
// internal/objfile; Delve supplies the process: memory, threads and their
// registers, the list of loaded libraries, breakpoints and execution.
//
// # Environment of launched programs
//
// Delve 1.27's native.Launch gives the program the debugger's own
// environment and no way to change it. Launch therefore starts the program
// itself (fork and execve with PTRACE_TRACEME, then a detach that leaves it
// stopped by SIGSTOP right after execve) with the environment, working
// directory and standard files of its options ([WithEnv], [WithExtraEnv],
// [WithDir], [WithStdio]), attaches Delve to it, and runs it to its entry
// point, where the dynamic loader has loaded its libraries.
//
// # Caches
//
// While the process stays stopped, a Target caches memory (by page), the
// thread list and the loaded objects. Process.Continue (and everything that
// runs the process) drops the caches; a Target from New must be told with
// Target.Refresh. An ompd.AddressSpace over the Target caches too: call its
// Refresh after each resume as well, or use [Process.ContinueAndRefresh].
//
// # Concurrency
//
// Delve's proc package is not safe for concurrent use. Every method of
// Target and Process takes one mutex, so they are safe for concurrent use;
// while Continue runs, the others wait for the process to stop (Kill
// excepted).
//
// # Child processes
//
// Delve waits for its process with wait4(-1, __WALL): while a Process runs,
// Delve may collect the exit of other children of the calling program, and
// a wait for a traced child by anyone else (exec.Cmd.Wait, os.Process.Wait)
// consumes the ptrace stops that Delve waits for. Programs that use this
// package should not wait for a process while it is attached, and should not
// run other child processes while a Process runs.
//
// The package supports Linux on amd64 only.
package delve
