package core

import (
	"os"

	"golang.org/x/sys/unix"
)

// freeSpace returns the bytes an unprivileged writer may still add to the
// file system holding f, or 0 when it cannot tell.
func freeSpace(f *os.File) int64 {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0
	}
	free := st.Bavail * uint64(st.Bsize)
	if free > 1<<62 {
		return 1 << 62
	}
	return int64(free)
}
