package core

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// fixture is testdata/prog.c built with gcc, run under gdb up to stopme()
// and dumped with gcore, once per test binary.
type fixture struct {
	dir              string
	exe, lib, dyn    string
	core             string
	threads          []threadRec
	localAddr        uint64
	localVal         int64
	layout           map[string]uint64
	exeOther         string // prog.c built differently: another build-id
	coreSize         int64
	buildErr, gdbErr error
}

// threadRec is a "thread" line of the program's output.
type threadRec struct {
	idx                    int
	tid, self              uint64
	libTLS, exeTLS, dynTLS uint64
	libVal, exeVal, dynVal int64
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
	fixDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixDir != "" {
		os.RemoveAll(fixDir)
	}
	os.Exit(code)
}

// requireTools skips the test when gcc or gdb is missing, or fails it when
// running in CI (CI=true), where they must be installed.
func requireTools(t testing.TB) {
	t.Helper()
	fixtures.RequireTool(t, "gcc", "gdb")
}

// getFixture builds the program and its core, or fails the test.
func getFixture(t testing.TB) *fixture {
	t.Helper()
	requireTools(t)
	fixOnce.Do(func() { fix, fixErr = buildFixture() })
	if fixErr != nil {
		t.Fatalf("building the test core: %v", fixErr)
	}
	return fix
}

func run(ctx context.Context, dir string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func buildFixture() (*fixture, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "ompd-core-test-")
	if err != nil {
		return nil, err
	}
	fixDir = dir
	src, err := filepath.Abs("testdata")
	if err != nil {
		return nil, err
	}
	f := &fixture{
		dir:      dir,
		exe:      filepath.Join(dir, "prog"),
		lib:      filepath.Join(dir, "libtls.so"),
		dyn:      filepath.Join(dir, "libdyn.so"),
		core:     filepath.Join(dir, "prog.core"),
		exeOther: filepath.Join(dir, "prog-other"),
	}
	steps := [][]string{
		{"gcc", "-g", "-O1", "-fPIC", "-shared", "-ftls-model=global-dynamic", "-Wl,--build-id", "-o", f.lib, filepath.Join(src, "libtls.c")},
		{"gcc", "-g", "-O1", "-fPIC", "-shared", "-ftls-model=global-dynamic", "-Wl,--build-id", "-o", f.dyn, filepath.Join(src, "libdyn.c")},
		{"gcc", "-g", "-O1", "-Wl,--build-id", "-I", src, "-o", f.exe, filepath.Join(src, "prog.c"),
			"-L", dir, "-ltls", "-Wl,-rpath," + dir, "-pthread", "-ldl"},
		{"gcc", "-g", "-O0", "-DOTHER=1", "-Wl,--build-id", "-I", src, "-o", f.exeOther, filepath.Join(src, "prog.c"),
			"-L", dir, "-ltls", "-Wl,-rpath," + dir, "-pthread", "-ldl"},
	}
	for _, s := range steps {
		if err := run(ctx, dir, s[0], s[1:]...); err != nil {
			return nil, err
		}
	}
	outFile := filepath.Join(dir, "out.txt")
	if err := run(ctx, dir, "gdb", "-nx", "-batch",
		"-ex", "set pagination off",
		"-ex", "set startup-with-shell off",
		"-ex", "break stopme",
		"-ex", "run",
		"-ex", "gcore "+f.core,
		"-ex", "kill",
		"--args", f.exe, outFile, f.dyn); err != nil {
		return nil, err
	}
	st, err := os.Stat(f.core)
	if err != nil {
		return nil, fmt.Errorf("gdb wrote no core: %v", err)
	}
	f.coreSize = st.Size()
	out, err := os.ReadFile(outFile)
	if err != nil {
		return nil, err
	}
	if err := f.parseOutput(string(out)); err != nil {
		return nil, fmt.Errorf("%v in program output:\n%s", err, out)
	}
	return f, nil
}

func (f *fixture) parseOutput(out string) error {
	f.layout = make(map[string]uint64)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		kv := make(map[string]uint64)
		for _, fld := range fields[1:] {
			k, v, ok := strings.Cut(fld, "=")
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(v, 0, 64)
			if err != nil {
				return fmt.Errorf("bad value in %q: %v", fld, err)
			}
			kv[k] = n
		}
		switch fields[0] {
		case "local":
			f.localAddr, f.localVal = kv["addr"], int64(kv["val"])
		case "layout":
			f.layout = kv
		case "thread":
			idx, err := strconv.Atoi(fields[1])
			if err != nil {
				return err
			}
			f.threads = append(f.threads, threadRec{
				idx: idx, tid: kv["tid"], self: kv["self"],
				libTLS: kv["lib_tls"], libVal: int64(kv["lib_val"]),
				exeTLS: kv["exe_tls"], exeVal: int64(kv["exe_val"]),
				dynTLS: kv["dyn_tls"], dynVal: int64(kv["dyn_val"]),
			})
		}
	}
	if len(f.threads) != 4 || f.localAddr == 0 || len(f.layout) == 0 {
		return fmt.Errorf("incomplete output: %d threads", len(f.threads))
	}
	return nil
}
