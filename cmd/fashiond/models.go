package main

import "errors"

// cmdModels implements `fashiond models` (owned by the model-repository work).
func cmdModels(args []string) error {
	return errors.New("fashiond models: not built yet")
}
