package main

import "errors"

// cmdBench implements `fashiond bench` (owned by the models/bench work).
func cmdBench(args []string) error {
	return errors.New("fashiond bench: not built yet")
}
