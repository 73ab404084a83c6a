package procfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// maxIov is the kernel's IOV_MAX: the most remote ranges one
// process_vm_readv call takes.
const maxIov = 1024

// ReadVectored reads the remote ranges at addrs, size bytes each, into
// consecutive size-byte slots of buf (len(buf) >= len(addrs)*size) with
// as few process_vm_readv calls as possible, and returns how many of the
// ranges, from the first, were read whole: the transfer stops at the first
// range that is not mapped. process_vm_readv needs no ptrace stop, nor the
// tracer's thread.
func ReadVectored(pid int, buf []byte, addrs []uint64, size int) (int, error) {
	done := 0
	for done < len(addrs) {
		k := min(len(addrs)-done, maxIov)
		remote := make([]unix.RemoteIovec, k)
		for i := range remote {
			remote[i] = unix.RemoteIovec{Base: uintptr(addrs[done+i]), Len: size}
		}
		local := []unix.Iovec{{Base: &buf[done*size]}}
		local[0].SetLen(k * size)
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err != nil {
			if done > 0 && err == unix.EFAULT {
				return done, nil
			}
			return done, err
		}
		got := n / size
		done += got
		if got < k {
			break
		}
	}
	return done, nil
}

// ReadMemory fills buf with process pid's memory at addr, in one
// process_vm_readv call; a short read is an error.
func ReadMemory(pid int, buf []byte, addr uint64) error {
	if len(buf) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return fmt.Errorf("short read (%d of %d bytes)", n, len(buf))
	}
	return nil
}
