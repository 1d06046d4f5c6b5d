package ablate

import (
	"strings"
	"testing"
)

// TestMpirunError: a training under mpirun fails with rank 0's line
// followed by mpirun's banners; the line kept is rank 0's, or, when no
// rank said anything (mpirun refused to start), mpirun's first line.
func TestMpirunError(t *testing.T) {
	banner := "--------------------------------------------------------------------------\n"
	rank0 := "gptg train: small.toml: train.grad_accum: --distributed on 3 ranks: not a multiple\n" + banner +
		"Primary job  terminated normally, but 1 process returned\na non-zero exit code. Per user-direction, the job has been aborted.\n" + banner
	if got := mpirunError(strings.Split(strings.TrimSpace(rank0), "\n")); !strings.HasPrefix(got, "gptg train: small.toml: train.grad_accum") {
		t.Errorf("rank 0's failure: got %q", got)
	}
	slots := banner + "There are not enough slots available in the system to satisfy the 3\nslots that were requested by the application:\n" + banner
	if got := mpirunError(strings.Split(strings.TrimSpace(slots), "\n")); got != "There are not enough slots available in the system to satisfy the 3" {
		t.Errorf("mpirun's refusal: got %q", got)
	}
}
