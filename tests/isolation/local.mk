# tests/isolation: compartment isolation tests (issue 3)
