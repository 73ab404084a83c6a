package procfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// maxIov is the kernel's IOV_MAX: the most ranges, remote or local, one
// process_vm_readv call takes.
const maxIov = 1024

// pageShift is log2 of the smallest page size of the architectures
// ompd-go reads live (4 KiB).
const pageShift = 12

// gapSink receives the bytes between ranges read as one: nobody reads
// it, so concurrent calls may share it.
var gapSink [2 << pageShift]byte

// ReadVectored reads the remote ranges at addrs, size bytes each, into
// consecutive size-byte slots of buf (len(buf) >= len(addrs)*size) with
// as few process_vm_readv calls as possible, and returns how many of the
// ranges, from the first, were read whole: the transfer stops at the first
// range that is not mapped. process_vm_readv needs no ptrace stop, nor the
// tracer's thread.
//
// The kernel pins every page of each remote range it is given, once per
// range: the implicit tasks of a team, a few hundred bytes each and next
// to each other, cost one pin per task as separate ranges. A range that
// starts after the previous one ends, on the page where that one ends or
// the next, joins it as one remote range, the bytes between them read into
// a sink: such a union touches no page the ranges do not, so it reads (or
// fails on) exactly what they do.
func ReadVectored(pid int, buf []byte, addrs []uint64, size int) (int, error) {
	if len(addrs) == 0 || size <= 0 {
		return 0, nil
	}
	done := 0
	k := min(len(addrs), maxIov)
	v := vec{
		remote: make([]unix.RemoteIovec, 0, k),
		local:  make([]unix.Iovec, 0, min(2*k, maxIov)),
		ends:   make([]int, 0, k),
	}
	for done < len(addrs) {
		v.plan(buf, addrs, done, size)
		n, err := unix.ProcessVMReadv(pid, v.local, v.remote, 0)
		if err != nil {
			if done > 0 && err == unix.EFAULT {
				return done, nil
			}
			return done, err
		}
		got := 0
		for got < len(v.ends) && v.ends[got] <= n {
			got++
		}
		done += got
		if got < len(v.ends) {
			break
		}
	}
	return done, nil
}

// vec is one process_vm_readv call of ReadVectored.
type vec struct {
	remote []unix.RemoteIovec
	local  []unix.Iovec // ends with a slot of buf, once not empty
	ends   []int        // where each range ends in the local stream
}

// plan fills v with the ranges of addrs from the first, as many as one
// call takes.
func (v *vec) plan(buf []byte, addrs []uint64, first, size int) {
	v.remote, v.local, v.ends = v.remote[:0], v.local[:0], v.ends[:0]
	stream := 0
	var end uint64 // where the last range ends in the process
	for i := first; i < len(addrs); i++ {
		a := addrs[i]
		gap := -1
		if len(v.remote) > 0 && a >= end && a>>pageShift <= (end-1)>>pageShift+1 {
			gap = int(a - end)
			if gap > 0 {
				if len(v.local)+2 > maxIov {
					gap = -1
				} else {
					sink := unix.Iovec{Base: &gapSink[0]}
					sink.SetLen(gap)
					v.local = append(v.local, sink, unix.Iovec{Base: &buf[i*size]})
				}
			}
		}
		if gap < 0 {
			if len(v.remote) == maxIov {
				return
			}
			v.remote = append(v.remote, unix.RemoteIovec{Base: uintptr(a)})
			if len(v.local) == 0 {
				v.local = append(v.local, unix.Iovec{Base: &buf[i*size]})
			}
			gap = 0
		}
		v.remote[len(v.remote)-1].Len += gap + size
		l := &v.local[len(v.local)-1]
		l.SetLen(int(l.Len) + size)
		stream += gap + size
		v.ends = append(v.ends, stream)
		end = a + uint64(size)
	}
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
