//go:build mergeonly

package main

import (
	"context"
	"errors"
)

// merge-child (built with -tags mergeonly) runs our merge paths only: without iceberg-go's table
// package it starts without that package's init.
func icebergRewrite(context.Context, inputSet, string) (childResult, error) {
	return childResult{}, errors.New("merge-child has no iceberg-go contender: run merge-bench")
}

func checkSchema() error { return nil }
