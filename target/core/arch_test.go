package core

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/unwind"
)

// TestArchCores reads the cores of the other machines (aarch64, ppc64le,
// s390x; libgomp and LLVM's libomp), as qemu-user wrote them and as a
// kernel would have (with NT_FILE and, on aarch64, NT_ARM_TLS): the
// machine, every thread with its LWP, pthread_t (the program's own
// pthread_self) and thread pointer, and every thread's backtrace, which
// must be gdb-multiarch's frame for frame (addresses, functions, inlined
// calls, files and lines).
func TestArchCores(t *testing.T) {
	for _, ac := range fixtures.ArchCores(t) {
		t.Run(ac.String(), func(t *testing.T) {
			kernel := ac.KernelCore(t)
			pointers := map[string]map[uint64]uint64{}
			for _, which := range []struct{ name, core string }{{"qemu", ac.Core}, {"kernel", kernel}} {
				c, err := Open(t.Context(), ac.Exe, which.core, WithSysroot(ac.Sysroot), WithDebugDirs())
				require.NoError(t, err, which.name)
				defer c.Close()
				assert.Empty(t, c.Warnings(), which.name)
				a := arch.Numbered(c.Machine())
				require.NotNil(t, a)
				assert.Equal(t, ac.Arch, a.Name)
				assert.Equal(t, a.Order, c.ByteOrder())

				ths, err := c.Threads()
				require.NoError(t, err)
				require.Len(t, ths, len(ac.Truth.Threads), which.name)
				pointers[which.name] = map[uint64]uint64{}
				for _, th := range ths {
					tt := ac.Truth.ThreadByTID(int(th.ID))
					require.NotNil(t, tt, "%s: thread %d", which.name, th.ID)
					p, err := fixtures.ParseHex(tt.Pthread)
					require.NoError(t, err)
					assert.Equal(t, p, th.Pthread, "%s: thread %d's pthread_t", which.name, th.ID)
					assert.NotZero(t, th.Pointer, "%s: thread %d's thread pointer", which.name, th.ID)
					pointers[which.name][th.ID] = th.Pointer
					if a.TLS == arch.VariantII {
						assert.Equal(t, th.Pthread, th.Pointer, "%s: on TLS variant II the thread pointer is the struct pthread", which.name)
					} else {
						assert.Less(t, th.Pthread, th.Pointer, "%s: on TLS variant I the struct pthread lies below the thread pointer", which.name)
					}
					checkBacktrace(t, c, ac, which.name, th.ID)
				}
			}
			// The thread pointers the kernel's notes give are the ones
			// read without them (from the registers, or from glibc's
			// lists of threads on aarch64).
			assert.Equal(t, pointers["kernel"], pointers["qemu"])
		})
	}
}

// frame is one frame as gdb counts them: an inlined call is a frame of its
// own, at the address of the frame it was inlined into.
type frame struct {
	pc       uint64 // 0 on inlined frames
	function string
	entry    uint64 // the function's entry, 0 on inlined frames
	file     string
	line     int
	object   string
}

// ourFrames unwinds thread tid and places every frame, one per inlined
// call too.
func ourFrames(t *testing.T, c *Core, tid uint64) ([]frame, error) {
	st, err := unwind.Thread(context.Background(), c, tid, unwind.Options{})
	if err != nil {
		return nil, err
	}
	var out []frame
	for _, f := range st.Frames {
		loc, err := c.LocateCode(f.LookupPC())
		if err != nil {
			out = append(out, frame{pc: f.PC})
			continue
		}
		if len(loc.Inline) == 0 {
			out = append(out, frame{pc: f.PC, function: loc.Name, entry: loc.Entry, file: loc.File, line: loc.Line, object: loc.Object})
			continue
		}
		for i, in := range loc.Inline {
			fr := frame{function: in.Function, file: in.File, line: in.Line, object: loc.Object}
			if i == 0 {
				fr.pc = f.PC
			}
			if i == len(loc.Inline)-1 {
				// The outermost: the function the code belongs to,
				// named as its symbol.
				fr.function, fr.entry = loc.Name, loc.Entry
			}
			out = append(out, fr)
		}
	}
	return out, nil
}

// checkBacktrace compares thread tid's frames with gdb's. Two differences
// are known and allowed, both in the runtime's optimized code (the fresh
// cores' libomp with its debug information): ompd-go names an inlined C++
// method as its debug information does (suspend), gdb with its class
// (kmp_flag_64<false, true>::suspend); and where the line table gives a
// return address line 0 (code of no line), ompd-go gives none, gdb the
// line of the row before.
func checkBacktrace(t *testing.T, c *Core, ac *fixtures.ArchCore, which string, tid uint64) {
	t.Helper()
	want := ac.GDB[int(tid)]
	require.NotEmpty(t, want, "%s: gdb's backtrace of thread %d", which, tid)
	got, err := ourFrames(t, c, tid)
	require.NoError(t, err)
	// Without debug information (the checked-in copies of the
	// libraries) a function's inlined calls are not known: gdb's
	// frames of one address fold into the last.
	// gdb shows the zero return address that ends a chain (ppc64's
	// __libc_start_main is called with none) as a last frame; the walk
	// ends there.
	if n := len(want); n > 1 && want[n-1].HasPC && want[n-1].PC == 0 {
		want = want[:n-1]
	}
	var gdb []fixtures.GDBFrame
	for i, w := range want {
		if i > 0 && !w.HasPC && !hasDebugInfo(ac, got, len(gdb)-1) {
			gdb[len(gdb)-1].Function = w.Function
			gdb[len(gdb)-1].File, gdb[len(gdb)-1].Line = "", 0
			continue
		}
		gdb = append(gdb, w)
	}
	names := func(fs []frame) []string {
		var s []string
		for _, f := range fs {
			s = append(s, f.function)
		}
		return s
	}
	if !assert.Len(t, got, len(gdb), "%s: thread %d: frames %q, gdb's %v", which, tid, names(got), gdb) {
		return
	}
	for i, w := range gdb {
		g := got[i]
		if w.HasPC {
			assert.Equal(t, w.PC, g.pc, "%s: thread %d frame %d's address", which, tid, i)
		}
		wantName := w.Function
		if wantName == "??" {
			wantName = ""
		}
		if squeeze(wantName) != squeeze(g.function) && !aliases(c, wantName, g) && !unsized(c, wantName, g) &&
			!strings.HasSuffix(squeeze(wantName), "::"+squeeze(g.function)) {
			t.Errorf("%s: thread %d frame %d's function is %q, gdb's %q", which, tid, i, g.function, wantName)
		}
		if w.File != "" && (g.file != "" || !libraryWithoutDebugInfo(ac, g.object)) {
			assert.Equal(t, filepath.Base(w.File), filepath.Base(g.file), "%s: thread %d frame %d's file", which, tid, i)
			if g.line != 0 || g.object == "" || strings.Contains(g.object, "/opt/ompd-go/bin/") {
				assert.Equal(t, w.Line, g.line, "%s: thread %d frame %d's line", which, tid, i)
			}
		}
	}
}

// hasDebugInfo reports whether the frame i of ours (the frame gdb's next
// inlined frame belongs to) comes with its inlined calls.
func hasDebugInfo(ac *fixtures.ArchCore, got []frame, i int) bool {
	if i < 0 || i >= len(got) {
		return false
	}
	return !libraryWithoutDebugInfo(ac, got[i].object)
}

// libraryWithoutDebugInfo: the checked-in copies of the libraries have no
// debug information (gdb's backtraces were made with it).
func libraryWithoutDebugInfo(ac *fixtures.ArchCore, object string) bool {
	return !ac.Fresh && object != "" && !strings.Contains(object, "/opt/ompd-go/bin/")
}

// aliases reports whether gdb's name for a frame's function is another
// symbol at its entry (gdb names a function as its debug information
// does, __kmp_api_omp_set_lock; the symbol table has omp_set_lock and
// others at the same address).
func aliases(c *Core, name string, f frame) bool {
	if f.entry == 0 {
		return false
	}
	o := c.set.ObjectAt(f.entry)
	if o == nil {
		return false
	}
	s, err := o.Lookup(name)
	return err == nil && s.Addr == f.entry
}

// unsized reports whether gdb's name for a frame's function is a symbol
// without a size (s390x's _start) before the frame's PC, in its object,
// to which ompd-go gives no name: gdb names the code after a symbol up to
// the next one, ompd-go only the code a symbol's size covers.
func unsized(c *Core, name string, f frame) bool {
	if f.function != "" {
		return false
	}
	o := c.set.ObjectAt(f.pc)
	if o == nil {
		return false
	}
	s, err := o.Lookup(name)
	return err == nil && s.Size == 0 && s.Addr <= f.pc
}

// squeeze drops the spaces C++ names print differently ("<a, b> >").
func squeeze(s string) string { return strings.ReplaceAll(s, " ", "") }
