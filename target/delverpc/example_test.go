package delverpc_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/target/delverpc"
)

// Connect to the headless dlv a user debugs an OpenMP program in, print the
// OpenMP threads at the user's stop, and follow the user's next stop.
func Example() {
	ctx := context.Background()
	t, err := delverpc.Dial(ctx, "127.0.0.1:4040")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closes the connection only: the session goes on
	as, err := ompd.Open(t)
	if err != nil {
		log.Fatal(err)
	}
	defer as.Close()
	threads, err := ompd.Collect(as.Threads())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(threads), "OpenMP threads")

	// ... the user continues in dlv and stops again ...
	if changed, err := t.Update(ctx); err == nil && changed {
		as.Refresh()
	}
}
