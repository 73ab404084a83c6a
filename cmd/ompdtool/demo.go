package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ompd-go/ompd/internal/corefiles"
)

// defaultDemo is the core demo reads without a NAME.
const defaultDemo = "libomp-nested"

func demoMode() mode {
	return mode{
		synopsis: "demo [flags] [NAME]",
		about: "Read a real core that ompd-go's sources ship (testdata/cores: run it in a\n" +
			"checkout, as go run ./cmd/ompdtool demo), with nothing installed: the nested\n" +
			"fixture, six threads in nested regions, on LLVM's libomp (" + defaultDemo + ", the\n" +
			"default) or GCC's libgomp (libgomp14-nested, ...; an unknown NAME lists them).",
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
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := corefiles.ModuleRoot(wd)
	if err != nil {
		return fmt.Errorf("demo reads the cores of a checkout of ompd-go's sources: %w", err)
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
