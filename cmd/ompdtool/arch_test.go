package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestArchCores runs the inspector on the cores of the other machines
// (aarch64, ppc64le, s390x; libgomp and LLVM's libomp), given the
// machine's files with -sysroot as for a node's core read on an x86-64
// laptop: every thread with its LWP, thread number, region nest, team
// sizes and ICVs as the program saw them, a wait state for every thread
// the program made wait, and with -json -bt every thread's backtrace,
// which holds gdb-multiarch's frames' addresses in gdb's order, and
// gdb's files and lines in the program's frames.
func TestArchCores(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	for _, ac := range fixtures.ArchCores(t) {
		t.Run(ac.String(), func(t *testing.T) {
			files := []string{"-sysroot", ac.Sysroot, "-debug-dir", t.TempDir(), ac.Exe, ac.Core}
			code, out, errOut := execTool(context.Background(), append([]string{"core", "-threads"}, files...)...)
			require.Equal(t, 0, code, errOut)
			if ac.Runtime == "libgomp" {
				// Debian's libgomp has no debug information: the
				// rest of nthreads-var's list needs it.
				checkThreadsText(t, out, ac.Truth, "._omp_fn.", ",...")
			} else {
				checkThreadsText(t, out, ac.Truth, "omp_outlined", "")
			}

			code, out, errOut = execTool(context.Background(), append([]string{"-json", "-bt", "core"}, files...)...)
			require.Equal(t, 0, code, errOut)
			var snap struct {
				Threads []struct {
					LWP    int       `json:"lwp"`
					State  string    `json:"state"`
					Frames []btFrame `json:"frames"`
				} `json:"threads"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &snap))
			require.Len(t, snap.Threads, len(ac.Truth.Threads))
			for _, th := range snap.Threads {
				tr := ac.Truth.ThreadByTID(th.LWP)
				require.NotNil(t, tr, "thread %d", th.LWP)
				switch tr.Role {
				case fixtures.RoleBarrier, fixtures.RoleLock, fixtures.RoleCritical:
					assert.True(t, strings.HasPrefix(th.State, "wait_"), "thread %d (%s): %s", th.LWP, tr.Role, th.State)
				case fixtures.RoleStopper, fixtures.RoleWorking:
					assert.True(t, strings.HasPrefix(th.State, "work_"), "thread %d (%s): %s", th.LWP, tr.Role, th.State)
				}
				gdb := ac.GDB[th.LWP]
				require.NotEmpty(t, gdb, "gdb's backtrace of thread %d", th.LWP)
				// gdb's addresses, in order, among ours (gdb
				// prints none on inlined frames and frames at the
				// start of a line; it shows the zero return address
				// that ends ppc64's chain, where the walk ends).
				next := 0
				for _, g := range gdb {
					if !g.HasPC || g.PC == 0 {
						continue
					}
					for next < len(th.Frames) && th.Frames[next].PC != g.PC {
						next++
					}
					if !assert.Less(t, next, len(th.Frames), "thread %d: gdb's frame at %#x (%s) missing or out of order", th.LWP, g.PC, g.Function) {
						break
					}
					f := th.Frames[next]
					// The program's frames (the checked-in copies of
					// the libraries have no debug information).
					if g.File != "" && strings.Contains(f.Object, "/opt/ompd-go/bin/") {
						assert.Equal(t, filepath.Base(g.File), filepath.Base(f.File), "thread %d at %#x", th.LWP, g.PC)
						assert.Equal(t, g.Line, f.Line, "thread %d at %#x", th.LWP, g.PC)
					}
				}
				if th.LWP == ac.Truth.StopTID {
					assert.True(t, slices.ContainsFunc(th.Frames, func(f btFrame) bool { return f.Function == "stopme" }), "the stopper's frames reach stopme")
				}
			}
		})
	}
}

// btFrame is a frame of the inspector's -json -bt output.
type btFrame struct {
	PC       uint64 `json:"pc"`
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Object   string `json:"object"`
}

// TestUnsupportedMachine: a real core whose machine has no arch file (an
// aarch64 core relabelled RISC-V) is refused with the machine's name and
// exit status 1, never read as another machine's.
func TestUnsupportedMachine(t *testing.T) {
	ac := fixtures.ArchCores(t)[0]
	b, err := os.ReadFile(ac.Core)
	require.NoError(t, err)
	f, err := elf.NewFile(bytes.NewReader(b))
	require.NoError(t, err)
	f.ByteOrder.PutUint16(b[18:], uint16(elf.EM_RISCV))
	relabelled := filepath.Join(t.TempDir(), "core")
	require.NoError(t, os.WriteFile(relabelled, b, 0o644))
	code, out, errOut := execTool(context.Background(), "core", "-sysroot", ac.Sysroot, "-debug-dir", t.TempDir(), ac.Exe, relabelled)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, errOut, "EM_RISCV")
	assert.Empty(t, out)
}
