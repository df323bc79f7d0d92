// idl-parse: parses varlink interface files with the official Go binding's IDL parser
// (github.com/varlink/go/varlink/idl), as an independent check of memstrack's IDL files.
// usage: idl-parse FILE...; exit 1 on the first file it rejects.
package main

import (
	"fmt"
	"os"

	"github.com/varlink/go/varlink/idl"
)

func main() {
	for _, name := range os.Args[1:] {
		text, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		parsed, err := idl.New(string(text))
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
		fmt.Printf("%s: %s, %d methods, %d errors\n", name, parsed.Name, len(parsed.Methods), len(parsed.Errors))
	}
}
