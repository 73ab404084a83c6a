// Command gen writes docs/ompd-api.md, the table of OMPD's functions and
// their Go names (see internal/apimap). go generate runs it in
// internal/apimap.
package main

import (
	"fmt"
	"os"

	"github.com/ompd-go/ompd/internal/apimap"
)

func main() {
	if err := apimap.Generate("../.."); err != nil {
		fmt.Fprintln(os.Stderr, "apimap:", err)
		os.Exit(1)
	}
}
