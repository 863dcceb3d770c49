package scenario

import (
	"errors"
	"testing"
	"time"
)

func TestUnits(t *testing.T) {
	rates := []struct {
		in   string
		want Rate
	}{
		{"100Gbps", 100e9}, {"25G", 25e9}, {"2.5Gbps", 2.5e9}, {"40 Mbps", 40e6}, {"1k", 1000},
		{"1Kbps", 1000}, {"7bps", 7}, {"1Tbps", 1e12}, {"0", 0},
	}
	for _, tt := range rates {
		got, err := ParseRate(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	sizes := []struct {
		in   string
		want Size
	}{
		{"125MB", 125e6}, {"62.5MB", 62.5e6}, {"64KB", 64000}, {"64KiB", 65536}, {"1MiB", 1 << 20},
		{"1.5KiB", 1536}, {"9000B", 9000}, {"2GB", 2e9}, {"1GiB", 1 << 30}, {"0", 0},
	}
	for _, tt := range sizes {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	durs := []struct {
		in   string
		want time.Duration
	}{
		{"10ms", 10 * time.Millisecond}, {"5us", 5 * time.Microsecond}, {"5µs", 5 * time.Microsecond},
		{"1.5s", 1500 * time.Millisecond}, {"0.1s", 100 * time.Millisecond}, {"7ns", 7}, {"0", 0},
	}
	for _, tt := range durs {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "G", "10", "10 GB", "1.5B", "0.5ns", "1e9bps", "1.Gbps", "+1Gbps", "10Gbit", "5m", "99999999999999TB"} {
		_, e1 := ParseRate(bad)
		_, e2 := ParseSize(bad)
		_, e3 := ParseDuration(bad)
		if e1 == nil && e2 == nil && e3 == nil {
			t.Errorf("%q parsed as some quantity", bad)
		}
	}
	if _, err := ParseRate("10 GB"); err == nil {
		t.Errorf("ParseRate(10 GB) accepted a size unit")
	}
	if _, err := ParseDuration("-1ms"); !errors.Is(err, ErrNegative) {
		t.Errorf("ParseDuration(-1ms) = %v, want ErrNegative", err)
	}
}

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{Rate(100e9).String(), "100Gbps"}, {Rate(2.5e9).String(), "2500Mbps"}, {Size(125e6).String(), "125MB"},
		{Size(65536).String(), "64KiB"}, {Size(62.5e6).String(), "62500KB"}, {Size(7).String(), "7B"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestCDF(t *testing.T) {
	c := &CDF{Size: []float64{0, 100, 200}, P: []float64{0, 0.5, 1}}
	if m := c.Mean(); m != 100 {
		t.Errorf("Mean = %v, want 100", m)
	}
	for _, tt := range []struct{ u, want float64 }{{0, 0}, {0.25, 50}, {0.5, 100}, {0.75, 150}, {0.999999, 199.9998}} {
		if got := c.Sample(tt.u); got < tt.want-1e-3 || got > tt.want+1e-3 {
			t.Errorf("Sample(%v) = %v, want %v", tt.u, got, tt.want)
		}
	}
}
