// Package debuginfo finds the separate debug information of an ELF object
// the way gdb and Delve do: in the object itself, through its build-id
// under the global debug directories, through its .gnu_debuglink (next to
// the object, in its .debug/ directory, and under the global debug
// directories), and from debuginfod servers.
//
// A candidate whose build-id differs from the object's, or whose CRC does
// not match the debuglink's, is refused, never silently used.
package debuginfo

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ompd-go/ompd/internal/regfile"
	"github.com/ompd-go/ompd/target"
)

// Errors returned by Find.
var (
	// ErrNotFound: no separate debug file was found anywhere.
	ErrNotFound = target.ErrNoDebugFile
	// ErrMismatch: a candidate was found but belongs to another build.
	ErrMismatch = target.ErrDebugMismatch
)

// Fetcher fetches the debug file of a build-id from outside this machine:
// *debuginfod.Client of package target/debuginfod is one. Fetch returns the
// path of a local copy; an error matching fs.ErrNotExist says that the
// file exists nowhere it asked (any other error, that it could not ask).
type Fetcher interface {
	Fetch(ctx context.Context, buildID []byte) (string, error)
}

// DefaultDebugDirs are the global debug directories searched when Options
// names none.
var DefaultDebugDirs = []string{"/usr/lib/debug"}

// Options say where Find looks.
type Options struct {
	// DebugDirs are the global debug directories (gdb's
	// debug-file-directory). Nil means DefaultDebugDirs; an empty,
	// non-nil slice searches none.
	DebugDirs []string
	// Fetcher, if not nil, is asked when the local search fails.
	Fetcher Fetcher
}

func (o Options) dirs() []string {
	if o.DebugDirs == nil {
		return DefaultDebugDirs
	}
	return o.DebugDirs
}

// BuildID returns the object's GNU build-id (NT_GNU_BUILD_ID), or nil.
func BuildID(f *elf.File) []byte {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		if id := noteBuildID(s, f.ByteOrder); id != nil {
			return id
		}
	}
	return nil
}

func noteBuildID(s *elf.Section, order binary.ByteOrder) []byte {
	if s.Size > 1<<20 {
		return nil
	}
	data, err := s.Data()
	if err != nil {
		return nil
	}
	return ParseBuildID(data, order)
}

// ParseBuildID returns the GNU build-id (NT_GNU_BUILD_ID) among the ELF
// notes in data, or nil. Malformed notes end the search.
func ParseBuildID(data []byte, order binary.ByteOrder) []byte {
	for len(data) >= 12 {
		namesz := uint64(order.Uint32(data[0:4]))
		descsz := uint64(order.Uint32(data[4:8]))
		typ := order.Uint32(data[8:12])
		data = data[12:]
		nameEnd := (namesz + 3) &^ 3
		if nameEnd > uint64(len(data)) {
			return nil
		}
		name := data[:namesz]
		data = data[nameEnd:]
		if descsz > uint64(len(data)) {
			return nil
		}
		desc := data[:descsz]
		descEnd := (descsz + 3) &^ 3
		if descEnd > uint64(len(data)) {
			descEnd = uint64(len(data))
		}
		data = data[descEnd:]
		if typ == 3 && bytes.Equal(bytes.TrimRight(name, "\x00"), []byte("GNU")) && descsz > 0 { // NT_GNU_BUILD_ID
			return append([]byte(nil), desc...)
		}
	}
	return nil
}

// DebugLink returns the file name and CRC32 of the object's .gnu_debuglink.
func DebugLink(f *elf.File) (name string, crc uint32, ok bool) {
	s := f.Section(".gnu_debuglink")
	if s == nil || s.Size > 4096 {
		return "", 0, false
	}
	data, err := s.Data()
	if err != nil {
		return "", 0, false
	}
	i := bytes.IndexByte(data, 0)
	if i <= 0 {
		return "", 0, false
	}
	off := (i + 4) &^ 3
	if off+4 > len(data) {
		return "", 0, false
	}
	return string(data[:i]), f.ByteOrder.Uint32(data[off : off+4]), true
}

// HasDebugInfo reports whether the object carries DWARF and a symbol table
// itself.
func HasDebugInfo(f *elf.File) bool {
	return f.Section(".debug_info") != nil && f.Section(".symtab") != nil
}

// Find returns the path of the separate debug file of the object at path
// (opened as f). It tries, in order: the build-id under each debug
// directory (DIR/.build-id/xx/rest.debug), the debuglink next to the object,
// in its .debug/ directory and under each debug directory, then the Fetcher.
// Candidates of another build are skipped; if nothing else was found, the
// error matches ErrMismatch and names them. Nothing found matches
// ErrNotFound.
func Find(ctx context.Context, path string, f *elf.File, opts Options) (string, error) {
	id := BuildID(f)
	link, crc, hasLink := DebugLink(f)
	var mismatches []string
	var special []string // candidates that are not regular files
	var searched []string
	try := func(cand string, checkCRC bool) bool {
		searched = append(searched, cand)
		st, err := os.Stat(cand)
		if err != nil {
			return false
		}
		if !st.Mode().IsRegular() {
			// A FIFO or directory there is no debug file, and reading
			// a FIFO would hang: skipped, and named if nothing is found.
			special = append(special, cand)
			return false
		}
		if err := verify(cand, id, checkCRC, crc); err != nil {
			mismatches = append(mismatches, err.Error())
			return false
		}
		return true
	}
	if len(id) >= 2 {
		h := hex.EncodeToString(id)
		for _, d := range opts.dirs() {
			cand := filepath.Join(d, ".build-id", h[:2], h[2:]+".debug")
			if try(cand, false) {
				return cand, nil
			}
		}
	}
	// A debuglink is a file name: one with a directory, or "." or "..",
	// would lead out of the directories searched.
	if hasLink && !strings.ContainsRune(link, '/') && link != "." && link != ".." {
		abs, err := filepath.Abs(path)
		if err != nil {
			abs = path
		}
		dir := filepath.Dir(abs)
		cands := []string{filepath.Join(dir, link), filepath.Join(dir, ".debug", link)}
		for _, d := range opts.dirs() {
			cands = append(cands, filepath.Join(d, dir, link))
		}
		for _, cand := range cands {
			if same(cand, abs) {
				continue
			}
			if try(cand, len(id) == 0) {
				return cand, nil
			}
		}
	}
	if opts.Fetcher != nil && len(id) > 0 {
		cand, err := opts.Fetcher.Fetch(ctx, id)
		if err == nil {
			if verr := verify(cand, id, false, 0); verr != nil {
				return "", fmt.Errorf("%s: %w", verr.Error(), ErrMismatch)
			}
			return cand, nil
		}
		if len(mismatches) == 0 {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("debuginfo: %s: %w: %w", path, ErrNotFound, err)
			}
			return "", fmt.Errorf("debuginfo: %s: %w", path, err)
		}
	}
	if len(mismatches) > 0 {
		return "", fmt.Errorf("%s: %w", strings.Join(mismatches, "; "), ErrMismatch)
	}
	where := "searched " + strings.Join(searched, ", ")
	if len(searched) == 0 {
		where = "no build-id and no debuglink to search by"
	}
	if opts.Fetcher == nil {
		where += "; no debuginfod server asked (none given: DEBUGINFOD_URLS)"
	}
	if len(special) > 0 {
		return "", fmt.Errorf("debuginfo: %s (build-id %x): %w (%s; skipped, not regular files: %s)", path, id, ErrNotFound, where, strings.Join(special, ", "))
	}
	return "", fmt.Errorf("debuginfo: %s (build-id %x): %w (%s)", path, id, ErrNotFound, where)
}

func same(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// verify checks that the debug file at cand belongs to the object: same
// build-id when the object has one, else (checkCRC) the debuglink CRC.
func verify(cand string, id []byte, checkCRC bool, crc uint32) error {
	df, fd, err := regfile.OpenELF(cand)
	if err != nil {
		return err
	}
	defer fd.Close()
	if len(id) > 0 {
		got := BuildID(df)
		if !bytes.Equal(got, id) {
			return fmt.Errorf("%s has build-id %x, want %x", cand, got, id)
		}
	}
	if checkCRC {
		got, err := fileCRC(cand)
		if err != nil {
			return fmt.Errorf("%s: %v", cand, err)
		}
		if got != crc {
			return fmt.Errorf("%s has CRC %#08x, debuglink wants %#08x", cand, got, crc)
		}
	}
	return nil
}

func fileCRC(path string) (uint32, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, f); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}
