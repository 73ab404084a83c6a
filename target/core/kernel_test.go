package core

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKernelCore checks a core written by Linux itself (the program aborts
// with RLIMIT_CORE raised): unlike gdb's, it has a PT_LOAD for every
// mapping, with p_filesz 0 for the file-backed ones it leaves out. It is
// skipped where kernel.core_pattern does not write a plain file into the
// working directory (a pipe to systemd-coredump or apport, a fixed
// directory): that is the machine's configuration, not something a test
// may change.
func TestKernelCore(t *testing.T) {
	f := getFixture(t)
	pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		t.Skipf("cannot read core_pattern: %v", err)
	}
	p := strings.TrimSpace(string(pattern))
	if p == "" || strings.HasPrefix(p, "|") || strings.Contains(p, "/") {
		t.Skipf("kernel.core_pattern is %q: cores do not land in the working directory", p)
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", `ulimit -c unlimited && exec "$0" "$@"`, f.exe, out, f.dyn)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PROG_ABORT=1")
	err = cmd.Run()
	require.Error(t, err, "the program must abort")
	var corePath string
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "core") {
			corePath = filepath.Join(dir, e.Name())
		}
	}
	if corePath == "" {
		t.Skipf("the kernel wrote no core into the working directory (core_pattern %q)", p)
	}
	fk := &fixture{}
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, fk.parseOutput(string(data)))

	c, err := Open(context.Background(), f.exe, corePath)
	require.NoError(t, err)
	defer c.Close()
	for _, w := range c.Warnings() {
		t.Logf("warning: %s", w)
	}

	// A kernel core's PT_LOADs with p_filesz < p_memsz.
	partial := 0
	for _, p := range c.d.progs {
		if p.typ == elf.PT_LOAD && p.filesz < p.memsz {
			partial++
		}
	}
	t.Logf("%d PT_LOADs, %d of them partly left out", len(c.d.progs)-1, partial)

	ths, err := c.Threads()
	require.NoError(t, err)
	got := make(map[uint64]uint64)
	for _, th := range ths {
		got[th.ID] = th.Pointer
	}
	for _, r := range fk.threads {
		assert.Equal(t, r.self, got[r.tid], "fs_base of thread %d", r.idx)
		for _, v := range []struct {
			name string
			addr uint64
			val  int64
		}{{"lib_tls", r.libTLS, r.libVal}, {"exe_tls", r.exeTLS, r.exeVal}, {"dyn_tls", r.dynTLS, r.dynVal}} {
			addr, err := c.LookupThreadLocal(r.tid, v.name)
			if v.addr == 0 {
				assert.Error(t, err)
				continue
			}
			require.NoError(t, err, "%s of thread %d", v.name, r.idx)
			assert.Equal(t, v.addr, addr, "%s of thread %d", v.name, r.idx)
			var b [8]byte
			require.NoError(t, c.ReadMemory(b[:], addr))
			assert.Equal(t, v.val, int64(binary.LittleEndian.Uint64(b[:])))
		}
	}

	addr, err := c.LookupSymbol("lib_local")
	require.NoError(t, err)
	assert.Equal(t, fk.localAddr, addr)
	var b [4]byte
	require.NoError(t, c.ReadMemory(b[:], addr))
	assert.Equal(t, fk.localVal, int64(int32(binary.LittleEndian.Uint32(b[:]))))

	// Library text from the file.
	lf, err := elf.Open(f.lib)
	require.NoError(t, err)
	defer lf.Close()
	var bias uint64
	for _, o := range objectsOf(t, c) {
		if o.Path == f.lib {
			bias = o.Bias
		}
	}
	text := lf.Section(".text")
	want, err := text.Data()
	require.NoError(t, err)
	buf := make([]byte, len(want))
	require.NoError(t, c.ReadMemory(buf, text.Addr+bias))
	assert.Equal(t, want, buf)
}
