package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// exec runs the tool in-process as main does and returns its exit status,
// standard output and standard error.
func execTool(ctx context.Context, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := report(&errOut, run(ctx, args, &out, &errOut))
	return code, out.String(), errOut.String()
}

// flagNames are the flags of a flag set, as "-name".
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "-"+f.Name) })
	return names
}

// TestHelp: -h, --help and help print the usage on standard output, with
// every flag (those the flag sets define, not a list kept by hand), and
// exit 0; each mode has its own, with the flags it takes, but not
// -sysroot and -file-map in the modes that refuse them; and where its
// flags may go is what the parser does.
func TestHelp(t *testing.T) {
	var o options
	o.init(io.Discard)
	allFlags := flagNames(o.flagSet("", 0))
	require.Contains(t, allFlags, "-bt-runtime")
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {"help"}} {
		code, out, errOut := execTool(context.Background(), args...)
		assert.Equal(t, 0, code, "%v", args)
		assert.Empty(t, errOut, "%v", args)
		for _, f := range allFlags {
			assert.Regexp(t, `(?m)^  `+f+`\b`, out, "%v lists %s", args, f)
		}
		for m := range modes {
			assert.Contains(t, out, "ompdtool "+m+" ", "%v shows mode %s", args, m)
		}
	}
	for m, md := range modes {
		for _, args := range [][]string{{m, "-h"}, {m, "--help"}, {"help", m}, {"-json", m, "-h"}} {
			code, out, _ := execTool(context.Background(), args...)
			assert.Equal(t, 0, code, "%v", args)
			assert.True(t, strings.HasPrefix(out, "usage: ompdtool "+md.synopsis), "%v: %s", args, out)
			assert.Contains(t, out, "-debug-dir", "%v: every mode takes the debug options", args)
			for _, f := range flagNames(o.flagSet(m, md.flags)) {
				refused := md.live && (f == "-sysroot" || f == "-file-map")
				assert.Equal(t, !refused, regexp.MustCompile(`(?m)^  `+f+`\b`).MatchString(out), "%v lists %s: %v", args, f, !refused)
			}
			assert.Equal(t, md.flags&flagsBreak != 0, strings.Contains(out, "\n  -break "), "%v: -break only where it applies", args)
			if md.live {
				assert.Contains(t, out, "Flags (before or after \""+m+"\", before its arguments):", "%v", args)
			} else {
				assert.Contains(t, out, "Flags (before or after \""+m+"\", and between its arguments up to \"--\"):", "%v", args)
			}
		}
	}
	// A live mode's flags end at its first argument (the process id,
	// the program): after it a flag is an argument.
	code, _, errOut := execTool(context.Background(), "attach", "1", "-json")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "want one process id, got 2 arguments")
}

// TestUsageErrors: a command line the tool cannot run exits 2 with the
// reason and the usage on standard error, before touching any file.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no mode given"},
		{[]string{"frobnicate"}, `unknown mode "frobnicate"`},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"core", "-bogus", "a", "b"}, "flag provided but not defined: -bogus"},
		{[]string{"core", "exe"}, "want EXE and CORE"},
		{[]string{"core", "-file-map", "nonsense", "exe", "core"}, "want CORE_PATH=LOCAL_PATH"},
		{[]string{"core", "-thread", "x", "exe", "core"}, "want a global thread id"},
		{[]string{"attach"}, "want one process id"},
		{[]string{"attach", "12x"}, `bad process id "12x"`},
		{[]string{"attach", "-sysroot", "/x", "1"}, "apply to core files"},
		{[]string{"-file-map", "a=b", "launch", "--", "prog"}, "apply to core files"},
		{[]string{"launch"}, "no program given"},
		{[]string{"events", "-threads", "--", "prog"}, "not defined: -threads"},
		{[]string{"-threads", "events", "--", "prog"}, "do not apply"},
		{[]string{"core", "-env", "A=1", "exe", "core"}, "flag provided but not defined: -env"},
		{[]string{"-env", "A=1", "core", "exe", "core"}, "-env applies to launch and events"},
		{[]string{"help", "a", "b"}, "at most one mode"},
		{[]string{"help", "nope"}, `unknown mode "nope"`},
	} {
		code, out, errOut := execTool(context.Background(), c.args...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Empty(t, out, "%v", c.args)
		assert.Contains(t, errOut, c.want, "%v", c.args)
		assert.Contains(t, errOut, "usage: ompdtool", "%v", c.args)
	}
}

// TestFlagsAnywhere: flags before the mode, after it, and between its
// arguments mean the same; "--" ends them.
func TestFlagsAnywhere(t *testing.T) {
	fixtures.Runtime(t)
	stop := fixtures.Core(t, fixtures.Nested)
	var outs []string
	for _, args := range [][]string{
		{"-json", "core", stop.Exe, stop.Core},
		{"core", "-json", stop.Exe, stop.Core},
		{"core", stop.Exe, "-json", stop.Core},
		{"core", stop.Exe, stop.Core, "-json"},
		{"-q", "core", "-json", "--", stop.Exe, stop.Core},
	} {
		code, out, errOut := execTool(context.Background(), args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		require.True(t, strings.HasPrefix(out, "{"), "%v prints JSON", args)
		outs = append(outs, out)
	}
	for _, o := range outs[1:] {
		assert.Equal(t, outs[0], o)
	}
	// After "--", a flag is an argument: here a second core file.
	code, _, errOut := execTool(context.Background(), "core", "--", stop.Exe, stop.Core, "-json")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "rank 1 (-json): core: open -json")
}

// TestMissingFileExit1: an error that is not a usage error exits 1 and
// names what was wrong.
func TestMissingFileExit1(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := execTool(context.Background(), "core", filepath.Join(dir, "exe"), filepath.Join(dir, "nocore"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "nocore")
}

// strippedCore is a core of fixture name built against a stripped runtime.
func strippedCore(t *testing.T, name string) (*fixtures.Stop, *fixtures.StrippedRuntime) {
	t.Helper()
	s := fixtures.StripRuntime(t, fixtures.RuntimeVariant(t, fixtures.VariantOMPD))
	return fixtures.CoreWith(t, s.RuntimeInfo, name), s
}

// TestDebuginfodProgress: a debug file fetched from a debuginfod server
// (DEBUGINFOD_URLS) is announced on standard error with its build-id,
// server and size, and its end too; -q silences it.
func TestDebuginfodProgress(t *testing.T) {
	stop, s := strippedCore(t, fixtures.Nested)
	data, err := os.ReadFile(s.DebugFile)
	require.NoError(t, err)
	id := hex.EncodeToString(s.BuildID)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/buildid/"+id+"/debuginfo" {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "debuginfo", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	t.Setenv("DEBUGINFOD_URLS", srv.URL)
	empty := t.TempDir()

	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	code, out, errOut := execTool(context.Background(), "core", "-debug-dir", empty, stop.Exe, stop.Core)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "6 threads in 3 groups")
	assert.Contains(t, errOut, "fetching debug file "+id+" from "+srv.URL)
	assert.Contains(t, errOut, byteCount(int64(len(data)))+")")
	assert.Contains(t, errOut, "fetched debug file "+id)

	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	code, _, errOut = execTool(context.Background(), "-q", "core", "-debug-dir", empty, stop.Exe, stop.Core)
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)

	// Without the server, the empty debug directory leaves the runtime
	// without its symbols (-debug-dir replaced /usr/lib/debug): it is
	// read through the table of its release.
	t.Setenv("DEBUGINFOD_URLS", "")
	code, out, errOut = execTool(context.Background(), "core", "-debug-dir", empty, stop.Exe, stop.Core)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "layout from known layout table")
}

// hangingDebuginfod makes DEBUGINFOD_URLS name a server that starts
// sending a debug file and then hangs, with a client time-out of ten
// minutes; the first request to it calls cancel 200ms later, as a user
// pressing Ctrl-C during the download would.
func hangingDebuginfod(t *testing.T, cancel context.CancelFunc) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.AfterFunc(200*time.Millisecond, cancel)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	t.Setenv("DEBUGINFOD_URLS", srv.URL)
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	t.Setenv("DEBUGINFOD_TIMEOUT", "600")
}

// TestInterrupt: cancelling the context (what Ctrl-C does) while a debug
// file download hangs ends the tool at once with status 130.
func TestInterrupt(t *testing.T) {
	stop, _ := strippedCore(t, fixtures.Nested)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hangingDebuginfod(t, cancel)
	start := time.Now()
	code, _, errOut := execTool(ctx, "core", "-debug-dir", t.TempDir(), stop.Exe, stop.Core)
	assert.Equal(t, 130, code, errOut)
	assert.Contains(t, errOut, "interrupted")
	assert.Contains(t, errOut, "fetching debug file")
	assert.Less(t, time.Since(start), 5*time.Minute, "not cut by a time-out")
}

// TestInterruptLive: in launch and attach mode too, Ctrl-C during a debug
// file download (the runtime's symbols are looked up in a live process)
// ends the tool at once with status 130, the download cancelled rather
// than left to the client's ten-minute time-out.
func TestInterruptLive(t *testing.T) {
	s := fixtures.StripRuntime(t, fixtures.RuntimeVariant(t, fixtures.VariantOMPD))
	exe := fixtures.BuildWith(t, fixtures.Nested, s.RuntimeInfo)
	check := func(t *testing.T, args ...string) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		hangingDebuginfod(t, cancel)
		start := time.Now()
		code, _, errOut := execTool(ctx, append([]string{"-debug-dir", t.TempDir()}, args...)...)
		if code == 1 {
			ptraceUnavailable(t, errors.New(errOut))
		}
		assert.Equal(t, 130, code, errOut)
		assert.Contains(t, errOut, "interrupted")
		assert.Contains(t, errOut, "fetching debug file")
		assert.Less(t, time.Since(start), 2*time.Minute, "cancelled, not cut by the time-out")
	}
	t.Run("launch", func(t *testing.T) {
		env, _ := fixtureArgs(t, fixtures.Nested)
		check(t, append(append([]string{"launch"}, env...), "--", exe)...)
	})
	t.Run("attach", func(t *testing.T) {
		cmd := holdExe(t, exe, fixtures.Nested)
		check(t, "attach", strconv.Itoa(cmd.Process.Pid))
		// Detached, the program still runs.
		assert.NoError(t, cmd.Process.Signal(syscall.Signal(0)))
	})
}

// TestLaunchDebugDir: launch honours -debug-dir: a program on a stripped
// runtime is read with the debug file found there.
func TestLaunchDebugDir(t *testing.T) {
	s := fixtures.StripRuntime(t, fixtures.RuntimeVariant(t, fixtures.VariantOMPD))
	exe := fixtures.BuildWith(t, fixtures.Nested, s.RuntimeInfo)
	env, _ := fixtureArgs(t, fixtures.Nested)
	dir := t.TempDir()
	link := s.BuildIDPath(dir)
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(s.DebugFile, link))
	t.Setenv("DEBUGINFOD_URLS", "")
	out := runTool(t, append(append([]string{"launch", "-debug-dir", dir}, env...), "--", exe)...)
	assert.Contains(t, out, "6 threads in 3 groups")
}

// TestAttachDebugDir: attach honours -debug-dir too: a process on a
// stripped runtime is read with the debug file found there, and without
// it (an empty -debug-dir, no debuginfod) through its release's table.
func TestAttachDebugDir(t *testing.T) {
	s := fixtures.StripRuntime(t, fixtures.RuntimeVariant(t, fixtures.VariantOMPD))
	exe := fixtures.BuildWith(t, fixtures.Nested, s.RuntimeInfo)
	dir := t.TempDir()
	link := s.BuildIDPath(dir)
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(s.DebugFile, link))
	t.Setenv("DEBUGINFOD_URLS", "")
	cmd := holdExe(t, exe, fixtures.Nested)
	pid := strconv.Itoa(cmd.Process.Pid)
	out := runTool(t, "attach", "-debug-dir", dir, pid)
	assert.Contains(t, out, "6 threads in 3 groups")

	assert.Contains(t, out, "layout from OMPD tables")
	code, out, errOut := execTool(context.Background(), "attach", "-debug-dir", t.TempDir(), pid)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "layout from known layout table")
	// Detached both times, the program still runs.
	assert.NoError(t, cmd.Process.Signal(syscall.Signal(0)))
}

// TestFileOptions checks that the path flags become each target package's
// options, in flag order, and that unset flags add none.
func TestFileOptions(t *testing.T) {
	dirs := func(d ...string) string { return "dirs " + strings.Join(d, ",") }
	sysroot := func(s string) string { return "sysroot " + s }
	fileMap := func(m map[string]string) string { return "map " + m["/a"] }
	assert.Empty(t, fileOptions(&options{}, dirs, sysroot, fileMap))
	o := &options{debugDirs: []string{"/d1", "/d2"}, sysroot: "/r", fileMap: map[string]string{"/a": "/b"}}
	assert.Equal(t, []string{"dirs /d1,/d2", "sysroot /r", "map /b"}, fileOptions(o, dirs, sysroot, fileMap))
}
