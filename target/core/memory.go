package core

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/ompd-go/ompd/internal/errjoin"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/regfile"
	"github.com/ompd-go/ompd/target"
)

// The memory of a core is served from layers, tried in this order for each
// byte:
//
//  1. layerCore: the bytes the core holds, [p_vaddr, p_vaddr+p_filesz) of
//     each PT_LOAD. A failed read of the core file is an error, never
//     served by the layers below.
//  2. layerBSS: zeros where a loaded object's own program headers say its
//     memory starts zeroed, [p_vaddr+p_filesz, p_vaddr+p_memsz) plus the
//     object's bias (.bss). The core leaves such memory out only when it
//     was never written: Linux and gdb dump every private mapping that has
//     been written to under the default coredump_filter (0x33). With a
//     filter that excludes anonymous memory, written .bss would read as its
//     initial zeros here.
//  3. layerFile: the file that the NT_FILE note says is mapped at the
//     address, at the mapping's offset: what a file-backed page holds until
//     the program writes it (and written private pages are in the core,
//     layer 1). Past the end of the file, the rest of the last page reads
//     as zeros, as it does in the process; beyond that page nothing is
//     readable (the process would get SIGBUS).
//  4. layerObject: the file contents of a loaded object's read-only
//     PT_LOAD segments, for cores without NT_FILE.
//
// Anything else, including the part of a PT_LOAD past p_filesz that none of
// the layers covers, is not available: a *target.ReadError wrapping
// target.ErrNoMemory, never invented zeros. gdb's gcore leaves unwritten
// file-backed mappings (such as library text) out altogether, without a
// PT_LOAD; Linux writes them with p_filesz 0 (only the first page of an
// ELF file is kept); layers 3 and 4 serve both.
const (
	layerCore = iota
	layerBSS
	layerFile
	layerObject
	numLayers
)

// source reads bytes of a region: off is counted from the region's base.
type source interface {
	readAt(p []byte, off uint64) error
}

// region is an address range [start, end) served by src. base is the
// address that src's offsets count from (start, unless an overlap with an
// earlier region of the same layer moved start up).
type region struct {
	start, end, base uint64
	src              source
}

// layer is a sorted list of non-overlapping regions.
type layer []region

// normalize sorts the regions and trims overlaps: an earlier-starting
// region wins.
func (l layer) normalize() layer {
	sort.SliceStable(l, func(i, j int) bool { return l[i].start < l[j].start })
	out := l[:0]
	var prevEnd uint64
	for i, r := range l {
		if r.end <= r.start {
			continue
		}
		if i > 0 && len(out) > 0 && r.start < prevEnd {
			if r.end <= prevEnd {
				continue
			}
			r.start = prevEnd
		}
		out = append(out, r)
		prevEnd = r.end
	}
	return out
}

// find returns the region containing addr.
func (l layer) find(addr uint64) (region, bool) {
	i := sort.Search(len(l), func(i int) bool { return l[i].start > addr }) - 1
	if i >= 0 && addr < l[i].end {
		return l[i], true
	}
	return region{}, false
}

// nextStart returns the start of the first region beginning after addr.
func (l layer) nextStart(addr uint64) (uint64, bool) {
	i := sort.Search(len(l), func(i int) bool { return l[i].start > addr })
	if i < len(l) {
		return l[i].start, true
	}
	return 0, false
}

// memory is the layered address space of a core. It is built during Open
// and immutable afterwards.
type memory struct {
	layers [numLayers]layer
}

func (m *memory) add(li int, rs ...region) {
	m.layers[li] = append(m.layers[li], rs...).normalize()
}

// ReadMemory fills buf from the layers (see the layer constants).
func (m *memory) ReadMemory(buf []byte, addr uint64) error {
	return m.read(buf, addr, numLayers)
}

// read fills buf from the first maxLayer layers.
func (m *memory) read(buf []byte, addr uint64, maxLayer int) error {
	if len(buf) == 0 {
		return nil
	}
	if addr+uint64(len(buf)) < addr {
		return &target.ReadError{Addr: addr, Size: len(buf), Err: fmt.Errorf("range wraps around the address space: %w", target.ErrNoMemory)}
	}
	done := uint64(0)
	for done < uint64(len(buf)) {
		a := addr + done
		want := uint64(len(buf)) - done
		var lastErr error
		served := false
		for li := 0; li < maxLayer && !served; li++ {
			r, ok := m.layers[li].find(a)
			if !ok {
				continue
			}
			n := min(want, r.end-a)
			for hi := 0; hi < li; hi++ {
				if s, ok := m.layers[hi].nextStart(a); ok && s-a < n {
					n = s - a
				}
			}
			if err := r.src.readAt(buf[done:done+n], a-r.base); err != nil {
				if li == layerCore {
					// The core holds these bytes but cannot give them
					// (an I/O error, a file cut short since Open): the
					// layers below would make up what it held.
					return &target.ReadError{Addr: addr, Size: len(buf), Err: err}
				}
				lastErr = err
				continue
			}
			done += n
			served = true
		}
		if !served {
			err := target.ErrNoMemory
			if lastErr != nil {
				if errors.Is(lastErr, target.ErrNoMemory) {
					err = lastErr
				} else {
					err = fmt.Errorf("%w: %w", lastErr, target.ErrNoMemory)
				}
			} else if done > 0 {
				err = fmt.Errorf("%#x is not in the core: %w", a, target.ErrNoMemory)
			}
			return &target.ReadError{Addr: addr, Size: len(buf), Err: err}
		}
	}
	return nil
}

// coreSource reads a PT_LOAD's bytes from the core file.
type coreSource struct {
	r   io.ReaderAt
	off uint64 // p_offset
}

func (s coreSource) readAt(p []byte, off uint64) error {
	n, err := s.r.ReadAt(p, int64(s.off+off))
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading the core file at offset %#x: %w (was the file cut short after it was opened?)", s.off+off, err)
}

// cutSource is memory a PT_LOAD promises past the end of a core file cut
// short: an error, never the layers below.
type cutSource struct{ size int64 }

func (s cutSource) readAt([]byte, uint64) error {
	return fmt.Errorf("the core file is cut short (%d bytes) before this memory: %w", s.size, target.ErrNoMemory)
}

// zeroSource reads zeros.
type zeroSource struct{}

func (zeroSource) readAt(p []byte, _ uint64) error {
	clear(p)
	return nil
}

// mappedFile is a file named by NT_FILE, opened on first use.
type mappedFile struct {
	name  string          // as the core names it
	paths func() []string // where to look for it, in order
	page  uint64

	once sync.Once
	mu   sync.Mutex // guards disabled
	f    *os.File
	path string
	size uint64
	err  error

	disabled error // set when the file is known not to match the core
}

func (mf *mappedFile) open() error {
	mf.once.Do(func() {
		var errs []error
		for _, p := range mf.paths() {
			// Only a regular file: a FIFO must not hang the read.
			f, err := regfile.Open(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			st, err := f.Stat()
			if err != nil {
				f.Close()
				errs = append(errs, err)
				continue
			}
			mf.f, mf.path, mf.size = f, p, uint64(st.Size())
			return
		}
		mf.err = fmt.Errorf("mapped file %s: %w", mf.name, errjoin.Join(errs...))
	})
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if mf.disabled != nil {
		return mf.disabled
	}
	return mf.err
}

func (mf *mappedFile) disable(err error) {
	mf.mu.Lock()
	mf.disabled = err
	mf.mu.Unlock()
}

func (mf *mappedFile) close() {
	mf.once.Do(func() { mf.err = os.ErrClosed })
	if mf.f != nil {
		mf.f.Close()
	}
}

// fileSource reads the part of a mapped file that one NT_FILE mapping
// maps.
type fileSource struct {
	mf  *mappedFile
	off uint64 // file offset of the mapping's start
}

func (s fileSource) readAt(p []byte, off uint64) error {
	if err := s.mf.open(); err != nil {
		return err
	}
	fo := s.off + off
	page := s.mf.page
	pageEnd := (s.mf.size + page - 1) / page * page
	if fo < s.off || fo > pageEnd || uint64(len(p)) > pageEnd-fo {
		return fmt.Errorf("%s: offset %#x is past the end of the file (%d bytes)", s.mf.path, fo, s.mf.size)
	}
	var n int
	if fo < s.mf.size {
		m := min(uint64(len(p)), s.mf.size-fo)
		var err error
		n, err = s.mf.f.ReadAt(p[:m], int64(fo))
		if uint64(n) < m {
			return fmt.Errorf("reading %s: %w", s.mf.path, err)
		}
	}
	clear(p[n:])
	return nil
}

// objectSource reads a loaded object's file contents by run-time address.
type objectSource struct{ o *objfile.Object }

func (s objectSource) readAt(p []byte, off uint64) error {
	return s.o.ReadVirtual(p, off)
}
