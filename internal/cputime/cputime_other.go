//go:build !linux

package cputime

import "time"

func process() time.Duration { return 0 }

func peakRSS() int64 { return 0 }

func thread() time.Duration { return 0 }
