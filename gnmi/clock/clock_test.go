package clock

import (
	"testing"
	"time"
)

func TestFakeTimer(t *testing.T) {
	start := time.Unix(1000, 0)
	f := NewFake(start)
	tm := f.NewTimer(10 * time.Second)
	if got := f.Armed(); got != 1 {
		t.Fatalf("Armed() = %d, want 1", got)
	}
	f.Advance(9 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("timer fired early")
	default:
	}
	f.Advance(time.Second)
	select {
	case got := <-tm.C():
		if want := start.Add(10 * time.Second); !got.Equal(want) {
			t.Errorf("fired at %v, want %v", got, want)
		}
	default:
		t.Fatal("timer did not fire")
	}
	if f.Armed() != 0 {
		t.Errorf("fired timer still armed")
	}
	tm.Reset(time.Second)
	if !tm.Stop() {
		t.Errorf("Stop() = false on an armed timer")
	}
	done := make(chan struct{})
	close(done)
	if f.WaitArmed(done, 1) {
		t.Errorf("WaitArmed reported an armed timer after Stop")
	}
}
