package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

var errHelp = flag.ErrHelp

// options are every flag of every mode; a mode's flag set binds the ones it
// takes, so that a flag means the same before and after the mode.
type options struct {
	stderr io.Writer

	json      bool
	quiet     bool
	debugDirs []string
	sysroot   string
	fileMap   map[string]string

	// the views (core, attach, launch)
	threads     bool
	threadGTIDs []int
	vars        bool
	breakpoints bool
	summary     bool
	bt          bool // unwind every thread's stack
	btRuntime   bool // with bt: show the runtime's frames one by one

	follow bool // connect: print every stop of the session

	// whole jobs (collect, merge, job)
	job      string // collect: JOBID or JOBID.STEP
	node     string // collect: the node's name
	merged   bool   // collect: one line of merged classes
	chunk    int    // collect: split records into lines of this many bytes
	parallel int    // collect: ranks read at once
	dot      bool   // merge, job: a Graphviz prefix tree
	depth    int    // merge, job: compare this many outermost frames
	exe      string // merge: the program of core files
	sbcast   bool   // job: ship the tool with sbcast

	// live programs (launch, events)
	env envFlags
	brk string
}

func (o *options) init(stderr io.Writer) {
	o.stderr = stderr
	o.brk = "stopme"
	o.parallel = 4
}

// flag groups a mode can take.
const (
	flagsCommon  = 1 << iota // -json, -q, -debug-dir, -sysroot, -file-map
	flagsView                // -threads, -thread, -vars, -breakpoints, -summary, -bt, -bt-runtime
	flagsProgram             // -env
	flagsBreak               // -break
	flagsFollow              // -follow
	flagsCollect             // -job, -node, -merged
	flagsMerge               // -dot, -exe
	flagsJob                 // -dot, -sbcast, -parallel
)

// mode is one way to run the tool.
type mode struct {
	synopsis string
	about    string
	flags    int
	live     bool // a live process: -sysroot and -file-map do not apply
	run      func(ctx context.Context, o *options, args []string, out io.Writer) error
}

// modes are filled in init (their run functions refer to usageText, which
// reads modes).
var modes map[string]mode

func init() {
	modes = map[string]mode{
		"core": {
			synopsis: "core [flags] EXE CORE...",
			about: "Read core files of the program EXE (one per MPI rank when there are several:\n" +
				"their threads are grouped together, and each group names its ranks, the\n" +
				"position of their cores on the command line). A core compressed with zstd\n" +
				"(.zst, as systemd-coredump keeps them) is read as it is.",
			flags: flagsCommon | flagsView,
			run:   runCore,
		},
		"attach": {
			synopsis: "attach [flags] PID",
			about:    "Attach to a running process, print its state and detach, leaving it running.",
			flags:    flagsCommon | flagsView,
			live:     true,
			run:      runAttach,
		},
		"connect": connectMode(),
		"collect": collectMode(),
		"merge":   mergeMode(),
		"job":     jobMode(),
		"demo":    demoMode(),
		"launch": {
			synopsis: "launch [flags] [-env KEY=VALUE]... [-break FUNC] [--] PROG [ARGS...]",
			about: "Start PROG with OMP_DEBUG=enabled, run it until it calls FUNC, print its\n" +
				"state and kill it.",
			flags: flagsCommon | flagsView | flagsProgram | flagsBreak,
			live:  true,
			run:   runLaunch,
		},
		"events": {
			synopsis: "events [flags] [-env KEY=VALUE]... [--] PROG [ARGS...]",
			about: "Start PROG with OMP_DEBUG=enabled and print the parallel regions, tasks and\n" +
				"threads of the OpenMP runtime beginning and ending, until it exits.",
			flags: flagsCommon | flagsProgram,
			live:  true,
			run:   runEvents,
		},
	}
}

// flagSet returns the flags of mode (groups which); mode "" has every flag
// (before the mode any may be given; the mode checks they apply).
func (o *options) flagSet(mode string, which int) *flag.FlagSet {
	name := "ompdtool"
	if mode == "" {
		which = flagsCommon | flagsView | flagsProgram | flagsBreak | flagsFollow | flagsCollect | flagsMerge | flagsJob
	} else {
		name += " " + mode
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if which&flagsCommon != 0 {
		fs.BoolVar(&o.json, "json", o.json, "print JSON instead of text")
		fs.BoolVar(&o.quiet, "q", o.quiet, "say nothing on standard error about work under way")
		fs.Func("debug-dir", "look for separate debug files under `DIR` instead of /usr/lib/debug (repeatable)", func(s string) error {
			o.debugDirs = append(o.debugDirs, s)
			return nil
		})
		fs.StringVar(&o.sysroot, "sysroot", o.sysroot, "core files and connect: find the libraries a core or a Delve server names under `DIR` (the root of the machine it comes from)")
		fs.Func("file-map", "core files and connect: use `CORE_PATH=LOCAL_PATH` for a file the core or a Delve server names (repeatable)", func(s string) error {
			k, v, ok := strings.Cut(s, "=")
			if !ok || k == "" || v == "" {
				return fmt.Errorf("want CORE_PATH=LOCAL_PATH, got %q", s)
			}
			if o.fileMap == nil {
				o.fileMap = map[string]string{}
			}
			o.fileMap[k] = v
			return nil
		})
	}
	if which&flagsView != 0 {
		fs.BoolVar(&o.threads, "threads", o.threads, "list every thread with its regions, tasks and ICVs")
		fs.Func("thread", "show the thread of global thread id `GTID` in full (repeatable)", func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return fmt.Errorf("want a global thread id, got %q", s)
			}
			o.threadGTIDs = append(o.threadGTIDs, n)
			return nil
		})
		fs.BoolVar(&o.vars, "vars", o.vars, "print the display control variables (OMP_DISPLAY_ENV)")
		fs.BoolVar(&o.breakpoints, "breakpoints", o.breakpoints, "print the runtime's breakpoint functions")
		fs.BoolVar(&o.summary, "summary", o.summary, "with -json: print the thread groups instead of the whole snapshot")
		fs.BoolVar(&o.bt, "bt", o.bt, "unwind every thread's stack: group threads by where they stand, print backtraces\n"+
			"with their tasks and regions with -threads or -thread (with -json: a frames list per thread)")
		fs.BoolVar(&o.btRuntime, "bt-runtime", o.btRuntime, "with -bt: show the OpenMP runtime's frames one by one instead of folded into the call")
	}
	if which&flagsProgram != 0 {
		fs.Var(&o.env, "env", "add `KEY=VALUE` to the program's environment (repeatable)")
	}
	if which&flagsFollow != 0 {
		fs.BoolVar(&o.follow, "follow", o.follow, "connect: print the state again at each stop of the session, until the program exits")
	}
	if which&flagsCollect != 0 {
		fs.StringVar(&o.job, "job", o.job, "collect: the Slurm job (`JOBID`, or JOBID.STEP to ask scontrol listpids) whose ranks to read")
		fs.StringVar(&o.node, "node", o.node, "collect: this node's Slurm name (`NAME`; default SLURMD_NODENAME, else the host name)")
		fs.BoolVar(&o.merged, "merged", o.merged, "collect: write one line of merged classes instead of a line per rank")
		fs.IntVar(&o.chunk, "chunk", o.chunk, "collect: split each line into lines of at most `BYTES` bytes, each starting with '+', the last\n"+
			"with '=' (for launchers that split long lines: srun forwards output in 1 KiB pieces); 0: do not split")
	}
	if which&(flagsCollect|flagsJob) != 0 {
		fs.IntVar(&o.parallel, "parallel", o.parallel, "collect, job: read up to `N` ranks at once (on each node)")
	}
	if which&(flagsMerge|flagsJob) != 0 {
		fs.BoolVar(&o.dot, "dot", o.dot, "merge, job: print the classes as a Graphviz DOT prefix tree of their stacks")
		fs.IntVar(&o.depth, "depth", o.depth, "merge, job: threads whose stacks share their `N` outermost frames are one class (0: the whole stack)")
	}
	if which&flagsMerge != 0 {
		fs.StringVar(&o.exe, "exe", o.exe, "merge: the program `EXE` of the core files among the inputs")
	}
	if which&flagsJob != 0 {
		fs.BoolVar(&o.sbcast, "sbcast", o.sbcast, "job: copy this tool to each node with sbcast (when it is not on a shared file system)")
	}
	if which&flagsBreak != 0 {
		fs.StringVar(&o.brk, "break", o.brk, "launch: stop the program when it calls `FUNC`")
	}
	return fs
}

// parseFlags parses args with fs. With stopAtArg it stops at the first
// argument that is not a flag (or after "--") and returns it and the rest;
// otherwise flags may also follow arguments, up to a "--".
func parseFlags(fs *flag.FlagSet, args []string, stopAtArg bool) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if stopAtArg || len(rest) == 0 || (consumed > 0 && args[consumed-1] == "--") {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// check rejects flags that do not apply to mode.
func (o *options) check(name string, m mode) error {
	if m.live && (o.sysroot != "" || len(o.fileMap) > 0) {
		return usagef(name, "-sysroot and -file-map apply to core files and connect: a process this tool runs has its files on this machine")
	}
	if m.flags&flagsView == 0 && (o.threads || len(o.threadGTIDs) > 0 || o.vars || o.breakpoints || o.summary) {
		return usagef(name, "%s prints events: -threads, -thread, -vars, -breakpoints and -summary do not apply", name)
	}
	if m.flags&flagsProgram == 0 && len(o.env) > 0 {
		return usagef(name, "-env applies to launch and events")
	}
	if m.flags&flagsFollow == 0 && o.follow {
		return usagef(name, "-follow applies to connect")
	}
	if m.flags&flagsCollect == 0 && (o.job != "" || o.node != "" || o.merged || o.chunk != 0) {
		return usagef(name, "-job, -node, -merged and -chunk apply to collect")
	}
	if m.flags&(flagsCollect|flagsJob) == 0 && o.parallel != 4 {
		return usagef(name, "-parallel applies to collect and job")
	}
	if o.parallel < 1 {
		return usagef(name, "-parallel %d: want 1 or more", o.parallel)
	}
	if m.flags&(flagsMerge|flagsJob) == 0 && (o.dot || o.depth != 0) {
		return usagef(name, "-dot and -depth apply to merge and job")
	}
	if o.depth < 0 {
		return usagef(name, "-depth %d: want 0 or more frames", o.depth)
	}
	if m.flags&flagsMerge == 0 && o.exe != "" {
		return usagef(name, "-exe applies to merge")
	}
	if m.flags&flagsJob == 0 && o.sbcast {
		return usagef(name, "-sbcast applies to job")
	}
	if m.flags&flagsBreak == 0 && o.brk != "stopme" {
		return usagef(name, "-break applies to launch")
	}
	return nil
}

// usageText is the usage of mode, or of the whole tool for "".
func usageText(name string) string {
	var b strings.Builder
	var o options
	o.init(io.Discard)
	if name != "" {
		m := modes[name]
		where := fmt.Sprintf("before or after %q, and between its arguments up to \"--\"", name)
		if m.live {
			// parseFlags stops at a live mode's first argument: what
			// follows is the program's (or the process id).
			where = fmt.Sprintf("before or after %q, before its arguments", name)
		}
		fmt.Fprintf(&b, "usage: ompdtool %s\n\n%s\n\nFlags (%s):\n", m.synopsis, m.about, where)
		printFlags(&b, o.flagSet(name, m.flags), func(f *flag.Flag) bool {
			// Accepted so that check can say why they do not apply,
			// but not offered.
			return m.live && (f.Name == "sysroot" || f.Name == "file-map")
		})
		return b.String()
	}
	names := make([]string, 0, len(modes))
	for n := range modes {
		names = append(names, n)
	}
	sort.Strings(names)
	b.WriteString("usage: ompdtool [flags] MODE [flags] ARGS\n\nModes:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  ompdtool %s\n", modes[n].synopsis)
	}
	b.WriteString("  ompdtool help [MODE]\n\n" +
		"Without flags a summary is printed: threads with the same state and the same\n" +
		"nest of parallel regions make one line. Debug files are also fetched from the\n" +
		"debuginfod servers DEBUGINFOD_URLS names. Exit status: 0 success, 1 error,\n" +
		"2 usage error, 130 interrupted.\n\nFlags (not every mode takes every flag; see ompdtool help MODE):\n")
	fs := o.flagSet("", 0)
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return b.String()
}

// printFlags writes the defaults of fs as flag.PrintDefaults does, without
// the flags hide says to leave out.
func printFlags(w io.Writer, fs *flag.FlagSet, hide func(*flag.Flag) bool) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if !hide(f) {
			shown.Var(f.Value, f.Name, f.Usage)
		}
	})
	shown.SetOutput(w)
	shown.PrintDefaults()
}

func writeUsage(w io.Writer, mode string) error {
	_, err := io.WriteString(w, usageText(mode))
	return err
}

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

// fileOptions are the options of the -debug-dir, -sysroot and -file-map
// flags, made by a target package's constructors of its own Option type.
func fileOptions[O any](o *options, debugDirs func(...string) O, sysroot func(string) O, fileMap func(map[string]string) O) []O {
	var opts []O
	if len(o.debugDirs) > 0 {
		opts = append(opts, debugDirs(o.debugDirs...))
	}
	if o.sysroot != "" {
		opts = append(opts, sysroot(o.sysroot))
	}
	if len(o.fileMap) > 0 {
		opts = append(opts, fileMap(o.fileMap))
	}
	return opts
}
