# tests: see Makefile.am
