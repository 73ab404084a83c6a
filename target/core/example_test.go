package core_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ompd-go/ompd/target/core"
)

// Open a core file of an OpenMP program and print, for every thread, the
// runtime's global thread id (__kmp_gtid, a thread-local variable of
// libomp.so). The libraries are looked for under a copy of the machine the
// core comes from.
func ExampleOpen() {
	c, err := core.Open(context.Background(), "prog", "prog.core", core.WithSysroot("sysroot"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, w := range c.Warnings() {
		log.Print(w)
	}
	threads, err := c.Threads()
	if err != nil {
		log.Fatal(err)
	}
	for _, th := range threads {
		addr, err := c.LookupThreadLocal(th.ID, "__kmp_gtid")
		if err != nil {
			fmt.Printf("thread %d: %v\n", th.ID, err)
			continue
		}
		var b [4]byte
		if err := c.ReadMemory(b[:], addr); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("thread %d: gtid %d\n", th.ID, int32(c.ByteOrder().Uint32(b[:])))
	}
}

// List the objects a core was loaded with, as a debugger shows them.
func ExampleCore_Objects() {
	c, err := core.Open(context.Background(), "prog", "prog.core")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	objs, err := c.Objects()
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range objs {
		fmt.Printf("%#x %s build-id %x\n", o.Bias, o.Path, o.BuildID)
	}
}
