"""Course grading: a student's agent run in a sandbox, graded against the optimum, with its report."""
