// Package regfile opens the files that this module reads by path (cores,
// executables, libraries, separate debug files) so that a path naming a
// special file cannot hang the caller or feed it endless data.
//
// A core or an object can name any path of the debugging machine: a FIFO
// there would block an ordinary open until a writer comes, and a character
// device such as /dev/zero never ends. Open therefore opens without
// blocking (O_NONBLOCK, which has no effect on regular files) and refuses
// anything that fstat does not call a regular file, symbolic links being
// followed.
package regfile

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNotRegular is matched by the error of Open and OpenELF for a path that
// names a directory, FIFO, socket or device instead of a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Open opens the regular file at path for reading. A path that names
// anything else gives an *fs.PathError matching ErrNotRegular and saying
// what the path names.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if m := st.Mode(); !m.IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(m))}
	}
	return f, nil
}

// kind names the type of a file that is not regular.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.String()
}

// ErrNotELF is matched by the error of OpenELF for a file that does not
// start with the ELF magic number (an empty file, a text file).
var ErrNotELF = errors.New("not an ELF file")

// OpenELF opens the regular file at path as an ELF file. The caller closes
// the returned *os.File (not the *elf.File, whose Close does nothing for a
// file it did not open itself) once done with both. A file that is not ELF
// gives an error matching ErrNotELF, one too short for its ELF header an
// error saying so (never a bare io.EOF).
func OpenELF(path string) (*elf.File, *os.File, error) {
	f, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		err = elfError(f, err)
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ef, f, nil
}

// elfError says why debug/elf refused f, in place of the io.EOF it gives
// for a file shorter than an ELF header.
func elfError(f *os.File, err error) error {
	var magic [4]byte
	if n, _ := f.ReadAt(magic[:], 0); n < 4 || string(magic[:]) != elf.ELFMAG {
		size := int64(-1)
		if st, serr := f.Stat(); serr == nil {
			size = st.Size()
		}
		return fmt.Errorf("%w (%d bytes, starting %q)", ErrNotELF, size, magic[:n])
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("ELF headers truncated")
	}
	return err
}

// maxLinks bounds the symbolic links InRoot follows for one name, as
// Linux's MAXSYMLINKS does.
const maxLinks = 40

// InRoot returns the path of this machine that name, an absolute path of
// another machine, stands for under root (a sysroot), never one outside
// root: ".." components stop at root, and symbolic links met on the way
// are followed with root as "/" (an absolute link target is taken under
// root, as in a chroot). A component that does not exist ends the
// resolution and the rest of name is appended as it is, cleaned, so that
// opening the result fails with the name the caller expects. It fails only
// for a loop of symbolic links.
func InRoot(root, name string) (string, error) {
	root = filepath.Clean(root)
	rest := strings.Split(name, "/")
	var done []string // resolved components under root
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := filepath.Join(root, filepath.Join(append(done, c)...))
		st, err := os.Lstat(cur)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			if err != nil {
				// Nothing to resolve below a missing component.
				return filepath.Join(root, filepath.Clean("/"+strings.Join(append(done, rest...), "/"))), nil
			}
			continue
		}
		if links++; links > maxLinks {
			return "", &fs.PathError{Op: "resolve", Path: name, Err: fmt.Errorf("more than %d symbolic links under %s", maxLinks, root)}
		}
		target, err := os.Readlink(cur)
		if err != nil {
			return "", &fs.PathError{Op: "resolve", Path: name, Err: err}
		}
		if filepath.IsAbs(target) {
			done = done[:0]
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return filepath.Join(root, filepath.Join(done...)), nil
}
