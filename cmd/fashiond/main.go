// Command fashiond is the fashion image and video generation service: API,
// worker and operator commands in one binary.
package main

import (
	"fmt"
	"os"
)

var version = "dev"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fashiond serve|api|worker|keys|models|bench|version [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "version":
		fmt.Println("fashiond", version)
	default:
		fmt.Fprintf(os.Stderr, "fashiond: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}
