package delve

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target/core"
)

// BenchmarkLiveVsCore takes full snapshots of one stop of the many fixture
// (256 threads, held in stopme) twice over: live through Delve
// (target=live: Refresh, then ompd.Open + Snapshot, so every iteration
// pays what the first snapshot after a resume pays: memory pages, the
// thread list with every thread's registers), and from a core file gcore
// wrote of that same stop (target=core). The goal is live within 1.3x of
// core (cpu-ns/op).
func BenchmarkLiveVsCore(b *testing.B) {
	fixtures.RequireTool(b, "gdb")
	const threads = 256
	r := newRun(b, fixtures.Many)
	cmd := startHeld(b, r, strconv.Itoa(threads))
	p, err := Attach(context.Background(), cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	attached := true
	defer func() {
		if attached {
			_ = p.Detach(false)
		}
	}()
	b.Run("threads="+strconv.Itoa(threads)+"/target=live", func(b *testing.B) {
		ompdtest.BenchSnapshotAfter(b, p.Target, p.Refresh)
	})
	if err := p.Detach(false); err != nil {
		b.Fatal(err)
	}
	attached = false

	corePath := filepath.Join(b.TempDir(), "core")
	out, err := exec.Command("gdb", "-nx", "-batch", "-p", strconv.Itoa(cmd.Process.Pid),
		"-ex", "gcore "+corePath).CombinedOutput()
	if err != nil {
		b.Fatalf("gcore: %v\n%s", err, out)
	}
	c, err := core.Open(context.Background(), r.exe, corePath)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.Run("threads="+strconv.Itoa(threads)+"/target=core", func(b *testing.B) {
		ompdtest.BenchSnapshot(b, c)
	})
}
