# tests/hardening: one program per bug class, under each profile (issue 6)
