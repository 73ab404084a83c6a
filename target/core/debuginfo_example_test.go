package core_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ompd-go/ompd/target/core"
	"github.com/ompd-go/ompd/target/debuginfod"
)

// Open a core of a program whose OpenMP runtime is a distribution's
// stripped libomp: its symbols come from its separate debug file, under a
// debug directory or from the debuginfod servers DEBUGINFOD_URLS names.
func ExampleWithDebuginfodFromEnv() {
	c, err := core.Open(context.Background(), "prog", "prog.core",
		core.WithDebugDirs("/usr/lib/debug", "symbols"),
		core.WithDebuginfodFromEnv())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	objs, err := c.Objects()
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range objs {
		switch {
		case o.DebugErr != nil:
			fmt.Printf("%s: no debug information: %v\n", o.Name, o.DebugErr)
		case o.DebugFile != "":
			fmt.Printf("%s: debug information from %s\n", o.Name, o.DebugFile)
		}
	}
}

// Name a debuginfod server directly, with a cache of its own.
func ExampleWithDebuginfod() {
	client := &debuginfod.Client{
		URLs:     []string{"http://localhost:8002"},
		CacheDir: "debuginfod-cache",
		Timeout:  30 * time.Second,
	}
	c, err := core.Open(context.Background(), "prog", "prog.core", core.WithDebuginfod(client))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}
