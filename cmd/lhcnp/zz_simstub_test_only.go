//go:build lhcnpstub

package main

import (
	"context"
	"io"
)

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error { return nil }
