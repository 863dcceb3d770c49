package lab

import (
	"testing"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
