package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ompd-go/ompd/internal/corefiles"
)

// defaultDemo is the core demo reads without a NAME.
const defaultDemo = "libomp-nested"

func demoMode() mode {
	return mode{
		synopsis: "demo [flags] [NAME]",
		about: "Read a real core that ompd-go's sources ship (testdata/cores of the checkout it\n" +
			"runs in, else of the Go module cache that go install filled), with nothing\n" +
			"installed: the nested fixture, six threads in nested regions, on LLVM's\n" +
			"libomp (" + defaultDemo + ", the default) or GCC's libgomp (libgomp14-nested,\n" +
			"...; an unknown NAME lists them).",
		flags: flagsCommon | flagsView,
		run:   runDemo,
	}
}

// runDemo runs core on a shipped core, its files unpacked in a temporary
// directory and given to it as for a core of another machine.
func runDemo(ctx context.Context, o *options, args []string, out io.Writer) error {
	if len(args) > 1 {
		return usagef("demo", "want at most one core name, got %d arguments", len(args))
	}
	if o.sysroot != "" || len(o.fileMap) > 0 {
		return usagef("demo", "-sysroot and -file-map do not apply to demo: it gives the core's files")
	}
	name := defaultDemo
	if len(args) == 1 {
		name = args[0]
	}
	root, err := demoRoot(ctx)
	if err != nil {
		return err
	}
	cores, err := corefiles.LoadAll(corefiles.Dir(root))
	if err != nil {
		return err
	}
	var c *corefiles.Core
	var names []string
	for _, k := range cores {
		names = append(names, k.Name)
		if k.Name == name {
			c = k
		}
	}
	if c == nil {
		return usagef("demo", "no shipped core %q (there are %s)", name, strings.Join(names, ", "))
	}
	dir, err := os.MkdirTemp("", "ompdtool-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	f, err := c.UnpackTo(dir, true)
	if err != nil {
		return err
	}
	// Nothing of this machine: an empty sysroot and debug directory,
	// the core's files one by one.
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		return err
	}
	o.sysroot, o.fileMap, o.debugDirs = empty, f.Map, []string{empty}
	o.progressf("the %s fixture on %s %s (%s)", c.Fixture, c.Runtime, c.RuntimeVersion, filepath.Join("testdata", "cores", c.Name))
	return runCore(ctx, o, []string{f.Program, f.Core}, out)
}

// demoRoot finds the sources whose testdata/cores demo reads: the
// checkout the working directory is in, else the copy of the tool's own
// version that go install left in the Go module cache.
func demoRoot(ctx context.Context) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, errCheckout := corefiles.ModuleRoot(wd)
	if errCheckout == nil {
		return root, nil
	}
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == corefiles.Module {
		version = bi.Main.Version
	}
	root, errCache := corefiles.InModuleCache(goModCache(ctx), version)
	if errCache != nil {
		return "", fmt.Errorf("demo reads the cores of ompd-go's sources, from a checkout or the Go module cache: %w; %w", errCheckout, errCache)
	}
	return root, nil
}

// goModCache returns the Go module cache's directory as go env says it,
// else as the environment does.
func goModCache(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "env", "GOMODCACHE")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local") // never a toolchain download
	if out, err := cmd.Output(); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" {
			return d
		}
	}
	return corefiles.ModCache(os.Getenv)
}
