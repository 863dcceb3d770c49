//go:build !linux

package netsim

import "time"

func cpuTime() time.Duration { return 0 }
