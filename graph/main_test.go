package graph

import (
	"testing"

	"github.com/gptg/gptg/graph/internal/graphtest"
)

// TestMain runs the tests on the kernels GPTG_TEST_KERNELS names (see graphtest.Main).
func TestMain(m *testing.M) { graphtest.Main(m) }
