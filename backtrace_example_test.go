package ompd_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/target/core"
)

// Print every OpenMP thread's stack from a core file, gdb-style, with the
// task each frame belongs to and the runtime's frames folded into the call
// the program made.
func ExampleThread_Backtrace() {
	c, err := core.Open(context.Background(), "prog", "prog.core")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	as, err := ompd.Open(c)
	if err != nil {
		log.Fatal(err)
	}
	threads, err := ompd.Collect(as.Threads())
	if err != nil {
		log.Fatal(err)
	}
	for _, th := range threads {
		bt, err := th.Backtrace(context.Background(), ompd.WithFoldRuntime())
		if err != nil {
			fmt.Println(th, err)
			continue
		}
		fmt.Println(th)
		for _, f := range bt.Frames {
			if tk, ok := bt.Task(f); ok {
				fmt.Printf("%v   [%v, level %d %s]\n", f, tk.Task, tk.Level, tk.Wait)
			} else {
				fmt.Println(f)
			}
		}
		if bt.End != nil {
			fmt.Println("  stopped:", bt.End)
		}
	}
}
