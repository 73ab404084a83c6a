// Package delverpc reads the OpenMP process that a Delve server holds, over
// Delve's JSON-RPC API (version 2: the server that "dlv connect" and
// editors' remote-attach sessions use), so that ompd-go can show the
// OpenMP state of the program a user is debugging in dlv, at the user's
// stops, without disturbing the session.
//
// Start the server as usual with several clients allowed:
//
//	dlv exec --headless --accept-multiclient --api-version 2 --listen 127.0.0.1:4040 ./prog
//	dlv attach --headless --accept-multiclient --api-version 2 --listen 127.0.0.1:4040 PID
//
// then, while the user's client has the program stopped:
//
//	t, err := delverpc.Dial(ctx, "127.0.0.1:4040")
//	...
//	defer t.Close()
//	as, err := ompd.Open(t)
//	...
//	// after the user's next stop:
//	if changed, err := t.Update(ctx); err == nil && changed {
//		as.Refresh()
//	}
//
// # What it asks the server
//
// Only requests that read: GetVersion (first: a server of another API
// version is refused, and its version is never changed), State (one
// that waits for the stop, given a second to answer; never with
// NonBlocking, which wedges Delve 1.27's server if a core dump is under
// way: dumpstate.md), DumpWait (with no wait: whether the server is
// writing a core, when State did not answer), ListThreads
// through State, ListRegisters (fs_base, the thread pointer),
// ListBreakpoints (hit counts, to tell stops apart), ListDynamicLibraries,
// ExamineMemory, IsMulticlient and, for a server on a core file that lists
// no libraries, FindLocation of main (where the executable is loaded). It never continues, halts, steps, switches threads,
// sets breakpoints, writes memory or detaches: WriteMemory fails with
// target.ErrReadOnly, and Close only closes the connection.
//
// Symbols (global and local, from .symtab and .dynsym), DWARF types and
// thread-local storage come from the executable and the libraries
// themselves, opened locally with package internal/objfile at the load
// biases the server reports (the executable's from the dynamic linker's
// link_map list). For a server on another machine, WithSysroot,
// WithFileMap and WithSearchPath say where its files are here, and
// WithExecutable names the program; a local file whose GNU build-id
// differs from the one in the process's memory is refused. Stripped
// libraries take their symbols and DWARF from separate debug files
// (WithDebugDirs, WithDebuginfod, WithDebuginfodFromEnv), as in
// target/core.
//
// # Stops
//
// A Target answers for one stop and caches what it read (memory by page,
// threads, objects). Update asks the server for its state and reports
// whether the process stopped again since; WaitStop polls it until the
// next stop, to follow a session. ReadMemory and the others never ask on
// their own, so a Target does not slow down the reads of a stop.
// While the user's program runs, Update fails with ErrRunning after a
// second, and every read at once (a Delve server holds its process lock
// while the program runs, and would answer a read only at the next
// stop); once the program exited, with ErrExited.
//
// # Failures
//
// Every request is bounded by a timeout (WithTimeout, default 10 s). A
// server that does not answer gives ErrTimeout, and later requests fail at
// once with it until Update gets an answer; a connection that is gone (the
// server exited, or the address is not a Delve server) gives
// ErrDisconnected; an error the server returned is a *ServerError. A
// server started without --accept-multiclient gives ErrNotMulticlient (it
// serves one client only, and ends when that client leaves). A Target is
// safe for concurrent use.
//
// The package supports linux/amd64 programs (fs_base as the thread
// pointer, glibc's thread-local storage layout).
package delverpc
